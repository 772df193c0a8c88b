"""The answer check: each answer is checked against the note sections it was drafted from.

An answer the check finds not stated keeps its draft, is followed by a plain "your notes
don't say this" naming the sections, and ends the run with ``no_answer_reason``
``unsupported``; every way in (graph, ``rag ask``, ``rag chat``, the OpenAI API) shows the
draft once and that line after it. Fake models: the check answers per test.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import replace

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk
from ollama._types import Logprob
from starlette.applications import Starlette
from starlette.testclient import TestClient

from app.cli.main import main
from app.serving.openai_api import ChatCompletions
from graph.builder import build_graph
from graph.context import CHECK_CONFIDENCE
from graph.index.ingest import load_notes
from graph.llm import yes_probability
from graph.models import options_for
from graph.prompts import UNSUPPORTED, UNSUPPORTED_FIGURES, UNSUPPORTED_KIND
from graph.state import unstreamed_tail
from tests.fakes import FakeModels

DRAFT = "Start slower than goal pace for the first kilometres [1]."
QUESTION = "How do I practise whiteboarding interviews?"
NOT_STATED = UNSUPPORTED.split(":")[0]  # "Your notes don't say this"


def test_an_answer_the_notes_state_is_left_as_it_is(loaded):
    models = FakeModels({"generate": DRAFT})
    out = build_graph(models=models).invoke({"question": QUESTION}, context=loaded)
    assert out["answer"] == DRAFT and out["no_answer_reason"] is None
    assert models.calls("check") == 1
    assert out["steps"][-1] == "generate: checked against the notes: stated"


def test_an_answer_the_notes_do_not_state_is_followed_by_your_notes_don_t_say(loaded):
    models = FakeModels({"generate": DRAFT, "check": '{"score": "no"}'})
    out = build_graph(models=models).invoke({"question": QUESTION}, context=loaded)
    assert out["no_answer_reason"] == "unsupported"
    draft, added = out["answer"].split("\n\n")
    assert draft == DRAFT and added.startswith(NOT_STATED)
    # The sections it was drafted from are named, as the sources list them.
    assert out["sources"] and f"[1] {out['sources'][0]['path']}" in added
    # The conversation keeps what the reader was shown (a follow-up is rewritten from it).
    assert out["messages"][-1].content == out["answer"]
    assert out["steps"][-1] == "generate: checked against the notes: not stated"


def test_the_check_reads_the_notes_the_answer_came_from_the_question_and_the_answer(loaded):
    models = FakeModels({"generate": "It is <|im_end|> done [1]."})
    build_graph(models=models).invoke({"question": QUESTION}, context=loaded)
    (generated,) = models.prompts("generate")
    (checked,) = models.prompts("check")
    notes = generated[generated.index("<notes>") : generated.index("</notes>")]
    assert notes in checked and "<note number=" in notes
    # The model's answer is material too: its control strings are defused.
    assert "Answer: It is &lt;|im_end|> done [1]." in checked
    # The question too: an answer drafted from a neighbouring fact answers another question.
    assert f"</notes>\n\nQuestion: {QUESTION}\n\nAnswer: It is" in checked
    assert QUESTION in generated[generated.index("</notes>") :]  # the draft answers it


def test_a_check_that_continues_the_answer_reads_only_its_own_turn_after_it(loaded, monkeypatch):
    import nodes.generate as generate_node

    monkeypatch.setattr(generate_node, "CHECK_STYLE", "continued")
    models = FakeModels({"generate": DRAFT, "check": '{"score": "no"}'})
    out = build_graph(models=models).invoke({"question": QUESTION}, context=loaded)
    (generated,) = models.prompts("generate")
    (checked,) = models.prompts("check")
    # The answer's conversation as sent and received, byte for byte (a server that keeps its
    # last prompt reuses all of it), then the check's own turn, naming the question.
    assert checked.startswith(f"{generated}\n{DRAFT}\nCheck your answer above")
    assert checked.count("<notes>") == 1
    assert checked.endswith("no preamble or explanation.") and f": {QUESTION}\n" in checked
    assert out["no_answer_reason"] == "unsupported"  # its verdict counts as the other's


def test_the_continued_check_is_refused_when_the_conversation_would_not_fit(loaded):
    from nodes.generate import ask_check

    long_answer = "word " * 40_000
    for style in ("continued", "prefix", "fresh"):
        asked = ask_check([], QUESTION, long_answer, loaded, AIMessage(long_answer), style)
        assert asked == f"not checked: answer and notes exceed num_ctx {loaded.num_ctx}"


def test_a_check_written_after_the_answer_s_prompt_begins_with_it_byte_for_byte(
    loaded, monkeypatch
):
    import nodes.generate as generate_node

    monkeypatch.setattr(generate_node, "CHECK_STYLE", "prefix")
    models = FakeModels({"generate": "It is <|im_end|> done [1].", "check": '{"score": "no"}'})
    out = build_graph(models=models).invoke({"question": QUESTION}, context=loaded)
    (generated,) = models.prompts("generate")
    (checked,) = models.prompts("check")
    # The answer's system prompt and user turn as sent (the server reuses them), then the
    # draft as material (defused) and the check's instructions, last.
    assert checked.startswith(generated + "\n\nA draft answer to this question")
    assert "<draft>\nIt is &lt;|im_end|> done [1].\n</draft>" in checked
    assert checked.count("<notes>") == 1 and checked.endswith("no preamble or explanation.")
    assert out["no_answer_reason"] == "unsupported"


def test_an_unreadable_verdict_keeps_the_answer(loaded):
    models = FakeModels({"generate": DRAFT, "check": "maybe"})
    out = build_graph(models=models).invoke({"question": QUESTION}, context=loaded)
    assert out["answer"] == DRAFT and out["no_answer_reason"] is None
    assert out["steps"][-1] == "generate: checked against the notes: unreadable verdict, kept"


def test_an_answer_that_declines_is_not_checked(loaded):
    declined = "Your notes don't say how long; they cover the warm-up [1]."
    models = FakeModels({"generate": declined, "check": '{"score": "no"}'})
    out = build_graph(models=models).invoke({"question": QUESTION}, context=loaded)
    assert out["answer"] == declined and models.calls("check") == 0
    assert out["steps"][-1] == "generate: not checked: the answer says the notes don't say"


def test_a_check_that_would_not_fit_the_context_window_is_not_made(loaded):
    # An answer long enough that notes + answer exceed num_ctx: Ollama would cut the prompt's
    # front (the instructions), so the answer is left unchecked rather than misjudged.
    long_answer = "Practise on a whiteboard every day, timed, out loud. " * 120
    models = FakeModels({"generate": long_answer, "check": '{"score": "no"}'})
    small = replace(loaded, num_ctx=2048)
    out = build_graph(models=models).invoke({"question": QUESTION}, context=small)
    assert models.calls("check") == 0 and out["no_answer_reason"] is None
    assert out["steps"][-1] == "generate: not checked: answer and notes exceed num_ctx 2048"
    models = FakeModels({"generate": DRAFT, "check": '{"score": "no"}'})
    build_graph(models=models).invoke({"question": QUESTION}, context=small)
    assert models.calls("check") == 1  # a short answer is checked at the same num_ctx


def test_the_check_keeps_room_for_its_own_short_verdict_only(loaded):
    # The verdict is capped at a few tokens: a check whose prompt leaves room for that cap is
    # made, even where it leaves no room for a whole answer's reserve (a quarter of num_ctx).
    answer = "Practise on a whiteboard every day, timed, out loud. " * 65
    models = FakeModels({"generate": answer, "check": '{"score": "no"}'})
    out = build_graph(models=models).invoke(
        {"question": QUESTION}, context=replace(loaded, num_ctx=2048)
    )
    assert models.calls("check") == 1
    assert out["steps"][-1] == "generate: checked against the notes: not stated"


def test_the_notes_are_numbered_as_their_sources_are_listed():
    # An answer's [n] is the n-th source: chunks of one note section share its number.
    from nodes.generate import cite, format_context

    def chunk(source, heading, content):
        return {"source": source, "heading": heading, "content": content, "score": 1.0,
                "images": [], "tags": []}  # fmt: skip

    chunks = [chunk("a.md", "A", "one"), chunk("b.md", "B", "two"), chunk("a.md", "A", "three")]
    assert [s["path"] for s in cite(chunks)] == ["a.md", "b.md"]
    assert format_context(chunks) == (
        '<note number="1" source="a.md" heading="A">\none\n</note>\n'
        '<note number="2" source="b.md" heading="B">\ntwo\n</note>\n'
        '<note number="1" source="a.md" heading="A">\nthree\n</note>'
    )


def test_check_answers_off_makes_no_check(loaded):
    for draft in (DRAFT, "Practise for 45 minutes a day [1]."):
        models = FakeModels({"generate": draft, "check": '{"score": "no"}'})
        off = replace(loaded, check_answers=False)
        out = build_graph(models=models).invoke({"question": QUESTION}, context=off)
        assert out["answer"] == draft and models.calls("check") == 0
        assert out["no_answer_reason"] is None


def test_a_figure_none_of_the_sections_holds_is_not_stated_without_asking_the_model(loaded):
    # The note on whiteboarding gives no durations: "45 minutes" came from nowhere.
    draft = "Practise for 45 minutes a day, out loud [1]."
    models = FakeModels({"generate": draft})  # the model would have said "yes"
    out = build_graph(models=models).invoke({"question": QUESTION}, context=loaded)
    assert models.calls("check") == 0
    assert out["no_answer_reason"] == "unsupported"
    shown, added = out["answer"].split("\n\n")
    assert shown == draft and added.startswith(NOT_STATED)
    assert UNSUPPORTED_FIGURES.startswith(f"{NOT_STATED}:")
    assert added.endswith("do not hold 45 minutes.") and f"[1] {out['sources'][0]['path']}" in added
    assert out["messages"][-1].content == out["answer"]
    assert out["steps"][-1] == "generate: checked against the notes: 45 minutes in none of them"


@pytest.fixture
def with_offer(ctx, notes_copy, models):
    """The sample notes and one with figures, loaded."""
    offer = (
        "# Job offer\n\n## Salary\n\nThe offer was 85,000 EUR a year, with thirty days of leave.\n"
    )
    (notes_copy / "career" / "offer-2026.md").write_text(offer)
    load_notes(ctx, notes_copy, models.embedder)
    return ctx


@pytest.mark.parametrize(
    "draft",
    [
        "The offer was 85000 EUR a year with 30 days of leave [1].",
        "Leave: 30 days [1]. Interviews: nothing on it [2].",
    ],
)
def test_figures_the_sections_hold_settle_the_check_without_the_model(with_offer, draft):
    # Every figure is written in a section's text and the question asks for no other kind:
    # the model is not asked (it would have said "no" here).
    models = FakeModels({"generate": draft, "check": '{"score": "no"}'})
    out = build_graph(models=models).invoke({"question": "What was the offer?"}, context=with_offer)
    assert "career/offer-2026.md" in {s["path"] for s in out["sources"]}
    assert models.calls("check") == 0
    assert out["steps"][-1] == "generate: checked against the notes: every figure written in them"
    assert out["answer"] == draft and out["no_answer_reason"] is None


def test_a_figure_found_only_in_the_notes_name_leaves_it_to_the_model(with_offer):
    draft = "The 2026 offer was 85000 EUR a year [1]."  # 2026: only in the note's name
    models = FakeModels({"generate": draft, "check": '{"score": "no"}'})
    out = build_graph(models=models).invoke({"question": "What was the offer?"}, context=with_offer)
    assert models.calls("check") == 1
    assert out["steps"][-1] == "generate: checked against the notes: not stated"
    assert out["no_answer_reason"] == "unsupported"


def test_a_draft_without_figures_goes_to_the_model_check(with_offer):
    draft = "The offer came from the company's recruiter [1]."
    models = FakeModels({"generate": draft, "check": '{"score": "no"}'})
    out = build_graph(models=models).invoke({"question": "What was the offer?"}, context=with_offer)
    assert models.calls("check") == 1
    assert out["steps"][-1] == "generate: checked against the notes: not stated"
    shown, added = out["answer"].split("\n\n")
    assert shown == draft and added.startswith(NOT_STATED) and "do not hold" not in added


def test_figures_of_another_kind_than_asked_are_not_stated_without_asking_the_model(with_offer):
    # The notes hold thirty days of leave; the question asks for a temperature.
    draft = "The offer came with 30 days of leave [1]."
    models = FakeModels({"generate": draft})  # the model would have said "yes"
    question = "At what temperature did the offer come with leave?"
    out = build_graph(models=models).invoke({"question": question}, context=with_offer)
    assert "career/offer-2026.md" in {s["path"] for s in out["sources"]}
    assert models.calls("check") == 0
    assert out["no_answer_reason"] == "unsupported"
    shown, added = out["answer"].split("\n\n")
    assert shown == draft and UNSUPPORTED_KIND.startswith(f"{NOT_STATED}:")
    assert added.startswith(f"{NOT_STATED}: the question asks for a temperature, and the answer")
    assert "gives 30 days, from the note sections it was drafted from ([1] " in added
    assert out["steps"][-1] == (
        "generate: checked against the question: "
        "it asks for a temperature, the answer gives 30 days"
    )
    # Asked for a number of days, the same answer stands, settled by the lookups alone.
    models = FakeModels({"generate": draft, "check": '{"score": "no"}'})
    question = "How many days of leave came with the offer?"
    out = build_graph(models=models).invoke({"question": question}, context=with_offer)
    assert models.calls("check") == 0 and out["no_answer_reason"] is None


def test_an_answer_that_declines_is_not_checked_for_figures_either(loaded):
    declined = "Your notes don't say whether 45 minutes is enough [1]."
    models = FakeModels({"generate": declined})
    out = build_graph(models=models).invoke({"question": QUESTION}, context=loaded)
    assert out["answer"] == declined and out["no_answer_reason"] is None


def test_the_check_is_not_streamed_and_the_draft_is_streamed_once(loaded):
    models = FakeModels({"generate": DRAFT, "check": '{"score": "no"}'})
    tokens, final = [], None
    for mode, payload in build_graph(models=models).stream(
        {"question": QUESTION}, context=loaded, stream_mode=["messages", "values"]
    ):
        if mode == "values":
            final = payload
        elif payload[1]["langgraph_node"] == "generate":
            assert isinstance(payload[0], AIMessageChunk)
            tokens.append(payload[0].content)
    assert "".join(tokens) == DRAFT  # no JSON verdict, no second copy
    assert unstreamed_tail(final["answer"], "".join(tokens)).startswith(NOT_STATED)


def verdict_logprobs(word: str, p_yes: float, before=('{"', "score", '":', ' "')) -> list:
    """Ollama's ``logprobs`` for a reply ``{"score": "<word>"}`` whose "yes" had ``p_yes``."""
    tops = [
        {"token": "yes", "logprob": math.log(p_yes)},
        {"token": "no", "logprob": math.log(1 - p_yes)},
    ]
    tops.append({"token": "Yes", "logprob": math.log(0.5)})  # not a word the format allows
    decided = {"token": word, "logprob": math.log(p_yes if word == "yes" else 1 - p_yes)}
    plain = [{"token": t, "logprob": -0.01, "top_logprobs": []} for t in before]
    return [*plain, {**decided, "top_logprobs": tops}, {"token": '"}', "logprob": -0.01}]


def test_a_yes_the_model_is_not_sure_of_does_not_confirm_the_answer(loaded):
    # A small model says "yes" to an answer drawn from a neighbouring fact, less surely.
    unsure = verdict_logprobs("yes", CHECK_CONFIDENCE - 0.05)
    models = FakeModels({"generate": DRAFT}, logprobs={"check": unsure})
    out = build_graph(models=models).invoke({"question": QUESTION}, context=loaded)
    assert out["no_answer_reason"] == "unsupported"
    assert out["answer"].startswith(f"{DRAFT}\n\n{NOT_STATED}")
    assert out["steps"][-1] == (
        "generate: checked against the notes: stated but unsure, "
        f"P(yes) {CHECK_CONFIDENCE - 0.05:.2f} below {CHECK_CONFIDENCE}"
    )
    sure = verdict_logprobs("yes", 0.9)
    assert CHECK_CONFIDENCE < 0.9
    models = FakeModels({"generate": DRAFT}, logprobs={"check": sure})
    out = build_graph(models=models).invoke({"question": QUESTION}, context=loaded)
    assert out["answer"] == DRAFT and out["no_answer_reason"] is None
    assert out["steps"][-1] == "generate: checked against the notes: stated, P(yes) 0.90"


@pytest.mark.parametrize(
    ("p_yes", "confirmed"),
    [
        # measured (CHECK_CONFIDENCE's comment): the least sure "yes" to a draft with every fact
        (0.86, True),
        # and the surest "yes" to a wrong draft below that gap
        (0.82, False),
    ],
)
def test_the_confidence_bar_lies_between_the_measured_right_and_wrong_drafts(
    loaded, p_yes, confirmed
):
    models = FakeModels({"generate": DRAFT}, logprobs={"check": verdict_logprobs("yes", p_yes)})
    out = build_graph(models=models).invoke({"question": QUESTION}, context=loaded)
    assert (out["answer"] == DRAFT) is confirmed
    assert out["no_answer_reason"] == (None if confirmed else "unsupported")


@pytest.mark.parametrize(("bar", "p_yes", "confirmed"), [(0.5, 0.82, True), (0.9, 0.86, False)])
def test_the_confidence_bar_is_the_runs_setting(loaded, bar, p_yes, confirmed):
    models = FakeModels({"generate": DRAFT}, logprobs={"check": verdict_logprobs("yes", p_yes)})
    context = replace(loaded, check_confidence=bar)
    out = build_graph(models=models).invoke({"question": QUESTION}, context=context)
    assert (out["answer"] == DRAFT) is confirmed
    assert out["steps"][-1].endswith("" if confirmed else f"below {bar}")


def test_the_check_asks_ollama_for_token_probabilities_and_nothing_else_does():
    assert options_for("check", None)["logprobs"] is True
    assert options_for("check", None)["top_logprobs"] == 20
    for purpose in ("grade", "generate", "route_calculator"):
        assert "logprobs" not in options_for(purpose, None)


def test_yes_probability_reads_the_token_that_starts_the_verdict():
    def message(entries) -> AIMessage:
        return AIMessage("", response_metadata={"logprobs": entries})

    assert yes_probability(message(verdict_logprobs("yes", 0.7))) == pytest.approx(0.7)
    assert yes_probability(message(verdict_logprobs("no", 0.2))) == pytest.approx(0.2)
    # A tokenizer that joins the quote to the word; no space after the colon.
    joined = verdict_logprobs("yes", 0.8, before=('{"', "score", '":'))
    joined[-2]["token"] = ' "yes'
    joined[-2]["top_logprobs"] = [
        {"token": ' "yes', "logprob": math.log(0.8)},
        {"token": ' "no', "logprob": math.log(0.2)},
    ]
    assert yes_probability(message(joined)) == pytest.approx(0.8)
    # A "no" in reasoning before the JSON is not the verdict, nor a verdict written while
    # reasoning: the last one counts.
    reasoning = [
        {"token": "no", "logprob": -0.1, "top_logprobs": [{"token": "no", "logprob": -0.1}]}
    ]
    assert yes_probability(message(reasoning + verdict_logprobs("yes", 0.9))) == pytest.approx(0.9)
    planned = verdict_logprobs("no", 0.1) + [{"token": " then", "logprob": -0.1}]
    assert yes_probability(message(planned + verdict_logprobs("yes", 0.9))) == pytest.approx(0.9)
    # A token with the closing quote and brace joined to the word.
    closing = verdict_logprobs("yes", 0.7)
    closing[-2]["token"] = 'yes"}'
    closing[-2]["top_logprobs"] = [
        {"token": 'yes"}', "logprob": math.log(0.7)},
        {"token": 'no"}', "logprob": math.log(0.3)},
    ]
    assert yes_probability(message(closing)) == pytest.approx(0.7)
    # The chosen token missing from its alternatives still counts for its word.
    missing = verdict_logprobs("yes", 0.8)
    missing[-2]["top_logprobs"] = [{"token": "Yes", "logprob": math.log(0.9)}]
    assert yes_probability(message(missing)) == 1.0
    # The ollama client's own objects, as langchain-ollama passes them on.
    objects = [
        Logprob(**{**e, "top_logprobs": e.get("top_logprobs") or []})
        for e in verdict_logprobs("yes", 0.6)
    ]
    assert yes_probability(message(objects)) == pytest.approx(0.6)
    # A certain "yes" (log-probability 0) is 1, not "no alternative".
    certain = verdict_logprobs("yes", 0.5)
    certain[-2]["top_logprobs"] = [{"token": "yes", "logprob": 0.0}]
    assert yes_probability(message(certain)) == 1.0
    # No log-probabilities (Ollama before 0.12.11), or none for "yes" or "no": not known.
    assert yes_probability(AIMessage('{"score": "yes"}')) is None
    # A verdict spelled out a letter a token (a base model under the JSON format).
    spelled = verdict_logprobs("yes", 0.9)
    spelled[-2:-1] = [{"token": "n", "logprob": -0.1}, {"token": "o", "logprob": -0.1}]
    assert yes_probability(message(spelled)) is None


def test_unstreamed_tail():
    assert unstreamed_tail("Draft.\n\nYour notes don't say this.", " Draft.") == (
        "Your notes don't say this."
    )
    assert unstreamed_tail("Draft.", "Draft.") == ""
    assert unstreamed_tail("Something else.", "Draft.") == ""
    assert unstreamed_tail("Answer.", "") == ""


@pytest.fixture
def db(tmp_path, sample_notes):
    argv = ["--persist-dir", str(tmp_path / "db"), "-e", "fake-embed", "-n", "notes"]
    assert main(["load", "-f", str(sample_notes), *argv], models=FakeModels()) == 0
    return [*argv, "--threshold", "0.1"]


def test_rag_ask_prints_the_draft_once_then_your_notes_don_t_say(db, capsys):
    models = FakeModels({"generate": DRAFT, "check": '{"score": "no"}'})
    capsys.readouterr()
    assert main(["ask", "-q", QUESTION, *db], models=models) == 0
    out = capsys.readouterr().out
    assert out.count(DRAFT) == 1
    # The sources as soon as the draft is written; the check's verdict after them.
    assert out.index(DRAFT) < out.index("Sources") < out.index(NOT_STATED)


def test_rag_ask_json_holds_the_whole_answer_and_the_reason(db, capsys):
    models = FakeModels({"generate": DRAFT, "check": '{"score": "no"}'})
    capsys.readouterr()
    assert main(["ask", "-q", QUESTION, "--json", *db], models=models) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["no_answer_reason"] == "unsupported"
    assert result["answer"].startswith(DRAFT) and NOT_STATED in result["answer"]


def test_rag_chat_prints_the_draft_once_then_your_notes_don_t_say(
    db, capsys, monkeypatch, tmp_path
):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{QUESTION}\n"))
    models = FakeModels({"generate": DRAFT, "check": '{"score": "no"}'})
    capsys.readouterr()
    assert main(["chat", *db], models=models) == 0
    out = capsys.readouterr().out
    assert out.count(DRAFT) == 1 and out.index(DRAFT) < out.index(NOT_STATED)


@pytest.mark.parametrize("stream", [True, False])
def test_the_openai_api_sends_the_draft_once_then_your_notes_don_t_say(loaded, monkeypatch, stream):
    monkeypatch.setenv("RAG_CHROMA_DIR", loaded.chroma_persist_directory)
    monkeypatch.setenv("RAG_SCORE_THRESHOLD", "0.1")
    models = FakeModels({"generate": DRAFT, "check": '{"score": "no"}'})
    client = TestClient(Starlette(routes=ChatCompletions(models=models).routes))
    body = {"model": "notes", "messages": [{"role": "user", "content": QUESTION}]}
    response = client.post("/v1/chat/completions", json={**body, "stream": stream})
    if stream:
        lines = [line for line in response.text.split("\n\n") if line.startswith("data: {")]
        chunks = [json.loads(line[len("data: ") :]) for line in lines]
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
        reason = chunks[-1]["no_answer_reason"]
    else:
        text = response.json()["choices"][0]["message"]["content"]
        reason = response.json()["no_answer_reason"]
    assert reason == "unsupported"
    assert text.count(DRAFT) == 1 and text.index(DRAFT) < text.index(NOT_STATED)


def test_only_figures_written_in_a_sections_text_settle_a_draft():
    from nodes.generate import settled_by_figures

    def section(text: str, heading: str = "Backups") -> dict:
        return {"source": "ops/backup.md", "heading": heading, "content": text, "score": 0.9}

    kept = [section("Keep 1 copy off site, for 3 years.")]
    assert settled_by_figures("Keep 1 copy off site [1].", kept)
    # a number citing a source, however written, is no figure: the model checks the rest
    assert not settled_by_figures("The backup goes to Backblaze (1).", kept)
    assert not settled_by_figures("The backup goes to Backblaze (Note 1).", kept)
    assert not settled_by_figures("According to note 1, it goes to Backblaze.", kept)
    # found only in a heading or a note's name: not found in what the section says
    assert not settled_by_figures("Retention is 5 years [1].", [section("Kept.", "Step 5")])
    assert not settled_by_figures("It declines: your notes don't say 3 [1].", kept)


@pytest.mark.parametrize(
    ("draft", "check", "by", "said"),
    [
        ("The offer was 85000 EUR a year [1].", "yes", "figures", "its figures are in your notes"),
        ("The offer came through the recruiter [1].", "yes", "model", "stated in your notes"),
        ("The offer came through the recruiter [1].", "no", "model", "not stated in your notes"),
        ("The offer was 90000 EUR a year [1].", "yes", "lookup", "not stated in your notes"),
    ],
)
def test_the_checked_event_says_what_settled_the_check(with_offer, draft, check, by, said):
    from graph.progress import describe

    models = FakeModels({"generate": draft, "check": f'{{"score": "{check}"}}'})
    events = build_graph(models=models).stream(
        {"question": "What was the offer?"}, context=with_offer, stream_mode="custom"
    )
    (checked,) = [e for e in events if e["stage"] == "checked"]
    assert checked["by"] == by
    assert describe(checked) == f"checked: {said}"
