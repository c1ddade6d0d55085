# ClinCite — two commands on a fresh machine:
#   make run    the app on the sample knowledge base, offline (no API key), http://localhost:8000, login demo/demo
#   make test   the whole test suite
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
HOST ?= 127.0.0.1
WORKERS ?= 1

.PHONY: install run serve test ingest eval bench

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install -c constraints.txt -e ".[test]"
	touch $@

# Demo: the demo/demo account works while no real users exist (CLINCITE_DEV_LOGIN=true, explicitly).
# Each run in a Chainlit app root of its own under DATA_DIR (clincite/web/instance.py): another instance stopping
# cannot delete its session files.
APP_ROOT = root=$$($(BIN)/python -m clincite.web.instance) && CHAINLIT_APP_ROOT=$$root CLINCITE_PRIVATE_APP_ROOT=$$root

run: install
	$(APP_ROOT) env -u CI CLINCITE_DEV_LOGIN=true $(BIN)/chainlit run app.py -h --host $(HOST) --port $(PORT)

# Production-style: real accounts only (add them with `.venv/bin/python -m clincite.users add NAME`).
# WORKERS=N (N > 1): N workers behind nginx on HOST:PORT, kept running by supervisord (deploy/serve.py); the settings
# must then name the shared servers (PostgreSQL, Chroma server, Redis: docs/deploy.md).
serve: install
ifeq ($(WORKERS),1)
	$(APP_ROOT) env -u CI $(BIN)/chainlit run app.py -h --host $(HOST) --port $(PORT)
else
	env -u CI $(BIN)/python deploy/serve.py --workers $(WORKERS) --host $(HOST) --port $(PORT)
endif

# Two workers, whole test modules each (module-scoped app servers stay in one worker); TEST_WORKERS=0 runs serially.
TEST_WORKERS ?= 2
test: install
	$(BIN)/python -m pytest $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

ingest: install
	$(BIN)/python ingest.py sample_kb/

eval: install
	$(BIN)/python bench/eval_retrieval.py

bench: install
	$(BIN)/python bench/bench_pipeline.py
