"""``rag eval --sets``: every set in its role, the worst first, the test sets frozen."""

import json
import subprocess

import pytest
from langchain_core.embeddings import Embeddings

from app.cli.main import main
from app.evaluation import sets as protocol
from graph.context import Context
from graph.errors import ConfigError
from graph.index.ingest import load_notes
from tests.fakes import FakeModels

PRINTER = "# Printer\n\nThe old printer hangs off the attic switch.\n"
DISTRACTOR = "# Old printer network\n\nWhich network is the old printer on? Ask the office.\n"
BOILER = "# Boiler\n\nThe boiler is serviced every October by Hanna.\n"


def write_set(folder, notes: dict[str, str], questions: list[dict]):
    (folder / "notes").mkdir(parents=True)
    for name, text in notes.items():
        (folder / "notes" / name).write_text(text)
    path = folder / "set.json"
    path.write_text(json.dumps({"notes": "notes", "questions": questions}))
    return path


@pytest.fixture
def manifest(tmp_path):
    """Two sets: one where the expected note ranks first, one where a distractor does."""
    write_set(
        tmp_path / "tune" / "easy",
        {"boiler.md": BOILER},
        [{"q": "When is the boiler serviced?", "sources": ["boiler.md"]}],
    )
    write_set(
        tmp_path / "validation" / "hard",
        {"printer.md": PRINTER, "network.md": DISTRACTOR},
        [
            {"q": "Which network is the old printer on?", "sources": ["printer.md"]},
            {"q": "Who services the heat pump?"},
        ],
    )
    sets = [
        {"name": "easy", "role": "tune", "set": "tune/easy/set.json"},
        {"name": "hard", "role": "validation", "set": "validation/hard/set.json"},
    ]
    path = tmp_path / "sets.json"
    path.write_text(json.dumps({"sets": sets}))
    return path


def eval_argv(tmp_path, manifest, *extra: str) -> list[str]:
    db = str(tmp_path / "db")
    return ["eval", "--sets", str(manifest), "--persist-dir", db, "-e", "fake", *extra]


def table_rows(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("| ") and "---" not in line][1:]


def test_every_set_is_reported_the_worst_first(tmp_path, manifest, capsys):
    assert main(eval_argv(tmp_path, manifest), FakeModels()) == 0
    out = capsys.readouterr().out
    rows = table_rows(out)
    assert [row.split(" | ")[0] for row in rows] == ["| hard", "| easy"]
    # hard: the distractor shares more of the question's words, so the printer note is second.
    assert rows[0].startswith("| hard | validation | 2 | 1/1 | 0.500 [0.500, 0.500] | 0.000 |")
    assert rows[1].startswith("| easy | tune | 1 | 1/0 | 1.000 [1.000, 1.000] | 1.000 |")
    assert out.rstrip().endswith("worst: hard (MRR 0.500)")
    assert FakeModels().calls() == 0


def test_a_role_limits_the_sets(tmp_path, manifest, capsys):
    assert main(eval_argv(tmp_path, manifest, "--role", "tune"), FakeModels()) == 0
    rows = table_rows(capsys.readouterr().out)
    assert [row.split(" | ")[0] for row in rows] == ["| easy"]


def test_a_drop_beyond_noise_is_reported_and_fails(tmp_path, manifest, capsys):
    record = tmp_path / "before.json"
    assert main(eval_argv(tmp_path, manifest, "--record", str(record)), FakeModels()) == 0
    figures = json.loads(record.read_text())
    assert figures["hard"]["reciprocal_ranks"] == [0.5]
    assert main(eval_argv(tmp_path, manifest, "--compare", str(record)), FakeModels()) == 0
    assert "hard: MRR 0.500 -> 0.500 (+0.000" in capsys.readouterr().out
    # A baseline in which every question of "hard" ranked first: today's figures are worse.
    figures["hard"]["reciprocal_ranks"] = [1.0]
    figures["hard"]["mrr"] = 1.0
    record.write_text(json.dumps(figures))
    assert main(eval_argv(tmp_path, manifest, "--compare", str(record)), FakeModels()) == 1
    assert "hard: MRR 1.000 -> 0.500 (-0.500; paired 95 % CI [-0.500, -0.500]): WORSE" in (
        capsys.readouterr().out
    )


def test_compare_tells_noise_from_a_drop():
    def figures(rr):
        zero = dict.fromkeys(
            ("answer_mrr", "hit1", "hitk", "vector_mrr", "answerable_kept", "load_seconds"), 0.0
        )
        return protocol.SetFigures(
            name="s", role="validation", notes=1, answerable=len(rr), unanswerable=0, k=5,
            floor=0.3, mrr=sum(rr) / len(rr), mrr_interval=(0, 1), unanswerable_rejected=0.0,
            rejected_interval=(0, 1), reciprocal_ranks=rr, **zero,
        )  # fmt: skip

    before = {"s": {"mrr": 1.0, "reciprocal_ranks": [1.0] * 40}}
    # One question of forty one place lower: lower, but within the paired bootstrap's noise.
    one = protocol.compare([figures([1.0] * 39 + [0.5])], before)
    assert one == [
        "s: MRR 1.000 -> 0.988 (-0.012; paired 95 % CI [-0.037, +0.000]): lower, within noise"
    ]
    # Eight of forty lower: worse.
    eight = protocol.compare([figures([1.0] * 32 + [0.5] * 8)], before)
    assert eight[0].endswith("WORSE beyond noise")
    assert protocol.compare([figures([1.0])], before) == ["s: no comparable baseline"]


def test_the_test_sets_need_test_and_the_others_never_run_with_it(tmp_path, manifest, capsys):
    sets = json.loads(manifest.read_text())
    sets["sets"][1]["role"] = "test"
    manifest.write_text(json.dumps(sets))
    everything = protocol.read_manifest(manifest)
    assert [s.name for s in protocol.selected(everything, [], test=False)] == ["easy"]
    with pytest.raises(ConfigError, match="only with --test"):
        protocol.selected(everything, ["test"], test=False)
    # A test set without a recorded digest is not frozen: refused.
    with pytest.raises(ConfigError, match="no recorded sha256"):
        protocol.selected(everything, [], test=True)


def test_a_frozen_set_that_changed_is_refused(tmp_path, manifest):
    sets = json.loads(manifest.read_text())
    sets["sets"][1]["role"] = "test"
    hard = protocol.read_manifest(manifest)[1]
    sets["sets"][1]["sha256"] = protocol.set_digest(hard)
    manifest.write_text(json.dumps(sets))
    frozen = protocol.read_manifest(manifest)
    assert [s.name for s in protocol.selected(frozen, [], test=True)] == ["hard"]
    (tmp_path / "validation" / "hard" / "notes" / "printer.md").write_text(PRINTER + "edited\n")
    with pytest.raises(ConfigError, match="changed since it was frozen"):
        protocol.selected(frozen, [], test=True)


def test_a_test_run_records_totals_once_per_commit(tmp_path, manifest, capsys, monkeypatch):
    sets = json.loads(manifest.read_text())
    sets["sets"][1]["role"] = "test"
    sets["sets"][1]["sha256"] = protocol.set_digest(protocol.read_manifest(manifest)[1])
    manifest.write_text(json.dumps(sets))
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    monkeypatch.chdir(repo)
    record = tmp_path / "runs.json"
    argv = eval_argv(tmp_path, manifest, "--test", "--record", str(record))
    assert main(argv, FakeModels()) == 0
    out = capsys.readouterr().out
    assert [row.split(" | ")[0] for row in table_rows(out)] == ["| hard"]
    (run,) = json.loads(record.read_text())
    assert run["embedding_model"] == "fake" and len(run["commit"]) == 40
    assert (run["skip_question_words"], run["fusion_ties"]) == (True, "bm25")  # how it ranked
    (totals,) = run["sets"]
    assert totals["mrr"] == 0.5 and "reciprocal_ranks" not in totals
    assert totals["stemmed"] is True  # how the set's collection matched its words
    assert totals["sha256"] == sets["sets"][1]["sha256"]
    # Measured again at the same commit: refused, nothing appended.
    assert main(argv, FakeModels()) == 2
    assert "already measured at commit" in capsys.readouterr().err
    assert len(json.loads(record.read_text())) == 1
    # Uncommitted changes: refused (the record names a commit).
    (repo / "tracked.txt").write_text("x")
    subprocess.run([*git, "add", "tracked.txt"], check=True)
    assert main(argv, FakeModels()) == 2
    assert "no uncommitted change" in capsys.readouterr().err


def test_intervals():
    assert protocol.wilson_interval(0, 0) == (0.0, 0.0)
    low, high = protocol.wilson_interval(9, 10)
    assert (round(low, 3), round(high, 3)) == (0.596, 0.982)
    assert protocol.bootstrap_mean_interval([1.0] * 10) == (1.0, 1.0)
    low, high = protocol.bootstrap_mean_interval([1.0] * 9 + [0.0])
    assert low < 0.9 < high


def test_public_distractors_are_the_installed_packages_descriptions(tmp_path):
    folder = protocol.public_distractors(tmp_path / "public")
    notes = sorted(folder.rglob("*.md"))
    # langgraph's own description is markdown and long: it is one of them, cut to the limit.
    assert folder / "python-packages" / "langgraph.md" in notes
    assert all(
        protocol.PUBLIC_NOTE_MIN_CHARS <= len(n.read_text()) <= protocol.PUBLIC_NOTE_CHARS
        for n in notes
    )
    (folder / "python-packages" / "not-installed.md").write_text("stale")
    protocol.public_distractors(tmp_path / "public")
    assert not (folder / "python-packages" / "not-installed.md").exists()


def test_the_project_manifest_is_well_formed():
    from pathlib import Path

    manifest = Path(__file__).parents[2] / "eval_sets" / "sets.json"
    sets = protocol.read_manifest(manifest)
    assert {s.role for s in sets} <= set(protocol.ROLES)
    for eval_set in sets:
        assert eval_set.path.is_file(), eval_set.name
        if eval_set.role == "test":
            protocol.check_frozen(eval_set)


def answer_manifest(tmp_path):
    """One tune set and one validation set, each with an answerable question and a near miss."""
    questions = [
        {
            "id": "boiler",
            "q": "When is the boiler serviced?",
            "sources": ["boiler.md"],
            "facts": [["October"]],
            "kind": "single",
        },
        {
            "id": "pump",
            "q": "When is the heat pump serviced?",
            "answerable": False,
            "kind": "near-miss",
            "near": "boiler.md gives the boiler's month",
        },
    ]
    write_set(tmp_path / "tune" / "home", {"boiler.md": BOILER}, questions)
    # The flat's boiler is serviced in November: an answer saying October misses the fact.
    flat = [dict(questions[0], facts=[["November"]]), questions[1]]
    write_set(tmp_path / "validation" / "flat", {"boiler.md": BOILER.replace("Oct", "Nov")}, flat)
    sets = [
        {"name": "home", "role": "tune", "set": "tune/home/set.json"},
        {"name": "flat", "role": "validation", "set": "validation/flat/set.json"},
    ]
    path = tmp_path / "sets.json"
    path.write_text(json.dumps({"sets": sets}))
    return path


def test_answers_are_reported_per_set_and_only_a_tune_set_question_by_question(tmp_path, capsys):
    manifest = answer_manifest(tmp_path)
    # Every chunk graded relevant, every answer the same.
    models = FakeModels(
        {"grade": '{"score": "yes"}', "generate": "The boiler is serviced in October [1]."}
    )
    record = tmp_path / "answers.json"
    argv = eval_argv(tmp_path, manifest, "--answers", "--design", "graph", "--record", str(record))
    assert main(argv, models) == 0
    out, err = capsys.readouterr()
    shares, stages = out.split("\nworst: ")
    rows = table_rows(shares)
    assert [row.split(" | ")[:3] for row in rows] == [["| flat", "validation", "graph"],
                                                      ["| home", "tune", "graph"]]  # fmt: skip
    assert "| 0/1 (0.00) [0.00, 0.79] | 1/1 (1.00) [0.21, 1.00] |" in rows[0]
    assert "| 1/1 (1.00) [0.21, 1.00] | 1/1 (1.00) [0.21, 1.00] |" in rows[1]
    assert stages.startswith("flat, graph (0.00)\n")
    # Where each was lost: the flat's answer misses its fact (the writer's), both near misses
    # were answered; the lost stages, then the stopped ones and "answered", error first.
    # With these fake embeddings the near misses score below the floor.
    header, *counted = [row.split(" | ")[2:-1] for row in table_rows("| x\n" + stages)]
    lost = {row.split(" | ")[0]: row.split(" | ")[2:-1] for row in table_rows(stages)}
    columns = dict(zip(header, zip(lost["| flat"], lost["| home"])))
    assert {name: counts for name, counts in columns.items() if counts != ("0", "0")} == {
        "lost: writer": ("1", "0"),  # the flat's answer says October: a fact missing
        "stopped: floor": ("1", "1"),
    }
    # Progress question by question for the tune set only.
    assert "[graph 1/2]" in err and err.count("[graph 1/2]") == 1
    recorded = json.loads(record.read_text())
    assert recorded["flat/graph"]["right"] == [0, 1]


def project_sets():
    from pathlib import Path

    manifest = Path(__file__).parents[2] / "eval_sets" / "sets.json"
    seen, sets = set(), []
    for eval_set in protocol.read_manifest(manifest):
        if eval_set.path not in seen:
            seen.add(eval_set.path)
            sets.append(eval_set)
    return sets


@pytest.mark.parametrize("eval_set", project_sets(), ids=lambda s: s.name)
def test_every_fact_of_a_set_is_written_in_its_sources(eval_set):
    from app.evaluation.answers import fact_found, load_questions

    (folder,) = protocol._notes_folders(eval_set)[:1]
    questions = load_questions(eval_set.path)
    assert len({q.id for q in questions}) == len(questions)
    for q in questions:
        assert q.answerable == bool(q.sources), q.id
        texts = [(folder / source).read_text() for source in q.sources]  # each source exists
        for fact in q.facts:
            assert any(fact_found(text, fact) for text in texts), (q.id, fact)


def test_a_chunk_holding_every_fact_answers_though_its_note_is_not_named(tmp_path, capsys):
    # The fact is in the daily note the labels name and in the project note they do not.
    notes = {
        "daily.md": "# Tuesday\n\nPaid 4,200. Walked the dog.\n",
        "roof.md": "# Roof\n\nWhat did the roofer charge in the end? The roofer charged 4,200.\n",
    }
    question = {
        "q": "What did the roofer charge in the end?",
        "sources": ["daily.md"],
        "facts": [["4,200"]],
    }
    write_set(tmp_path / "tune" / "roof", notes, [question])
    manifest = tmp_path / "sets.json"
    entry = {"name": "roof", "role": "tune", "set": "tune/roof/set.json"}
    manifest.write_text(json.dumps({"sets": [entry]}))
    assert main(eval_argv(tmp_path, manifest), FakeModels()) == 0
    (row,) = table_rows(capsys.readouterr().out)
    cells = row.split(" | ")
    # The roof note shares more of the question's words: it ranks first, and holds the fact.
    assert cells[4].startswith("0.500") and cells[7] == "1.000"


def test_a_set_whose_notes_moved_gets_a_collection_of_its_own(tmp_path, manifest, capsys):
    assert main(eval_argv(tmp_path, manifest, "--role", "tune"), FakeModels()) == 0
    moved = tmp_path / "validation" / "easy"
    (tmp_path / "tune" / "easy").rename(moved)
    sets = json.loads(manifest.read_text())
    sets["sets"][0]["set"] = "validation/easy/set.json"
    manifest.write_text(json.dumps(sets))
    assert main(eval_argv(tmp_path, manifest, "--role", "tune"), FakeModels()) == 0
    assert "easy" in capsys.readouterr().out


def test_only_names_the_sets_and_never_reaches_a_test_set_without_test(tmp_path, manifest, capsys):
    assert main(eval_argv(tmp_path, manifest, "--only", "hard"), FakeModels()) == 0
    assert [row.split(" | ")[0] for row in table_rows(capsys.readouterr().out)] == ["| hard"]
    assert main(eval_argv(tmp_path, manifest, "--only", "nosuch"), FakeModels()) == 2
    assert "no set named nosuch" in capsys.readouterr().err
    sets = json.loads(manifest.read_text())
    sets["sets"][1]["role"] = "test"
    manifest.write_text(json.dumps(sets))
    assert main(eval_argv(tmp_path, manifest, "--only", "hard"), FakeModels()) == 2
    assert "only with --test" in capsys.readouterr().err


def test_the_lab_measures_sets_without_the_command_line(tmp_path):
    """What a notebook or a benchmark does: app.evaluation alone, with its own callbacks."""
    from app.evaluation.answer_options import AnswerOptions
    from graph.context import Context

    manifest = answer_manifest(tmp_path)
    models = FakeModels(
        {"grade": '{"score": "yes"}', "generate": "The boiler is serviced in October [1]."}
    )
    chosen = protocol.selected(protocol.read_manifest(manifest), [], False, [])
    context = Context(chroma_persist_directory=str(tmp_path / "db"), embedding_model="fake")
    lines, steps = [], []
    run = protocol.evaluate_sets(
        chosen,
        context,
        models,
        AnswerOptions(split="all", designs=("graph",)),
        notify=lines.append,
        progress=lambda done, total, note: steps.append((done, total, note)),
    )
    assert [(f.name, f.design) for f in run.figures] == [("home", "graph"), ("flat", "graph")]
    assert [f.right for f in run.figures] == [(1, 1), (0, 1)]
    # A line per set, and question by question for the tune set only; a step per question.
    assert lines[0] == "[set 1/2] home (tune)" and lines[-1] == "[set 2/2] flat (validation)"
    assert sum(line.startswith("[graph ") for line in lines) == 2
    assert steps == [(1, 2, "graph"), (2, 2, "graph")] * 2
    assert run.context.collection_name.startswith("evalset-fake-flat-")
    record = protocol.figures_record(run.figures, answers=True)
    assert set(record) == {"home/graph", "flat/graph"}


class ScoresEveryChunk(Embeddings):
    """Every question scores every chunk 0.28: between all-minilm's German floor and its own."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [0.28, 0.96, 0.0]


def test_each_question_is_held_to_the_floor_the_graph_holds_it_to(tmp_path):
    write_set(
        tmp_path / "validation" / "mixed",
        {"boiler.md": BOILER},
        [
            {"q": "Who services the heat pump?"},
            {"q": "Wer wartet die Wärmepumpe im Keller?"},
        ],
    )
    sets = [{"name": "mixed", "role": "validation", "set": "validation/mixed/set.json"}]
    (tmp_path / "sets.json").write_text(json.dumps({"sets": sets}))
    eval_set = protocol.read_manifest(tmp_path / "sets.json")[0]
    context = Context(
        chroma_persist_directory=str(tmp_path / "db"),
        collection_name="mixed",
        embedding_model="all-minilm",
    )
    figures = protocol.measure(eval_set, context, ScoresEveryChunk(), load_notes)
    # The English question finds nothing above 0.3; the German one's 0.25 keeps the boiler.
    assert figures.unanswerable_rejected == 0.5
    assert figures.floor == 0.25
