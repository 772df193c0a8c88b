"""The mixed retrieval set: the labelled questions asked of their notes plus unrelated ones."""

import json
from pathlib import Path

import pytest

from app.cli.main import main
from app.evaluation.retrieval import MODES, load_set, merge_folders, report
from graph.context import Context
from graph.errors import ConfigError
from graph.index.ingest import load_notes
from tests.fakes import FakeModels, KeywordEmbeddings

TESTS = Path(__file__).resolve().parents[2]
PLAIN, MIXED = TESTS / "retrieval_eval.json", TESTS / "retrieval_eval_distractors.json"
DISTRACTORS = TESTS / "distractor_notes"

#: Per answerable question, words of its answer (folded to lower case) that its source notes
#: hold and no distractor may hold: a distractor holding them could answer it too.
TELLING = {
    "Which build backend do I use in pyproject.toml?": ["setuptools"],
    "Why should I never reuse a version number when uploading a package?": ["re-upload"],
    "How do I start an expensive server only once for all tests?": ['scope="session"'],
    "What does Hypothesis do with a failing example?": ["hypothesis"],
    "Which network is the old printer on at home?": ["attic"],
    "How do visitors get onto the guest Wi-Fi at the office?": ["guest ssid", "reception"],
    "Which UDP port does WireGuard listen on?": ["51820", "wireguard"],
    "Can I install printer drivers myself at work?": ["print server"],
    "How often do I feed the sourdough starter?": ["sourdough"],
    "What hydration do I use for pizza dough?": ["pizza"],
    "At what temperature and for how long do I bake the bread in the Dutch oven?": ["dutch oven"],
    "How long does the pizza bake on the steel?": ["pizza"],
    "How much should weekly running volume increase?": ["weekly volume"],
    "When do I take gels during the half marathon?": ["a gel every", "half marathon"],
    "How far back were the cleats moved in the bike fit?": ["cleat"],
    "Every how many km do I lube the chain, 300?": ["300 km", "lube"],
    "Is the Japan Rail Pass worth it for Tokyo to Kyoto?": ["rail pass"],
    "When should I visit Fushimi Inari?": ["fushimi"],
    "What must I do with a regional train ticket in Italy before boarding?": ["green machine"],
    "How do I get into the Vatican Museums without queueing?": ["vatican"],
    "How many days of home office did I claim in the 2024 taxes?": [
        "home office deduction",
        "120 days",
    ],
    "When was the final 2024 tax payment due?": ["1,240", "31 july 2025"],
    "How much is the monthly rent?": ["rent is", "1,150"],
    "What percentage of salary goes to savings on payday?": ["payday", "20 % of the net salary"],
    "When will billing move to the new queue?": ["billing", "new queue"],
    "Who owns the rollback plan for the Q3 migration?": ["rollback plan"],
    "What is a shutdown ritual?": ["shutdown"],
    "How long was the social media experiment in Deep Work?": ["social media", "thirty days"],
    "What should I do before getting on a local train in Italy?": ["green machine"],
    "How do I avoid calf pain on the bike?": ["cleat", "calf"],
    "What exercises did the physio give me for the calf?": ["heel drop", "calf"],
    "Who handles things if the queue migration goes wrong?": ["rollback plan", "new queue"],
    "What happens if nobody acknowledges a page?": [
        "acknowledged within",
        "escalates to the secondary",
    ],
    "Why did I stop drinking coffee in the afternoon?": ["coffee after", "1 pm"],
    "When can the tomato plants go outside?": ["plant tomatoes out", "last frost"],
    "What pressure should the boiler show?": ["boiler", "1.5 bar"],
    "How many shirts do I pack for a two week trip?": ["shirts", "merino"],
    "Where should an expensive test server be started so it runs once?": ['scope="session"'],
    "How do I stop thinking about work in the evening?": ["shutdown", "work thoughts"],
    "What keeps my savings growing without effort?": ["payday", "savings account"],
    "What is the best way to see the famous shrine gates without tourists?": ["fushimi"],
    "How warm should the bedroom be?": ["18 °c", "blackout"],
    "What should I do when the compost smells bad?": ["compost"],
}


def text(path: Path) -> str:
    """The note in lower case, each run of whitespace one space (lines wrap anywhere)."""
    return " ".join(path.read_text().lower().split())


def distractors() -> dict[str, str]:
    return {p.relative_to(DISTRACTORS).as_posix(): text(p) for p in DISTRACTORS.rglob("*.md")}


def test_the_mixed_set_asks_the_labelled_questions_of_both_folders():
    plain, mixed = json.loads(PLAIN.read_text()), json.loads(MIXED.read_text())
    assert mixed["questions"] == plain["questions"]
    assert mixed["notes"] == [plain["notes"], DISTRACTORS.name]
    assert len(distractors()) >= 7 * len(list((TESTS / plain["notes"]).rglob("*.md")))


def test_no_distractor_holds_the_answer_to_a_question():
    notes = TESTS / "eval_notes"
    answerable = [q for q in json.loads(PLAIN.read_text())["questions"] if q["sources"]]
    assert {q["q"] for q in answerable} == set(TELLING)
    others = distractors()
    for question in answerable:
        for mark in TELLING[question["q"]]:
            assert any(mark in text(notes / s) for s in question["sources"]), mark
            holders = [path for path, words in others.items() if mark in words]
            assert not holders, (question["q"], mark, holders)


def test_the_folders_are_evaluated_as_one_with_their_own_paths(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder, questions = load_set(MIXED)
    assert folder.is_relative_to(tmp_path)
    found = {p.relative_to(folder).as_posix() for p in folder.rglob("*.md")}
    expected = set(distractors()) | {
        p.relative_to(TESTS / "eval_notes").as_posix() for p in (TESTS / "eval_notes").rglob("*.md")
    }
    assert found == expected
    assert all(set(q.sources) <= found for q in questions)
    assert load_set(MIXED)[0] == folder  # the same folder each time: loads are incremental


def test_merging_removes_what_left_and_refuses_a_path_in_two_folders(tmp_path):
    one, two, target = tmp_path / "one", tmp_path / "two", tmp_path / "merged"
    (one / "a").mkdir(parents=True)
    (two / "b").mkdir(parents=True)
    (one / "a" / "x.md").write_text("x")
    (two / "b" / "y.md").write_text("y")
    merge_folders([one, two], target)
    (two / "b" / "y.md").unlink()
    (two / "b" / "z.md").write_text("z")
    merge_folders([one, two], target)
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*.md")) == [
        "a/x.md",
        "b/z.md",
    ]
    (two / "a").mkdir()
    (two / "a" / "x.md").write_text("another x")
    with pytest.raises(ConfigError, match="a/x.md"):
        merge_folders([one, two], target)


def test_each_set_gets_a_collection_of_its_own(tmp_path, capsys):
    for name in ("first", "second"):  # two sets, each with a notes folder of its own
        notes = tmp_path / f"{name}-notes"
        notes.mkdir()
        (notes / "note.md").write_text(f"# {name.title()}\n\nThe {name} note says hello.\n")
        labelled = {"notes": notes.name, "questions": [{"q": "What says hello?"}]}
        (tmp_path / f"{name}.json").write_text(json.dumps(labelled))
    db = str(tmp_path / "db")
    for name in ("first", "second"):
        argv = ["eval", "--set", str(tmp_path / f"{name}.json"), "--persist-dir", db, "-e", "fake"]
        assert main(argv, models=FakeModels()) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["collections", "--persist-dir", db, "--json"], models=FakeModels()) == 0
    names = {row["name"] for row in json.loads(capsys.readouterr().out)}
    assert names == {"eval-fake-first", "eval-fake-second"}


def test_each_question_is_embedded_once_for_every_mode(tmp_path):
    notes, questions = load_set(PLAIN)
    context = Context(
        collection_name="labelled", chroma_persist_directory=str(tmp_path), embedding_model="fake"
    )
    embeddings = KeywordEmbeddings()
    load_notes(context, notes, embeddings)
    embeddings.calls = 0
    table = report(context, embeddings, questions, k=3)
    assert len(MODES) == 3 and table.count("| hybrid |") == 4
    assert embeddings.calls == len(questions)  # one model call a question, not one a mode
