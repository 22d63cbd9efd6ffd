# make demo · make test · make check · make bench — each sets itself up on a fresh Debian machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.orderup-installed

.PHONY: demo test check bench lint system system-test clean

system:
	@scripts/system_deps.sh

system-test:
	@scripts/system_deps.sh test

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "orderup needs Python 3.11 or newer as $(PYTHON) (try: make PYTHON=python3.11 ...)" >&2; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "orderup: installing into $(VENV) (first run only)" >&2
	@$(PY) -m pip install -qq --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

demo: system $(STAMP)
	@$(VENV)/bin/orderup demo

test: system-test $(STAMP)
	@$(PY) -m pytest

check: system $(STAMP)
	@$(PY) -m pytest -m "not slow"

bench: system $(STAMP)
	@$(PY) scripts/bench.py

lint: system $(STAMP)
	@$(PY) -m pip install -qq --disable-pip-version-check -e '.[dev]'
	@$(VENV)/bin/ruff check engine voice scripts tests
	@$(VENV)/bin/mypy engine voice

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
