"""``rag calibrate``: questions written from the user's own notes fit the answer check's bar.

What a user relies on: a pair is kept only when its answer is written in its section (a rule
decides what is right, not the model); a near miss is the same question drafted from the
notes with its answer left out (its note and every chunk that writes the answer), and counts
only when something else was found, graded in, and drafted without the answer; the check is
replayed as the graph runs it (a lookup or
a "no" withdraws at any bar, a draft that declines is never checked); the bar suggested is the
middle of the bars that keep the most right drafts and withdraw the most near-miss drafts; too
few drafts suggest nothing; and the sections are read one chunk per call.
"""

from __future__ import annotations

import json
import re

import pytest

from app.cli.main import main
from app.evaluation.calibrate import Draft, fit
from app.evaluation.sections import MIN_SECTION_CHARS, Section, read_pair, sample_sections
from tests.fakes import FakeModels

SECTION = Section(
    "personal/sourdough.md",
    "Feeding",
    "Feed the starter twice a day with equal weights of rye flour and water at 24 °C, and "
    "discard half of it before each feed so it does not outgrow the jar.",
)


def reply(**fields: str) -> str:
    return json.dumps(fields)


def test_a_pair_is_kept_only_when_its_answer_is_written_in_the_section():
    written = reply(
        question="What flour feeds the starter?",
        answer="rye  flour",  # spacing and case need not match
    )
    pair = read_pair(SECTION, f"Here you go:\n```json\n{written}\n```")
    assert pair is not None and pair.answer == "rye  flour"
    assert (pair.source, pair.question) == (SECTION.source, "What flour feeds the starter?")
    assert read_pair(SECTION, reply(question="What flour?", answer="spelt flour")) is None


@pytest.mark.parametrize(
    "text",
    [
        "rye flour",  # no JSON
        '{"question": "What flour?", "answer": "rye flour"',  # cut off
        reply(question="What flour?"),  # no answer
        reply(answer="rye flour"),  # no question
        reply(question="What?", answer=SECTION.content),  # not short
        "[1, 2]",
    ],
)
def test_an_unusable_reply_gives_no_pair(text):
    assert read_pair(SECTION, text) is None


def answered(sure: float | None, stated: bool | None = True, **kw) -> Draft:
    return Draft("answered", right=True, declined=False, looked_up=False, stated=stated, sure=sure)


def near(sure: float | None, stated: bool | None = True, **kw) -> Draft:
    kw = {"declined": False, "looked_up": False, **kw}
    return Draft("near miss", right=False, stated=stated, sure=sure, **kw)


def test_the_bar_suggested_is_the_middle_of_those_that_separate_best():
    # Right drafts' "yes" at 0.85 and above, near misses' at 0.80 and below: every bar from
    # 0.81 to 0.85 keeps all five and withdraws all five.
    drafts = [answered(p) for p in (0.99, 0.95, 0.9, 0.88, 0.85)]
    drafts += [near(p) for p in (0.5, 0.6, 0.7, 0.75, 0.8)]
    result = fit(drafts)
    assert result.equally_good == (0.81, 0.85) and result.suggested == 0.83
    assert (result.kept(0.83), result.withdrawn(0.83)) == (5, 5)
    assert (result.kept(0.5), result.withdrawn(0.5)) == (5, 0)
    assert (result.kept(0.9), result.withdrawn(0.9)) == (3, 5)


def test_overlapping_drafts_get_the_bar_that_does_best_on_both_shares():
    drafts = [answered(p) for p in (0.99, 0.97, 0.95, 0.93, 0.7)]
    drafts += [near(p) for p in (0.65, 0.5, 0.96, 0.3, 0.2)]
    result = fit(drafts)
    # From 0.66 to 0.70 every right draft stays and 4 of 5 near misses go (1 + 0.8); above
    # 0.70 the 0.7 right draft goes too, below 0.66 the 0.65 near miss stays.
    assert result.equally_good == (0.66, 0.7) and result.suggested == 0.68
    assert (result.kept(0.71), result.withdrawn(0.71)) == (4, 4)
    assert (result.kept(0.65), result.withdrawn(0.65)) == (5, 3)


def test_of_two_runs_of_best_bars_the_lower_keeps_the_suggestion():
    drafts = [answered(p) for p in (0.9, 0.9, 0.9, 0.9, 0.6)]
    drafts += [near(p) for p in (0.5, 0.5, 0.5, 0.5, 0.8)]
    result = fit(drafts)
    # 0.51-0.60 (5 kept, 4 withdrawn) and 0.81-0.90 (4 kept, 5 withdrawn) both score 1.8.
    assert result.equally_good == (0.51, 0.6) and result.suggested == round((0.51 + 0.6) / 2, 2)


def test_no_bar_is_suggested_where_the_model_is_as_sure_of_near_misses():
    # As on the runbooks with the 1.5B model: near-miss drafts confirmed at 0.96 to 1.0.
    drafts = [answered(p) for p in (0.92, 0.97, 0.98, 0.97, 0.87)]
    drafts += [near(p) for p in (0.98, 0.96, 0.98, 0.999, 0.97)]
    result = fit(drafts)
    assert result.suggested is None and result.equally_good is None
    assert result.why_none.startswith("no bar does better than keeping every draft")


def test_the_check_is_replayed_as_the_graph_runs_it():
    assert near(0.99, looked_up=True).withdrawn(0.0)  # a lookup settles it at any bar
    assert near(0.99, stated=False).withdrawn(0.0)  # so does a "no"
    assert not near(None, stated=None).withdrawn(0.99)  # an unreadable verdict is kept
    assert not near(0.1, declined=True).withdrawn(0.99)  # nothing to check
    assert near(0.5).withdrawn(0.51) and not near(0.5).withdrawn(0.5)  # below the bar only


def test_declined_near_misses_and_wrong_drafts_are_not_counted():
    wrong_answer = Draft("answered", right=False, declined=False, looked_up=False, stated=True)
    drafts = [answered(0.9)] * 5 + [near(0.5)] * 5 + [near(0.99, declined=True), wrong_answer]
    result = fit(drafts)
    assert (len(result.right), len(result.wrong)) == (5, 5) and result.suggested is not None


def test_too_few_drafts_suggest_no_bar():
    result = fit([answered(0.9)] * 5 + [near(0.5)] * 2)
    assert result.suggested is None and result.equally_good is None
    assert result.why_none.startswith("too few drafts")
    assert result.kept(0.6) == 5  # the replay is still shown


class Collection:
    """A collection of ``n`` chunks that records every read."""

    def __init__(self, n: int, short_every: int = 3) -> None:
        self.reads: list[dict] = []
        self.chunks = [
            (
                "x" if i % short_every == 0 else "long text " * 30,
                {"source": f"n{i}.md", "heading": ""},
            )
            for i in range(n)
        ]

    def count(self) -> int:
        return len(self.chunks)

    def get(self, include, limit, offset):
        self.reads.append({"limit": limit, "offset": offset})
        page = self.chunks[offset : offset + limit]
        return {
            "ids": [str(offset)] * len(page),
            "documents": [p[0] for p in page],
            "metadatas": [p[1] for p in page],
        }


def test_sections_are_drawn_one_chunk_per_read_by_the_seed():
    collection = Collection(10_000)
    first = sample_sections(collection, 5, seed=1)
    assert len(first) == 5 and len({s.source for s in first}) == 5
    assert all(len(s.content) >= MIN_SECTION_CHARS for s in first)
    assert all(read["limit"] == 1 for read in collection.reads)
    assert len(collection.reads) <= 5 * 4  # bounded by the sections asked for, not the collection
    assert sample_sections(Collection(10_000), 5, seed=1) == first
    assert sample_sections(Collection(10_000), 5, seed=2) != first


def test_a_collection_of_short_chunks_gives_no_section():
    assert sample_sections(Collection(6, short_every=1), 3, seed=0) == []


TOPICS = ("sourdough starter", "bicycle gears", "garden tomatoes", "yearly taxes", "router setup")


def load(tmp_path, notes: dict[str, str]) -> list[str]:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in notes.items():
        (folder / name).write_text(text)
    argv = ["--persist-dir", str(tmp_path / "db"), "-e", "fake-embed", "-n", "notes"]
    assert main(["load", "-f", str(folder), *argv], models=FakeModels()) == 0
    return [*argv, "--threshold", "0.1"]


def topic_note(topic: str) -> str:
    return f"# {topic}\n\n" + " ".join(f"{topic} detail {n}." for n in range(20)) + "\n"


@pytest.fixture
def db(tmp_path):
    notes = {f"{topic.replace(' ', '-')}.md": topic_note(topic) for topic in TOPICS}
    # A section of the first topic's note that does not write its answer: left out all the
    # same, as the whole note is (too short to be drawn itself).
    notes["sourdough-starter.md"] += "\n## Jar\n\nThe sourdough jar stays cold, one detail.\n"
    # Too short to be drawn, but it writes the first topic's answer: a near miss must not
    # be drafted from it.
    notes["copy.md"] = "Copied: sourdough starter sourdough starter detail.\n"
    return load(tmp_path, notes)


class Scripted(FakeModels):
    """Writes a question from each section's first words (the answer); drafts the answer
    when the notes it is given write it, else says the kettle is blue; grades a chunk
    relevant when it writes its question's answer (``grade_all``: every chunk); the check says
    "no" to the kettle. ``drafts`` keeps, per question, whether each draft prompt held the
    answer."""

    def __init__(self, *, grade_all: bool = True, always_answer: bool = False) -> None:
        self.answers_of: dict[str, str] = {}
        self.drafts: dict[str, list[bool]] = {}
        super().__init__({"generate": self._generate, "check": self._check, "grade": self._grade})
        self.grade_all, self.always_answer = grade_all, always_answer
        self.from_the_jar = False  # a draft was written from the first topic's other section

    def _generate(self, prompt: str) -> str:
        if "You write test questions" in prompt:
            content = prompt.rsplit("<note heading=", 1)[1].split(">", 1)[1]
            words = re.findall(r"[A-Za-z]{4,}", content)
            question = f"Which detail opens the notes on {words[0]}?"
            self.answers_of[question] = " ".join(words[:3])
            return reply(question=question, answer=" ".join(words[:3]))
        question = prompt.rsplit("Question: ", 1)[-1].split("\n", 1)[0]
        answer = self.answers_of[question]
        holds = answer in " ".join(prompt.split())
        self.drafts.setdefault(question, []).append(holds)
        self.from_the_jar |= not holds and "jar stays cold" in prompt
        if holds or self.always_answer:
            return f"The notes open with {answer} [1]."
        return "The kettle is blue [1]."

    def _grade(self, prompt: str) -> str:
        flat = " ".join(prompt.split())
        relevant = self.grade_all or any(
            q in flat and a in flat for q, a in self.answers_of.items()
        )
        return '{"score": "yes"}' if relevant else '{"score": "no"}'

    def _check(self, prompt: str) -> str:
        return '{"score": "no"}' if "kettle is blue" in prompt else '{"score": "yes"}'


def calibrate(db, models, capsys, *more: str) -> dict:
    capsys.readouterr()
    assert main(["calibrate", "--json", *more, *db], models=models) == 0
    return json.loads(capsys.readouterr().out)


def test_rag_calibrate_suggests_a_bar_from_the_users_own_notes(db, capsys):
    models = Scripted()
    result = calibrate(db, models, capsys, "--sections", "5")
    assert result["sections"] == len(TOPICS) and result["unusable_sections"] == 0
    assert result["right_drafts"] == 5 and result["near_miss_drafts"] == 5
    assert result["no_near_miss"] == 0
    # Each question drafted twice: once from its own note, once with the answer left out,
    # the copy that writes the first topic's answer included.
    assert sorted(map(tuple, models.drafts.values())) == [(True, False)] * 5
    assert not models.from_the_jar
    # Right drafts confirmed (no P(yes) reported: kept at every bar), near misses all "no":
    # every bar separates them, the middle is suggested.
    assert result["equally_good"] == [0.0, 1.0] and result["suggested"] == 0.5
    capsys.readouterr()
    assert main(["calibrate", "--sections", "5", *db], models=Scripted()) == 0
    out = capsys.readouterr().out
    assert "Suggested: RAG_CHECK_CONFIDENCE=0.5 (every bar from 0.00 to 1.00" in out
    assert re.search(r"0\.84 +\d+/\d+ +\d+/\d+ +\(now\)", out)
    assert "5 drafted an answer (to be withdrawn); 0 without one" in out


def test_a_near_miss_graded_out_is_a_decline_and_is_not_drafted(db, capsys):
    models = Scripted(grade_all=False)
    result = calibrate(db, models, capsys, "--sections", "5")
    near = [d for d in result["drafts"] if d["kind"] == "near miss"]
    assert len(near) == 5 and all(d["declined"] for d in near)
    assert result["near_miss_drafts"] == 0 and result["suggested"] is None
    # One question written and one draft per section: nothing drafted from no notes.
    assert models.calls("generate") == 2 * 5
    assert sorted(map(tuple, models.drafts.values())) == [(True,)] * 5


def test_a_near_miss_drafted_with_the_answer_anyway_is_left_out(db, capsys):
    result = calibrate(db, Scripted(always_answer=True), capsys, "--sections", "5")
    assert result["no_near_miss"] == 5 and result["near_miss_drafts"] == 0
    assert [d["kind"] for d in result["drafts"]] == ["answered"] * 5


def test_a_question_only_its_own_note_answers_has_no_near_miss(tmp_path, capsys):
    db = load(tmp_path, {"only.md": topic_note("sourdough starter")})
    models = Scripted()
    result = calibrate(db, models, capsys, "--sections", "1")
    assert result["no_near_miss"] == 1 and [d["kind"] for d in result["drafts"]] == ["answered"]
    assert models.calls("generate") == 2 and models.calls("grade") == 1


def test_rag_calibrate_refuses_what_it_cannot_measure_in_one_line(db, capsys):
    capsys.readouterr()
    assert (
        main(["calibrate", *db[:-4], "-n", "missing", "--threshold", "0.1"], models=FakeModels())
        == 2
    )
    assert capsys.readouterr().err.strip() == (
        "rag: error: no collection named 'missing' (`rag collections` lists them)"
    )
    assert main(["calibrate", "--sections", "0", *db], models=FakeModels()) == 2
    assert "--sections must be between 1 and 500, got 0" in capsys.readouterr().err


def test_the_lab_calibrates_without_the_command_line(db):
    from app.evaluation import calibrate as lab
    from app.evaluation.sections import draw_sections
    from graph.context import Context

    context = Context(
        chroma_persist_directory=db[1],
        embedding_model="fake-embed",
        collection_name="notes",
        score_threshold=0.1,
    )
    steps = []
    sections = draw_sections(context, 5, seed=0)
    run = lab.calibrate(context, Scripted(), sections, lambda *step: steps.append(step))
    assert (run.sections, run.unusable, run.no_near_miss) == (5, 0, 0)
    assert len(run.drafts) == 10 and run.result.suggested == 0.5
    assert [step[:2] for step in steps] == [(n, 5) for n in range(1, 6)]
    assert steps[-1][2] == "10 drafts"
    figures = lab.as_json(context, run)
    assert figures["right_drafts"] == 5 and figures["near_miss_drafts"] == 5
    assert "Suggested: RAG_CHECK_CONFIDENCE=0.5" in lab.render(context, run)
