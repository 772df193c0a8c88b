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

# llama-cpp-python has no Linux wheel on PyPI and compiles from source (about 6 minutes on
# 2 cores). It is built once per machine into a wheel cache outside the checkout, with
# portable CPU flags: a native build used instructions (AMX) that these VMs advertise but
# trap ("Illegal instruction").
WHEELS ?= $(HOME)/.cache/notes-rag/wheels
LLAMA_VERSION := 0.3.36
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
LLAMA_WHEEL := $(WHEELS)/.llama-cpp-python-$(LLAMA_VERSION)

$(LLAMA_WHEEL):
	test -x $(PY) || python3 -m venv $(VENV)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip wheel -q --no-cache-dir --no-deps \
		-w $(WHEELS) llama-cpp-python==$(LLAMA_VERSION)
	touch $@

$(STAMP): pyproject.toml packaging/en_core_web_sm/pyproject.toml $(LLAMA_WHEEL)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --find-links $(WHEELS) -e ".[dev,standin,eval]" ./packaging/en_core_web_sm
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
