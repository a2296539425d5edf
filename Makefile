# Two entry points: `make demo` (the main job) and `make test` (the test suite). Both create the
# virtual environment when it is missing: `make demo` with the plain install only, `make test` with every extra.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test venv nagini postgres litellm shelltools bench clean

venv: $(VENV)/.stamp

# The full environment (every extra: what `make test` needs).
$(VENV)/.stamp: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[all]'
	touch $@

# What `make demo` needs: the plain install (no extra). A full environment (.stamp) already has it; a later
# `make test` adds the extras to the same .venv.
$(VENV)/.stamp-demo: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	if [ -f $(VENV)/.stamp ] && [ $(VENV)/.stamp -nt pyproject.toml ]; then :; else $(BIN)/pip install -q -e .; fi
	touch $@

nagini:
	./scripts/setup_nagini.sh

postgres:
	./scripts/setup_postgres.sh

litellm:
	./scripts/setup_litellm.sh

shelltools:
	./scripts/setup_shell_tools.sh

demo: $(VENV)/.stamp-demo
	$(BIN)/agentguard demo

# PYTEST_ARGS narrows a run: make test PYTEST_ARGS='-k readme' (CI runs everything: .ci/run calls plain make test).
PYTEST_ARGS ?=

test: venv nagini postgres litellm shelltools
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .nagini-venv .litellm-venv demo-output bench-output
