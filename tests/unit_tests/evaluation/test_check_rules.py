"""bench/check_rules.py: each rule it switches off is one the check applies, and the replay
withdraws a draft exactly as ``nodes.generate`` does."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from app.evaluation.answers import Question
from bench import check_rules
from bench.check_rules import claims, outcome, patched, replay, rules, variants
from graph.context import CHECK_CONFIDENCE, Context
from graph.index.retrieval import RetrievedChunk
from nodes import generate
from nodes.generate import lookup

#: For each rule: a question, an answer and the note text it was drafted from, on which the
#: lookups decide one way with the rule and the other way without it.
CASES = {
    "number words (two, twenty-five, a hundred, twice)": (
        "What does the note say?",
        "Bake for 20 minutes.",
        "Bake for twenty minutes.",
    ),
    "units must match (12 % is not 12 hours)": (
        "What does the note say?",
        "Let it rest for 12 days.",
        "Let it rest for 12 hours.",
    ),
    "citations are not figures ([1])": ("Flour?", "Use rye flour [1].", "Use rye flour."),
    "list numbers are not figures (1.)": (
        "Steps?",
        "1. Preheat the oven.\n2. Bake the bread.",
        "Preheat the oven, then bake the bread.",
    ),
    "asks a temperature": ("At what temperature do I bake it?", "Bake for 45 minutes.", ""),
    "asks a count (how many)": ("How many sets do I do?", "Rest 45 seconds.", ""),
}


def chunk(text: str) -> RetrievedChunk:
    return RetrievedChunk(source="note.md", heading="", content=text, score=1.0)  # type: ignore[typeddict-item]


def test_every_rule_has_a_case() -> None:
    assert set(CASES) == set(rules())


@pytest.mark.parametrize("name", sorted(CASES))
def test_switching_a_rule_off_changes_the_lookup(name: str) -> None:
    question, answer, note = CASES[name]
    chunks = [chunk(note or answer)]  # no note text: the answer's own figures are held
    with_rule = lookup(question, answer, chunks) is None
    with patched(rules()[name]):
        without_rule = lookup(question, answer, chunks) is None
    assert with_rule != without_rule
    assert (lookup(question, answer, chunks) is None) == with_rule  # restored afterwards


def row(answer: str, whole: dict[str, Any] | None, claims_: list[dict[str, Any]] = ()) -> dict:
    entry: dict[str, Any] = {
        "id": "q",
        "state": {"answer": answer, "sources": [{"path": "note.md", "heading": ""}]},
        "chunks": [chunk("The pass opens at 9:00.")],
    }
    if whole is not None:
        entry["whole"] = whole
        entry["claims"] = list(claims_)
    return entry


def verdict(stated: bool | None, sure: float | None) -> dict[str, Any]:
    return {"stated": stated, "sure": sure, "calls": 1, "tokens": 10}


def test_replay_withdraws_as_the_check_does() -> None:
    sure, unsure = verdict(True, CHECK_CONFIDENCE + 0.01), verdict(True, CHECK_CONFIDENCE - 0.01)
    assert not replay(row("It opens at 9:00 [1].", sure), "When?")
    assert replay(row("It opens at 9:00 [1].", unsure), "When?")
    assert not replay(row("It opens at 9:00 [1].", unsure), "When?", bar=0.5)
    assert replay(row("It opens at 9:00 [1].", verdict(False, 0.9)), "When?")
    assert not replay(row("It opens at 9:00 [1].", verdict(None, None)), "When?")
    assert not replay(row("It opens at 9:00 [1].", verdict(True, None)), "When?")
    # A figure none of the sections holds: the lookup, whatever the model said
    assert replay(row("It opens at 10:00 [1].", sure), "When?")
    assert not replay(row("It opens at 10:00 [1].", sure), "When?", lookups=False)
    # No draft to check (declined, or no relevant note): never withdrawn
    assert not replay(row("It opens at 10:00 [1].", None), "When?")


def test_claim_by_claim_withdraws_when_any_sentence_is_not_stated() -> None:
    both = [verdict(True, 0.99), verdict(True, 0.99)]
    one_not = [verdict(True, 0.99), verdict(False, 0.9)]
    answer = "It opens at 9:00. Bring water."
    assert not replay(row(answer, verdict(True, 0.99), both), "When?", model="claims")
    assert replay(row(answer, verdict(True, 0.99), one_not), "When?", model="claims")
    assert claims("It opens at 9:00 [1]. Bring water!\n- And a hat.\n3.") == [
        "It opens at 9:00  .",
        "Bring water!",
        "And a hat.",
    ]


def test_outcome_scores_withdrawn_drafts_as_abstained() -> None:
    answerable = Question("a", "When?", (("9:00",),), ("note.md",), True, "single", "")
    near = Question("n", "When does the other pass open?", (), (), False, "near-miss", "")
    rows = [
        {**row("It opens at 9:00 [1].", verdict(True, 0.99)), "id": "a"},
        {**row("It opens at 9:00 [1].", verdict(True, 0.5)), "id": "n"},
    ]
    questions = {"a": answerable, "n": near}
    today = outcome(rows, questions, variants()["lookups + the model's check"])
    assert today == {"right": 1, "answerable": 1, "abstained": 1, "of": 1}
    unchecked = outcome(rows, questions, variants()["no check"])
    assert unchecked == {"right": 1, "answerable": 1, "abstained": 0, "of": 1}


def test_a_bar_asked_for_is_replayed_beside_the_usual_ones() -> None:
    # `--bar 0.94`: a bar `rag calibrate` suggested, replayed on the same drafts.
    replayed = variants((0.5, 0.94))
    assert {"bar 0.5", "bar 0.94"} <= set(replayed) and "bar 0.9" not in replayed
    draft = row("It opens at 9:00 [1].", verdict(True, 0.93))
    assert replayed["bar 0.94"](draft, "When?") and not replayed["bar 0.5"](draft, "When?")


def test_the_command_replays_the_bars_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `bench/check_rules.py --replay --bar 0.94`: from kept drafts, recorded beside the others.
    questions = json.loads(Path("tests/eval_sets/validation/runbooks/set.json").read_text())
    near_miss = next(q["id"] for q in questions["questions"] if not q["answerable"])
    key = check_rules.drafts_key("runbooks", Context(), None)
    draft = {
        **row("It opens at 9:00 [1].", verdict(True, 0.93)),
        "id": near_miss,
    }
    (tmp_path / "runbooks.json").write_text(json.dumps({"key": key, "rows": [draft]}))
    record = tmp_path / "record.json"
    argv = ["check_rules.py", "--only", "runbooks", "--replay", "--drafts", str(tmp_path)]
    monkeypatch.setattr(sys, "argv", [*argv, "--record", str(record), "--bar", "0.94"])
    check_rules.main()
    replayed = json.loads(record.read_text())["sets"]["runbooks"]["variants"]
    # A near miss drafted and confirmed at 0.93: kept at 0.5, withdrawn (abstained) at 0.94
    assert replayed["bar 0.5"]["abstained"] == 0 and replayed["bar 0.94"]["abstained"] == 1


def test_the_continued_check_is_replayed_from_its_own_verdict() -> None:
    entry = row("It opens at 9:00 [1].", verdict(True, 0.99))
    entry["continued"] = verdict(True, 0.6)
    assert not replay(entry, "When?")  # today's check: sure enough
    assert replay(entry, "When?", model="continued")  # the continued one: below the bar
    assert not replay(entry, "When?", model="continued", bar=0.5)
    designs = variants()
    assert designs["continued, bar 0.5"](entry, "When?") is False
    assert designs["continued (lookups + the check as the answer's next turn)"](entry, "When?")


def test_the_names_lookup_withdraws_a_draft_naming_what_its_sections_do_not() -> None:
    held = row("The pass opens at 9:00 [1].", verdict(True, 0.99))
    named = row("The Brenner pass opens at 9:00 [1].", verdict(True, 0.99))
    assert check_rules.unwritten_names(named["state"]["answer"], named["chunks"]) == ["Brenner"]
    assert not replay(held, "When?", model="none", names=True)
    assert replay(named, "When?", model="none", names=True)
    assert not replay(named, "When?", model="none")  # the names lookup is its own
    declined = row("The notes don't say which Pass [1].", verdict(True, 0.99))
    assert check_rules.unwritten_names(declined["state"]["answer"], declined["chunks"]) == []


def test_the_top_section_variant_scores_the_draft_from_the_top_section_where_there_is_one():
    item = Question("q", "When does the pass open?", (("9:00",),), ("note.md",), True, "", "")
    graded_out = {
        "id": "q",
        "state": {"answer": "", "sources": [], "no_answer_reason": "all_irrelevant"},
        "chunks": [],
    }
    top = row("It opens at 9:00 [1].", verdict(True, 0.99))
    with_top = {**graded_out, "top_section": {k: top[k] for k in ("state", "chunks", "whole")}}
    designs = variants()
    today = designs["lookups + the model's check"]
    questions = {"q": item}
    assert outcome([with_top], questions, today)["right"] == 0  # the grader kept nothing
    kept = outcome(
        [with_top], questions, designs["top section kept, lookups + the model's check"], 0.0
    )
    assert kept["right"] == 1
    assert outcome([graded_out], questions, today, 0.0)["right"] == 0  # none drafted: as it was
    # where retrieval is sure: only a top section scoring at least the bar is drafted from
    score = with_top["top_section"]["chunks"][0]["score"]
    assert outcome([with_top], questions, today, score)["right"] == 1
    assert outcome([with_top], questions, today, score + 0.01)["right"] == 0


def test_the_sure_score_is_fitted_just_above_the_near_misses_it_would_let_through():
    near = Question("n", "When does the ferry open?", (), ("note.md",), False, "", "")
    graded_out = {
        "id": "n",
        "state": {"answer": "", "sources": [], "no_answer_reason": "all_irrelevant"},
        "chunks": [],
    }
    top = row("It opens at 9:00 [1].", verdict(True, 0.99))
    score = top["chunks"][0]["score"]
    through = {**graded_out, "top_section": {k: top[k] for k in ("state", "chunks", "whole")}}
    questions = {"n": near}
    designs = variants()
    # the check keeps the invented answer: the bar goes just above its section's score
    fitted = check_rules.fitted_sure_score([through], questions, designs["no check"])
    assert fitted == round(score + 0.0001, 4)
    # the check withdraws it: nothing to keep out, any top section will do
    withdrawn = {**through, "top_section": {**through["top_section"], "whole": verdict(False, 0.1)}}
    assert (
        check_rules.fitted_sure_score(
            [withdrawn], questions, designs["lookups + the model's check"]
        )
        == 0.0
    )


def test_a_draft_with_figures_the_lookups_found_is_not_asked_of_the_model():
    held = row("It opens at 9:00 [1].", verdict(False, 0.1))  # the model would withdraw it
    plain = row("It opens in the morning [1].", verdict(False, 0.1))
    design = variants()["lookups; the model only for a draft without figures"]
    assert not design(held, "When does the pass open?")
    assert design(plain, "When does the pass open?")


def test_the_work_of_a_design_counts_only_the_drafts_it_asks_the_model_about():
    held = row("It opens at 9:00 [1].", {**verdict(True, 0.99), "seconds": 6.0})
    plain = row("It opens in the morning [1].", {**verdict(True, 0.99), "seconds": 4.0})
    rows = [held, plain, {"id": "q", "state": {"answer": ""}, "chunks": []}]
    assert check_rules.work_per_question(rows, "whole") == {
        "calls": 0.67,
        "tokens": 6.7,
        "seconds": 3.33,
    }
    without_figures = check_rules.work_per_question(
        rows, "whole", lambda r: not generate.settled_by_figures(r["state"]["answer"], r["chunks"])
    )
    assert without_figures == {"calls": 0.33, "tokens": 3.3, "seconds": 1.33}
