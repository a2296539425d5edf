#!/usr/bin/env bash
# Creates the separate virtual environment the Nagini verifier needs, at <repo>/.nagini-venv.
# Nagini 1.2.0 pins pytest==7.0.0, mypy==0.900 and z3-solver==4.8.7, which clash with the project's own
# environment, so agentguard runs it out of process (agentguard.policies.nagini). It also needs Java
# (>= 11; CI machines have OpenJDK 17): when `java` is missing we install a headless JRE with apt-get.
# Idempotent: when the venv already imports nagini_translation at the pinned version it returns at once.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.nagini-venv
NAGINI_VERSION=1.2.0
PY=${NAGINI_PYTHON:-python3}

if ! command -v java >/dev/null 2>&1; then
  echo "setup_nagini: java not found, installing a JRE" >&2
  if command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless) >&2 || {
      echo "setup_nagini: could not install Java; Nagini verification will be unavailable" >&2; exit 1; }
  else
    echo "setup_nagini: no java and no apt-get; install Java 11+ by hand" >&2; exit 1
  fi
fi

if [ -x "$VENV/bin/python" ] && [ -f "$VENV/.stamp-$NAGINI_VERSION" ] \
   && "$VENV/bin/python" -c "import nagini_translation, nagini_contracts" >/dev/null 2>&1; then
  exit 0
fi

echo "setup_nagini: creating $VENV with nagini==$NAGINI_VERSION (one-off, a few minutes)" >&2
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q "nagini==$NAGINI_VERSION" 2>&1 | grep -v "is ignored: it is neither a file nor a directory" >&2 || true
"$VENV/bin/python" -c "import nagini_translation.main, nagini_contracts.contracts" >&2
touch "$VENV/.stamp-$NAGINI_VERSION"
echo "setup_nagini: ready ($("$VENV/bin/nagini" --help >/dev/null 2>&1 && echo nagini CLI ok))" >&2
