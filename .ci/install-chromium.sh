#!/usr/bin/env bash
# Install Debian's chromium when no chromium is on the PATH, for the browser tests of export --html
# (tests/test_html_export.py opens the exported page in a headless chromium). Uses sudo when not root.
# Does nothing, and prints nothing, when chromium or chromium-browser is already there.
set -euo pipefail

if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  echo "installing Debian's chromium" >&2
  as_root=(env DEBIAN_FRONTEND=noninteractive)
  [ "$(id -u)" = "0" ] || as_root=(sudo env DEBIAN_FRONTEND=noninteractive)
  "${as_root[@]}" apt-get update -qq >&2
  "${as_root[@]}" apt-get install -y -qq chromium >/dev/null
fi
