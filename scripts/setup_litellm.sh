#!/usr/bin/env bash
# Creates the separate virtual environment the LiteLLM end-to-end test needs, at <repo>/.litellm-venv.
# LiteLLM pins openai<3 and pulls boto3, tokenizers and aiohttp, which clash with the project's own
# environment (openai 3.x for the Agents SDK), so the LiteLLM proxy runs out of process from its own
# venv (tests/integrations/test_integrations_litellm_proxy.py skips, saying so, when the venv is absent).
# Idempotent: when the venv already runs `litellm --version` at the pinned version it returns at once.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.litellm-venv
LITELLM_VERSION=${LITELLM_VERSION:-1.106.2}
PY=${LITELLM_PYTHON:-python3}

if [ -x "$VENV/bin/python" ] && [ -f "$VENV/.stamp-$LITELLM_VERSION" ] \
   && "$VENV/bin/python" -c "import litellm.proxy.proxy_server" >/dev/null 2>&1; then
  exit 0
fi

echo "setup_litellm: creating $VENV with litellm[proxy]==$LITELLM_VERSION (one-off, a few minutes)" >&2
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "litellm[proxy]==$LITELLM_VERSION"
"$VENV/bin/python" -c "import litellm.proxy.proxy_server" 
touch "$VENV/.stamp-$LITELLM_VERSION"
