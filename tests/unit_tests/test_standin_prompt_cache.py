"""The Ollama stand-in reuses a shared prompt prefix as Ollama's prompt cache does.

Each chat model has one slot holding its last prompt's tokens and the reply's; a new prompt
reuses the longest prefix it shares with that slot (all but one token of a repeated prompt),
and the final reply reports ``prompt_eval_count`` (every prompt token) and
``prompt_eval_cached_count`` (the reused ones). llama.cpp's own ``cache_n`` (what it reused
for real) must agree. Served in-process on loopback from the tiny Gemma-shaped model, whose
sliding-window layers are what make llama.cpp's reuse need ``swa_full``. That is Ollama before
0.30; served as Ollama 0.30 and later (``host_prompt_cache``), earlier prompts are kept in
memory too, and what is reported is what llama.cpp reused.
"""

from __future__ import annotations

import json
import threading
import urllib.request

import pytest
from pytest_socket import enable_socket, socket_allow_hosts

from tests.ollama_stand_in import Backend, Faults, PromptCache, StandIn, _unloads
from tests.tiny_model import tiny_model_path

SYSTEM = (
    "You are a grader assessing relevance of a retrieved note section to a user question. "
    "Give a binary score 'yes' or 'no' as JSON with a single key 'score'."
)


def grade(section: str, question: str = "How long does the dough rest?") -> list[dict]:
    """A grade-shaped prompt: everything but the section is the same for every chunk."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"<note>\n{section}\n</note>\n\nQuestion: {question}"},
    ]


FIRST = grade("The sourdough rests for twelve hours in the fridge before baking.")
SECOND = grade("Pizza dough wants seventy percent hydration and a hot oven.")
OTHER = [{"role": "user", "content": "Write a haiku about the sea."}]


@pytest.fixture(autouse=True)
def _loopback():
    enable_socket()
    socket_allow_hosts(["127.0.0.1"], allow_unix_socket=True)


@pytest.fixture(scope="module")
def backend():
    return Backend(str(tiny_model_path()))


class Served:
    """A stand-in of its own on loopback, with the backend it answers from."""

    def __init__(self, backend: Backend, faults: Faults | None = None) -> None:
        enable_socket()
        self.backend = backend
        self.server = StandIn(
            ("127.0.0.1", 0), backend, ["standin", "standin-b"], [], [], faults or Faults()
        )
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}
        )
        self.thread.start()
        host, port = self.server.server_address[:2]
        self.url = f"http://{host}:{port}"

    def chat(self, messages: list[dict], model: str = "standin", **extra) -> dict:
        """The final line of a (streamed, unless ``stream`` says not) chat reply."""
        body = {"model": model, "messages": messages, "options": {"num_predict": 4}, **extra}
        request = urllib.request.Request(
            self.url + "/api/chat",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            lines = [json.loads(line) for line in response.read().decode().splitlines() if line]
        final = lines[-1]
        assert final["done"]
        final["content"] = "".join(line["message"]["content"] for line in lines)
        return final

    def cached(self, messages: list[dict], model: str = "standin", **extra) -> int:
        final = self.chat(messages, model, **extra)
        assert final["prompt_eval_count"] == len(self.backend.prompt_tokens(messages))
        return final["prompt_eval_cached_count"]

    def close(self) -> None:
        self.server.shutdown()
        self.thread.join()
        self.server.server_close()


@pytest.fixture
def served(backend):
    served = Served(backend)
    yield served
    served.close()


@pytest.fixture
def scripted(backend):
    """A stand-in whose every reply is a fixed text (no generation: deterministic tokens)."""
    served = Served(backend, Faults(reply="The dough rests for twelve hours."))
    yield served
    served.close()


def shared_prefix(backend: Backend, a: list[dict], b: list[dict]) -> int:
    count = 0
    for x, y in zip(backend.prompt_tokens(a), backend.prompt_tokens(b)):
        if x != y:
            break
        count += 1
    return count


def test_the_slot_reuses_the_longest_shared_prefix():
    cache = PromptCache()
    assert cache.reuse("m", [1, 2, 3, 4]) == 0  # a fresh cache holds nothing
    assert cache.reuse("m", [1, 2, 9, 9, 9]) == 2
    assert cache.reuse("m", [7, 1, 2]) == 0  # no shared prefix
    assert cache.reuse("other", [7, 1, 2]) == 0  # another model: a slot of its own
    assert cache.reuse("m", [7, 1, 2, 5]) == 3
    assert cache.reuse("m", [7, 1, 2, 5]) == 3  # the same prompt: its last token is evaluated
    cache.extend("m", [6, 6])
    assert cache.reuse("m", [7, 1, 2, 5, 6, 6, 8]) == 6  # the reply's tokens stay in the slot
    cache.forget("m")
    assert cache.reuse("m", [7, 1, 2, 5]) == 0


@pytest.mark.parametrize("stream", [True, False])
def test_a_grade_reuses_everything_before_its_section(served, backend, stream):
    first = served.chat(FIRST, stream=stream)
    assert first["prompt_eval_cached_count"] == 0
    assert first["prompt_eval_count"] == len(backend.prompt_tokens(FIRST))
    second = served.chat(SECOND, stream=stream)
    shared = shared_prefix(backend, FIRST, SECOND)
    assert shared > len(backend.text_tokens(SYSTEM))  # the template, system text, "<note>"
    assert second["prompt_eval_cached_count"] == shared
    # prompt_eval_count is every prompt token, the cached ones included (as in Ollama).
    assert second["prompt_eval_count"] == len(backend.prompt_tokens(SECOND))


def test_llama_cpp_reuses_what_the_stand_in_reports():
    # What llama.cpp itself reused from its slot (its timings) is what the reply reports:
    # a first prompt, a grade after a grade, a prompt sharing only the template's opening, a
    # prompt whose last use was two requests ago (llama.cpp must not keep it elsewhere), and
    # a repeat. A backend of its own: llama.cpp's slot starts empty too.
    backend = Backend(str(tiny_model_path()))
    served = Served(backend)
    reported = []
    try:
        for messages in (FIRST, SECOND, OTHER, FIRST, FIRST):
            final = served.chat(messages)
            timings = backend.last_timings
            assert final["prompt_eval_count"] == timings["cache_n"] + timings["prompt_n"]
            reported.append((final["prompt_eval_cached_count"], timings["cache_n"]))
    finally:
        served.close()
    assert [ours for ours, _ in reported] == [theirs for _, theirs in reported], reported
    first_tokens = len(backend.prompt_tokens(FIRST))
    assert reported[0] == (0, 0)
    assert reported[1][0] == shared_prefix(backend, FIRST, SECOND)
    assert 0 < reported[2][0] == reported[3][0] < 8  # the template's opening only
    assert reported[4][0] == first_tokens - 1


def test_each_model_has_a_slot_of_its_own(served, backend):
    assert served.cached(FIRST) == 0
    assert served.cached(FIRST, model="standin-b") == 0
    # standin's slot still holds FIRST, though standin-b was asked since.
    assert served.cached(SECOND) == shared_prefix(backend, FIRST, SECOND)


def test_a_fresh_stand_in_starts_with_an_empty_cache(backend):
    for _ in range(2):  # the same prompt, each time to a new stand-in
        served = Served(backend)
        try:
            assert served.cached(FIRST) == 0
            assert served.cached(FIRST) == len(backend.prompt_tokens(FIRST)) - 1
        finally:
            served.close()


def test_a_continued_conversation_reuses_the_prompt_and_the_reply(scripted, backend):
    answer = scripted.chat(FIRST)["content"]
    assert answer == "The dough rests for twelve hours."
    follow_up = [
        *FIRST,
        {"role": "assistant", "content": answer},
        {"role": "user", "content": "Is that stated in the note?"},
    ]
    held = len(backend.prompt_tokens(FIRST)) + len(backend.text_tokens(answer))
    assert scripted.cached(follow_up) == held


def test_unloading_the_model_empties_its_slot(served, backend):
    served.chat(FIRST)
    unloaded = served.chat([], keep_alive=0, stream=False)
    assert unloaded["done_reason"] == "unload" and "prompt_eval_count" not in unloaded
    assert served.cached(FIRST) == 0
    loaded = served.chat([], stream=False)
    assert loaded["done_reason"] == "load"
    assert served.cached(FIRST) == len(backend.prompt_tokens(FIRST)) - 1  # loading keeps it
    # A request with keep_alive 0 is answered, then the model is unloaded.
    assert served.cached(FIRST, keep_alive="0s") == len(backend.prompt_tokens(FIRST)) - 1
    assert served.cached(FIRST) == 0


@pytest.mark.parametrize(
    ("keep_alive", "unloads"),
    [(0, True), ("0", True), ("0s", True), ("0m", True), (0.0, True), (None, False)]
    + [("5m", False), (-1, False), ("-1", False), (300, False), (False, False), ("x", False)],
)
def test_keep_alive_zero_in_every_spelling_unloads(keep_alive, unloads):
    assert _unloads(keep_alive) is unloads


def test_the_trace_records_what_each_reply_reported(served, tmp_path, monkeypatch):
    # langchain-ollama drops prompt_eval_cached_count (the ollama client does not declare
    # it), so a benchmark on the product's path reads the counts from the trace.
    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv("STANDIN_TRACE", str(trace))
    replies = [served.chat(FIRST), served.chat(SECOND)]
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    prompts = [line for line in lines if line["kind"] == "prompt"]
    assert [(p["model"], p["prompt_eval_count"], p["cached"]) for p in prompts] == [
        ("standin", r["prompt_eval_count"], r["prompt_eval_cached_count"]) for r in replies
    ]
    # llama.cpp's own counts beside them (its slot, shared by this module's stand-ins, held
    # something before FIRST: only the second is known).
    last = [line for line in lines if line["kind"] == "chat"][-1]
    assert last["cache_n"] == replies[1]["prompt_eval_cached_count"]
    assert last["cache_n"] + last["prompt_n"] == replies[1]["prompt_eval_count"]


def dough_chunks() -> list[dict]:
    """Three retrieved sections about dough resting, the sourdough's ranked first."""
    sections = [
        "The sourdough dough rests twelve hours in the fridge before it is shaped.",
        "The pizza dough rests two days and bakes at 280 degrees on a steel.",
        "Bagel dough rests one night, then each bagel boils for a minute a side.",
    ]
    return [
        {"source": f"{n}.md", "heading": "Dough", "content": text, "score": 0.8, "images": []}
        for n, text in enumerate(sections)
    ]


def as_dicts(messages) -> list[dict]:
    roles = {"system": "system", "human": "user", "ai": "assistant"}
    return [{"role": roles[m.type], "content": m.content} for m in messages]


def test_the_grades_and_the_answer_read_the_sections_once(scripted, backend):
    # The graph's own prompts (nodes/grade_documents.py, nodes/generate.py), in the order it
    # sends them when the grader keeps every section: after the first grade, each grade and
    # the answer read only what follows the question.
    from graph.context import Context
    from graph.prompts import GENERATE_USER, GRADE_AFTER_NOTES
    from nodes.generate import answer_prompt
    from nodes.grade_documents import prompts_after_notes

    chunks = dough_chunks()
    question = "How long does the dough rest?"
    grades = [as_dicts(p) for p in prompts_after_notes(chunks, question, Context())]
    answer = as_dicts(answer_prompt(chunks, question))
    tail = len(backend.text_tokens(GRADE_AFTER_NOTES["en"]))
    assert scripted.cached(grades[0]) == 0
    for grade in grades[1:]:
        read = len(backend.prompt_tokens(grade)) - scripted.cached(grade)
        assert read <= tail + 12  # the note's name, the template's end of turn
    instruction = len(backend.text_tokens(GENERATE_USER.split("{question}")[1]))
    read = len(backend.prompt_tokens(answer)) - scripted.cached(answer)
    assert read <= instruction + 8


def in_the_graphs_order(monkeypatch, system_prompt: str) -> tuple[list, list, list]:
    """The dough chunks, their grades and the answer from the top one, as the graph sends them
    with ``SYSTEM_PROMPT`` set to ``system_prompt``: the grades in turn, the top-ranked last."""
    import graph.prompts as prompts
    from nodes.generate import answer_prompt
    from nodes.grade_documents import grade_prompt

    monkeypatch.setattr(prompts, "SYSTEM_PROMPT", system_prompt)
    chunks = dough_chunks()
    question = "How long does the sourdough dough rest?"
    grades = [as_dicts(grade_prompt(chunk, question)) for chunk in reversed(chunks)]
    return chunks, grades, as_dicts(answer_prompt(chunks[:1], question))


def assert_the_answer_reads_only_its_request(scripted, backend, answer: list) -> None:
    """The answer, asked after the top section's grade, reads only what follows the question."""
    from graph.prompts import GENERATE_USER

    instruction = len(backend.text_tokens(GENERATE_USER.split("{question}")[1]))
    read = len(backend.prompt_tokens(answer)) - scripted.cached(answer)
    assert read <= instruction + 8


def test_one_system_prompt_is_read_once_and_the_answer_reuses_the_top_section(
    scripted, backend, monkeypatch
):
    # The graph's own prompts with one system prompt for every task (graph/prompts.py,
    # SYSTEM_PROMPT "shared"), in the order it sends them: the grades in turn, the top-ranked
    # section last, then the answer from that section alone. After the first grade, no call
    # reads the system prompt again, and the answer reads only what follows the question.
    from graph.prompts import SHARED_SYSTEM

    chunks, grades, answer = in_the_graphs_order(monkeypatch, "shared")
    system = len(backend.text_tokens(SHARED_SYSTEM))
    assert scripted.cached(grades[0]) == 0
    for grade in grades[1:]:
        read = len(backend.prompt_tokens(grade)) - scripted.cached(grade)
        user_turn = len(backend.text_tokens(grade[1]["content"]))
        assert read <= user_turn + 8 and read < system  # the template's turn markers
    assert_the_answer_reads_only_its_request(scripted, backend, answer)


def test_grades_in_the_answers_prompt_leave_the_answer_only_its_request(
    scripted, backend, monkeypatch
):
    # The graph's own prompts with the grades in the answer's system prompt (graph/prompts.py,
    # SYSTEM_PROMPT "answer"), in the order it sends them: the grades in turn, the top-ranked
    # section last, then the answer from that section alone. After the first grade no call
    # reads the answer's instructions again, and the answer reads only what follows the
    # question: the answer's instructions stay read between questions.
    from graph.prompts import GENERATE_SYSTEM
    from nodes.grade_documents import grade_prompt

    chunks, grades, answer = in_the_graphs_order(monkeypatch, "answer")
    system = len(backend.text_tokens(GENERATE_SYSTEM))
    assert scripted.cached(grades[0]) == 0
    for grade in grades[1:]:
        read = len(backend.prompt_tokens(grade)) - scripted.cached(grade)
        user_turn = len(backend.text_tokens(grade[1]["content"]))
        assert read <= user_turn + 8 and scripted.cached(grade) >= system
    assert_the_answer_reads_only_its_request(scripted, backend, answer)
    next_grade = as_dicts(grade_prompt(chunks[1], "How long does the pizza dough rest?"))
    assert scripted.cached(next_grade) >= system


def test_a_warm_up_after_the_answer_leaves_the_next_first_grade_only_its_section(scripted, backend):
    # What the graph sends once an answer is written (graph/warmup.py): the grader's system
    # prompt and an empty user turn. The next question's first grade then reuses all of the
    # grader's instructions; without it, only the template's first tokens.
    from graph.models import warm_messages
    from graph.prompts import GRADE_SYSTEM, grade_system
    from nodes.generate import answer_prompt
    from nodes.grade_documents import grade_prompt

    chunks = dough_chunks()
    answer = as_dicts(answer_prompt(chunks[:1], "How long does the sourdough dough rest?"))
    next_grade = as_dicts(grade_prompt(chunks[1], "How long does the pizza dough rest?"))
    instructions = len(backend.text_tokens(GRADE_SYSTEM))
    scripted.cached(answer)
    assert scripted.cached(next_grade) < 8
    scripted.cached(answer)
    scripted.cached(warm_messages(grade_system(chunks[1])))
    assert scripted.cached(next_grade) >= instructions


@pytest.fixture
def host_cached():
    """A stand-in serving as Ollama 0.30 and later: earlier prompts kept in memory too."""
    served = Served(Backend(str(tiny_model_path()), host_prompt_cache=True))
    yield served
    served.close()


def test_a_host_prompt_cache_keeps_each_tasks_instructions_read_between_questions(
    host_cached, backend
):
    # Ollama 0.30 and later run llama-server with its host-memory prompt cache: a question's
    # grades find the grader's instructions read after the answer before them, and its answer
    # the answer's, with no warm-up. What is reported is what llama.cpp reused.
    from graph.prompts import GENERATE_SYSTEM, GRADE_SYSTEM
    from nodes.generate import answer_prompt
    from nodes.grade_documents import grade_prompt

    chunks = dough_chunks()
    first = "How long does the sourdough dough rest?"
    second = "How long does the pizza dough rest?"
    host_cached.cached(as_dicts(grade_prompt(chunks[0], first)))
    host_cached.cached(as_dicts(answer_prompt(chunks[:1], first)))
    grade = as_dicts(grade_prompt(chunks[1], second))
    assert host_cached.cached(grade) >= len(backend.text_tokens(GRADE_SYSTEM))
    assert host_cached.backend.last_timings["cache_n"] >= len(backend.text_tokens(GRADE_SYSTEM))
    answer = as_dicts(answer_prompt(chunks[1:2], second))
    assert host_cached.cached(answer) >= len(backend.text_tokens(GENERATE_SYSTEM))


def test_without_a_host_prompt_cache_only_the_slot_is_reused(served, backend):
    # Ollama before 0.30: the same calls, and the answer finds only the template's opening
    # of the grade before it.
    from nodes.generate import answer_prompt
    from nodes.grade_documents import grade_prompt

    chunks = dough_chunks()
    served.cached(as_dicts(answer_prompt(chunks[:1], "How long does the sourdough dough rest?")))
    served.cached(as_dicts(grade_prompt(chunks[1], "How long does the pizza dough rest?")))
    answer = as_dicts(answer_prompt(chunks[1:2], "How long does the pizza dough rest?"))
    assert served.cached(answer) < 8


def test_unloading_the_model_empties_the_host_prompt_cache(host_cached, backend):
    # Ollama 0.30 and later end the model's llama-server: nothing it kept is reused.
    host_cached.chat(FIRST)
    host_cached.chat(OTHER)
    assert host_cached.chat([], keep_alive=0, stream=False)["done_reason"] == "unload"
    assert host_cached.cached(FIRST) == 0


def test_the_speed_bench_counts_what_each_reply_reported(host_cached, tmp_path, monkeypatch):
    # bench/answer_speed.py reads a question's calls and tokens from the stand-in's trace:
    # what each reply reported, a warm-up counted with the question after it.
    from bench.answer_speed import model_work
    from graph.models import warm_messages
    from graph.prompts import GRADE_SYSTEM

    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv("STANDIN_TRACE", str(trace))
    replies = [host_cached.chat(FIRST), host_cached.chat(OTHER)]
    host_cached.chat(warm_messages(GRADE_SYSTEM), options={"num_predict": 1})
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    work, ahead = model_work(lines, [])
    assert work == {
        "calls": 2,
        "prompt_tokens": sum(r["prompt_eval_count"] for r in replies),
        "processed_tokens": sum(
            r["prompt_eval_count"] - r["prompt_eval_cached_count"] for r in replies
        ),
        # the one question FIRST asks, read once; the haiku's prompt asks none
        "needed_tokens": len(host_cached.backend.text_tokens("How long does the dough rest?")),
    }
    assert len(ahead) == 1
    next_work, _ = model_work([], ahead)
    assert next_work["calls"] == 1 and next_work["prompt_tokens"] > 0


def test_the_speed_bench_counts_what_a_question_needs_read_once(served, tmp_path, monkeypatch):
    # A question's grades, answer and check (the graph's own prompts) show the same sections
    # again: what it needs read is each section, the question and the checked answer once.
    # (Two tokens a reply: a one-token call is a read-ahead, counted with the next question.)
    from bench.answer_speed import model_work
    from nodes.generate import CHECK_STYLE, answer_prompt, check_prompt
    from nodes.grade_documents import grade_prompt

    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv("STANDIN_TRACE", str(trace))
    chunks, question, draft = (
        dough_chunks(),
        "How long does the sourdough dough rest?",
        "Twelve hours [1].",
    )
    for chunk in chunks[:2]:
        served.chat(as_dicts(grade_prompt(chunk, question)), options={"num_predict": 2})
    served.chat(as_dicts(answer_prompt(chunks[:2], question)), options={"num_predict": 2})
    served.chat(
        as_dicts(check_prompt(chunks[:1], question, draft, CHECK_STYLE)), options={"num_predict": 2}
    )
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    work, _ = model_work(lines, [])
    tokens = served.backend.text_tokens
    shown = [
        f' source="{c["source"]}" heading="{c["heading"]}">\n{c["content"]}\n' for c in chunks[:2]
    ]
    assert work["needed_tokens"] == sum(len(tokens(t)) for t in [*shown, question, draft])
    assert work["processed_tokens"] > 2 * work["needed_tokens"]  # instructions, sections again
