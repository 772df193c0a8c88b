"""``rag eval --graded``: the ranking the graph answers from, after its grader."""

import json

import pytest

from app.cli.main import main
from app.evaluation.retrieval import load_set, report
from graph.context import Context
from graph.index.ingest import load_notes
from tests.fakes import FakeModels

PRINTER = "# Printer\n\nIt hangs off the attic switch.\n"
# Shares more of the question's words than the printer note does, so it ranks first.
DISTRACTOR = "# Old printer network\n\nWhich network is the old printer on? Ask the office.\n"


def grade_attic(prompt: str) -> str:
    """A grader that calls a chunk relevant when it names the attic, unless asked of colour."""
    relevant = "attic" in prompt and "colour" not in prompt
    return '{"score": "yes"}' if relevant else '{"score": "no"}'


@pytest.fixture
def labelled(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "printer.md").write_text(PRINTER)
    (notes / "network.md").write_text(DISTRACTOR)
    questions = [
        {"q": "Which network is the old printer on?", "sources": ["printer.md"]},
        {"q": "Which network is the old colour printer on?", "sources": ["printer.md"]},
        {"q": "Which network is the new scanner on?"},
    ]
    path = tmp_path / "set.json"
    path.write_text(json.dumps({"notes": "notes", "questions": questions}))
    return path


def graded_rows(tmp_path, labelled_set, models: FakeModels, k: int) -> list[str]:
    """The progress lines, then the table, of ``rag eval --graded`` at floor 0.1."""
    context = Context(
        collection_name="graded",
        chroma_persist_directory=str(tmp_path / "db"),
        embedding_model="fake",
        chat_model="grader",
        score_threshold=0.1,
        k=k,
    )
    notes, questions = load_set(labelled_set)
    embeddings = models.embeddings(context)
    load_notes(context, notes, embeddings)
    progress: list[str] = []
    table = report(
        context, embeddings, questions, k=k, floors=(0.1,), graded_by=models, notify=progress.append
    )
    return progress + table.splitlines()


def test_the_graded_row_leaves_out_what_the_grader_rejects(labelled, tmp_path):
    models = FakeModels({"grade": grade_attic})
    rows = graded_rows(tmp_path, labelled, models, k=2)
    # Retrieval alone ranks the distractor first. The grader rejects it, so the printer note
    # is first among the chunks kept for the first question; for the second it rejects the
    # printer note too (nothing kept: ranked second once rejected chunks follow the kept);
    # the unanswerable question keeps nothing.
    assert "| hybrid | 0.1 | 1.000 | 0.500 | 1.000 | 0.000 |" in rows
    assert "| hybrid, graded by grader: kept only | 0.1 | 0.500 | 0.500 | 0.500 | 1.000 |" in rows
    assert "| hybrid, graded by grader: kept first | 0.1 | 1.000 | 0.750 | 0.500 | 1.000 |" in rows
    # One grade per chunk above the floor: both for the answerable questions, and for the
    # unanswerable one only the distractor (the printer note shares none of its words).
    assert models.calls("grade") == 5
    assert rows[-1].startswith(
        "graded: 5 chunks at or above the floor, one grade each (0 unreadable"
    )


def test_grading_is_asked_for_with_graded_only(labelled, tmp_path, capsys):
    models = FakeModels({"grade": grade_attic})
    db = str(tmp_path / "db")
    assert main(["eval", "--set", str(labelled), "--persist-dir", db, "-e", "fake"], models) == 0
    assert "graded by" not in capsys.readouterr().out
    assert models.calls() == 0
    argv = ["eval", "--set", str(labelled), "--persist-dir", db, "-e", "fake", "--graded"]
    assert main(argv, models) == 0
    printed = capsys.readouterr()
    assert "| hybrid, graded by " in printed.out
    assert (
        "[graded 1/3] Which network is the old printer on?: kept 1 of 2; expected note 1"
        in printed.err
    )  # progress, one line a question
    assert models.calls("grade") > 0


def test_graded_is_refused_with_answers(labelled, tmp_path, capsys):
    argv = ["eval", "--set", str(labelled), "--answers", "--graded", "-e", "fake"]
    assert main(argv, FakeModels()) != 0
    assert "--graded: only without --answers" in capsys.readouterr().err


def graded_table(tmp_path, notes: dict[str, str], questions: list[dict], grade) -> list[str]:
    """:func:`graded_rows` over ``notes`` (name -> text) and ``questions``, at k=3."""
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in notes.items():
        (folder / name).write_text(text)
    path = tmp_path / "set.json"
    path.write_text(json.dumps({"notes": "notes", "questions": questions}))
    return graded_rows(tmp_path, path, FakeModels({"grade": grade}), k=3)


def test_each_chunk_keeps_its_own_grade(tmp_path):
    # Two sections of one note: the grader keeps the second only, and only it counts as kept.
    printer = (
        "# Printer\n\n## Cable\n\nThe old printer takes USB.\n\n"
        "## Place\n\nThe old printer is in the attic.\n"
    )
    question = {"q": "Where is the old printer?", "sources": ["printer.md"]}
    rows = graded_table(tmp_path, {"printer.md": printer}, [question], grade_attic)
    assert "[graded 1/1] Where is the old printer?: kept 1 of 2; expected note 1" in rows
    # No unanswerable question: its share prints as 0.000.
    assert "| hybrid, graded by grader: kept only | 0.1 | 1.000 | 1.000 | 1.000 | 0.000 |" in rows
    assert rows[-1].startswith("graded: 2 chunks")


def test_an_unreadable_grade_keeps_its_chunk_and_is_counted(tmp_path):
    def unreadable_for_the_distractor(prompt: str) -> str:
        return "I am not sure." if "Ask the office" in prompt else grade_attic(prompt)

    questions = [{"q": "Which network is the old printer on?", "sources": ["printer.md"]}]
    notes = {"printer.md": PRINTER, "network.md": DISTRACTOR}
    rows = graded_table(tmp_path, notes, questions, unreadable_for_the_distractor)
    # The distractor, first in retrieval order, is kept as the graph keeps it: MRR 0.5.
    assert "| hybrid, graded by grader: kept only | 0.1 | 1.000 | 0.500 | 1.000 | 0.000 |" in rows
    assert "(1 unreadable twice, kept as the graph keeps them)" in rows[-1]
