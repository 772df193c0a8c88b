# One documented way to set up and run everything: `make test` and `make dev` create the
# virtual environment on first use (about 10 minutes: llama-cpp-python compiles from source
# for the test stand-in; pip caches the built wheel, so later installs take seconds).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export LANGGRAPH_CLI_NO_ANALYTICS := 1
export LANGGRAPH_NO_VERSION_CHECK := 1
export DO_NOT_TRACK := 1

.PHONY: install test unit integration lint format bench dev standin clean

$(STAMP): pyproject.toml packaging/en_core_web_sm/pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev,standin]" ./packaging/en_core_web_sm
	touch $(STAMP)

install: $(STAMP)

test: install
	$(PY) -m pytest tests -q

unit: install
	$(PY) -m pytest tests/unit_tests -q

integration: install
	$(PY) -m pytest tests/integration_tests -q

lint: install
	$(PY) -m ruff check graph nodes tests bench
	$(PY) -m ruff format --check graph nodes tests bench
	$(PY) -m mypy graph nodes

format: install
	$(PY) -m ruff format graph nodes tests bench
	$(PY) -m ruff check --fix graph nodes tests bench

bench: install
	$(PY) bench/bench_graph.py
	$(PY) bench/bench_ingest.py

# Serve the graph for LangGraph Studio. Port 2024 is often taken; PORT picks another.
PORT ?= 2024
dev: install
	@test -f .env || cp .env.example .env
	@$(PY) -c "import socket,sys; s=socket.socket(); r=s.connect_ex(('127.0.0.1',$(PORT))); sys.exit(r==0 and 'port $(PORT) is taken: run make dev PORT=<free port>')"
	@echo "Serving agentic_rag at http://127.0.0.1:$(PORT)  (Studio: https://smith.langchain.com/studio/?baseUrl=http://127.0.0.1:$(PORT))"
	$(VENV)/bin/langgraph dev --no-browser --host 127.0.0.1 --port $(PORT)

# The Ollama-API stand-in (tiny real model) for trying `rag` without Ollama.
standin: install
	$(PY) -m tests.ollama_stand_in --host 127.0.0.1 --port 11435

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis .langgraph_api
