#!/usr/bin/env bash
# Start a private PostgreSQL cluster for the tests: `source .ci/pg-cluster.sh start` exports
# SESSIONSTORE_TEST_PG_URL; `.ci/pg-cluster.sh stop DIR` stops it. Installs Debian's postgresql
# when no server binaries are found. Runs the server as the 'postgres' user when we are root
# (initdb refuses to run as root).
set -euo pipefail

pg_bindir() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$dir" ] && command -v pg_config >/dev/null 2>&1; then dir=$(pg_config --bindir); fi
  echo "$dir"
}

pg_start() {
  local bindir
  bindir=$(pg_bindir)
  if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
    echo "installing Debian's postgresql" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
    bindir=$(pg_bindir)
  fi
  local run=()
  if [ "$(id -u)" = "0" ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    run=(runuser -u postgres --)
  fi
  PG_DIR=$(mktemp -d /tmp/sessionstore-pg.XXXXXX)
  chmod 755 "$PG_DIR"
  [ "$(id -u)" = "0" ] && chown postgres "$PG_DIR"
  local port
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "${run[@]}" "$bindir/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 --no-sync >/dev/null
  "${run[@]}" "$bindir/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w -o \
    "-p $port -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
  export PG_DIR PG_BINDIR="$bindir"
  export SESSIONSTORE_TEST_PG_URL="postgresql://postgres@127.0.0.1:$port/postgres"
  echo "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port ($PG_DIR)" >&2
}

pg_stop() {
  local dir="${1:-${PG_DIR:-}}" bindir
  [ -n "$dir" ] && [ -d "$dir/data" ] || return 0
  bindir=$(pg_bindir)
  if [ "$(id -u)" = "0" ]; then
    runuser -u postgres -- "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  else
    "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  start) pg_start ;;
  stop) pg_stop "${2:-}" ;;
  *) echo "usage: source .ci/pg-cluster.sh start | .ci/pg-cluster.sh stop DIR" >&2; return 2 2>/dev/null || exit 2 ;;
esac
