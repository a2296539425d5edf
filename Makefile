# Two entry points: `make demo` (the main job) and `make test` (the test suite). Both create the
# virtual environment when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test venv nagini postgres litellm shelltools bench clean

venv: $(VENV)/.stamp

$(VENV)/.stamp: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[all]'
	touch $@

nagini:
	./scripts/setup_nagini.sh

postgres:
	./scripts/setup_postgres.sh

litellm:
	./scripts/setup_litellm.sh

shelltools:
	./scripts/setup_shell_tools.sh

demo: venv
	$(BIN)/agentguard demo

test: venv nagini postgres litellm shelltools
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .nagini-venv .litellm-venv demo-output
