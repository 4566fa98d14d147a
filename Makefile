# Two commands a newcomer needs: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck bench schemas editors vsix clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/make_demo.py examples/demo
	@echo; echo '$$ memory-ls check   (both stores of the sample project)'
	cd examples/demo/project && PI_CODING_AGENT_DIR=../agent ../../../$(VENV)/bin/memory-ls check || echo "(check exits 1: it found warnings)"
	@echo; echo '$$ memory-ls doctor'
	cd examples/demo/project && PI_CODING_AGENT_DIR=../agent ../../../$(VENV)/bin/memory-ls doctor
	@echo; echo '$$ memory-ls inject   (the recall body, under the 8 KiB budget)'
	cd examples/demo/project && PI_CODING_AGENT_DIR=../agent ../../../$(VENV)/bin/memory-ls inject
	@echo; echo 'memory-ls is installed in $(VENV), not on PATH: run $(VENV)/bin/memory-ls --help,'
	@echo 'or `. $(VENV)/bin/activate` first to call it as memory-ls.'

lint: $(STAMP)
	$(VENV)/bin/ruff check memory_ls tests bench examples
	$(VENV)/bin/ruff format --check memory_ls tests bench examples

typecheck: $(STAMP)
	$(VENV)/bin/mypy --strict memory_ls

# The JSON Schemas of the shapes that cross a boundary, and the VS Code client's types from them.
schemas: $(STAMP)
	$(PY) -m memory_ls.schemas schemas
	cd vscode-client && npm run --silent generate

test: lint typecheck
	$(VENV)/bin/pytest -q -p no:cacheprovider

# The real editors the tests in tests/editors drive (Debian, as root; idempotent).
editors:
	bash .ci/install-editors.sh

# The VS Code extension: strict typecheck, esbuild bundle, vsce -> vscode-client/dist/memory-ls.vsix
vsix:
	cd vscode-client && npm ci && npm run package

bench: $(STAMP)
	bash bench/setup.sh
	$(PY) -m bench.run --out bench/out/report.md

clean:
	rm -rf $(VENV) examples/demo build *.egg-info
