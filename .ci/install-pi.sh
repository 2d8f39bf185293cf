#!/usr/bin/env bash
# Install pi 1.6.0 (npm @earendil-works/pi-coding-agent) for the differential tests
# (tests/differential), outside the repository, in ${XDG_CACHE_HOME:-$HOME/.cache}/sessionstore/pi-1.6.0,
# where the tests look for it by default. Installs Debian's nodejs and npm when they are missing.
# Does nothing when that pi is already installed; prints nothing then.
#
#   .ci/install-pi.sh            install (a developer runs this once)
#   source .ci/install-pi.sh     install, and export SESSIONSTORE_PI_DIR (its node_modules directory)
#   .ci/install-pi.sh --if-node  the README's test command: install pi only where node and npm are already
#                                on the PATH, and never fail (without them, or when npm cannot install,
#                                it says so on stderr and the differential tests skip, naming this script)
set -euo pipefail

pi_install() {
  local version=1.6.0 package=@earendil-works/pi-coding-agent if_node=false
  [ "${1:-}" = "--if-node" ] && if_node=true
  local prefix="${XDG_CACHE_HOME:-$HOME/.cache}/sessionstore/pi-$version"
  # Written after a complete install, so an interrupted one is redone rather than used.
  local done_marker="$prefix/.installed-$version"
  if [ ! -f "$done_marker" ] || [ ! -f "$prefix/node_modules/$package/package.json" ]; then
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
      if $if_node; then
        echo "node or npm is not on the PATH: the differential tests (pi $version's own code) will skip;" \
          ".ci/install-pi.sh installs Debian's nodejs, npm and pi" >&2
        return 0
      fi
      echo "installing Debian's nodejs and npm" >&2
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq >&2
      apt-get install -y -qq nodejs npm >/dev/null
    fi
    $if_node && echo "installing pi $version (npm $package) into $prefix for the differential tests" >&2
    rm -rf "$prefix"
    mkdir -p "$prefix"
    # --ignore-scripts: pi's install scripts fetch optional binaries the tests do not use. --prefer-offline:
    # the version is pinned, so what npm has cached of it is current (and a machine without the registry
    # installs from its cache instead of waiting on every package).
    if ! npm install --prefix "$prefix" --prefer-offline --ignore-scripts --no-audit --no-fund --no-progress --loglevel=error \
      "$package@$version" >/dev/null; then
      rm -rf "$prefix"
      if $if_node; then
        echo "npm could not install pi $version: the differential tests will skip; run .ci/install-pi.sh again" >&2
        return 0
      fi
      echo "npm could not install $package@$version" >&2
      return 1
    fi
    touch "$done_marker"
  fi
  export SESSIONSTORE_PI_DIR="$prefix/node_modules"
}

pi_install "$@"
