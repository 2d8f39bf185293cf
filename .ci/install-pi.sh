#!/usr/bin/env bash
# Install pi 1.6.0 (npm @earendil-works/pi-coding-agent) for the differential tests
# (tests/differential), outside the repository, in ${XDG_CACHE_HOME:-$HOME/.cache}/sessionstore/pi-1.6.0,
# where the tests look for it by default. Installs Debian's nodejs and npm when they are missing.
# Does nothing when that pi is already installed; prints nothing on success.
#
#   .ci/install-pi.sh           install (a developer runs this once)
#   source .ci/install-pi.sh    install, and export SESSIONSTORE_PI_DIR (its node_modules directory)
set -euo pipefail

pi_install() {
  local version=1.6.0 package=@earendil-works/pi-coding-agent
  local prefix="${XDG_CACHE_HOME:-$HOME/.cache}/sessionstore/pi-$version"
  # Written after a complete install, so an interrupted one is redone rather than used.
  local done_marker="$prefix/.installed-$version"
  if [ ! -f "$done_marker" ] || [ ! -f "$prefix/node_modules/$package/package.json" ]; then
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
      echo "installing Debian's nodejs and npm" >&2
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq >&2
      apt-get install -y -qq nodejs npm >/dev/null
    fi
    rm -rf "$prefix"
    mkdir -p "$prefix"
    # --ignore-scripts: pi's install scripts fetch optional binaries the tests do not use.
    npm install --prefix "$prefix" --ignore-scripts --no-audit --no-fund --no-progress --loglevel=error \
      "$package@$version" >/dev/null
    touch "$done_marker"
  fi
  export SESSIONSTORE_PI_DIR="$prefix/node_modules"
}

pi_install
