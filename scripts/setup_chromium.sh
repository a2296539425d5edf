#!/usr/bin/env bash
# Installs Debian's chromium (for the headless dashboard test) and wrk (load benchmark). Never downloads a
# browser from anywhere else. Quick when already installed; outside CI a failure only prints why.
set -euo pipefail
say() { echo "setup_chromium: $*"; }
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  say "cannot install ${missing[*]}: need root and apt-get (the dashboard test will skip)"
  [ -n "${CI:-}" ] && exit 1
  exit 0
fi
say "installing ${missing[*]} (apt-get)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null || true
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" fonts-dejavu-core >/dev/null; then
  say "apt-get install ${missing[*]} failed"
  [ -n "${CI:-}" ] && exit 1
  exit 0
fi
