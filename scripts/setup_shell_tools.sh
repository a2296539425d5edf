#!/usr/bin/env bash
# Provides what the shell differential tests need (tests/policies/shell/test_analysis_differential.py, issue 25):
# strace (the ground truth of what bash really runs and opens) and util-linux's unshare (a network namespace),
# installed with apt-get when missing. Quick when both are present. Runs as root in CI with no stdin. When it
# cannot install (no apt-get, not root) it says why and exits 0 outside CI (the differential tests then skip
# with that reason), non-zero when CI is set.
set -euo pipefail

say() { echo "setup_shell_tools: $*"; }
give_up() {
  say "$*"
  if [ -n "${CI:-}" ]; then say "CI is set: failing"; exit 1; fi
  say "skipping (the differential tests will skip; set CI=1 to make this fatal)"; exit 0
}

missing=()
command -v strace >/dev/null 2>&1 || missing+=(strace)
command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
[ -x /usr/bin/bash ] && [ -x /usr/bin/dash ] || missing+=(bash dash)
if [ ${#missing[@]} -eq 0 ]; then
  say "strace and unshare present"
  exit 0
fi
[ "$(id -u)" = 0 ] || give_up "not root: cannot install ${missing[*]}"
command -v apt-get >/dev/null 2>&1 || give_up "apt-get not found: cannot install ${missing[*]}"
say "installing ${missing[*]} (apt-get)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || give_up "apt-get update failed"
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || give_up "apt-get install ${missing[*]} failed"
say "installed: $(strace -V | head -1)"
