# Two commands on a fresh machine:  `make run` (the app, offline, no API key) and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install run test ingest eval bench

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade --quiet pip
	$(BIN)/pip install -c constraints.txt -e ".[test]"
	touch $@

run: install
	$(BIN)/python app_launcher.py

test: install
	$(BIN)/python -m pytest

ingest: install
	$(BIN)/python ingest.py sample_kb/

eval: install
	$(BIN)/python bench/eval_retrieval.py
