#!/usr/bin/env bash
# Creates the separate virtual environment the Nagini verifier needs, at <repo>/.nagini-venv.
# A thin wrapper: the logic ships inside the package (agentguard.policies.nagini_setup), so a pip user
# runs the same thing as `agentguard setup nagini`. Nagini 1.2.0 pins pytest==7.0.0, mypy==0.900 and
# z3-solver==4.8.7, which clash with the project's own environment; it also needs Java (>= 11; a
# headless JRE is installed with apt-get when java is missing). Idempotent.
# It runs in the project environment (.venv, which `make test` makes first), else in $PYTHON / python3.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
[ -x "$PY" ] || PY=${PYTHON:-python3}
PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" exec "$PY" -m agentguard setup nagini --venv .nagini-venv \
  ${NAGINI_PYTHON:+--python "$NAGINI_PYTHON"}
