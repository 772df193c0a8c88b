import base64
import json
import os
import signal
import threading
import time

import pytest
from ollama import ResponseError

from app.cli.main import main
from graph.errors import ConfigError, ServiceError
from tests.fakes import FakeModels, KeywordEmbeddings


@pytest.fixture
def fake_ollama(monkeypatch):
    models = FakeModels()
    return models


@pytest.fixture
def db(tmp_path):
    return ["--persist-dir", str(tmp_path / "db"), "-e", "fake-embed"]


def test_load_prints_counts_and_reload_is_a_no_op(fake_ollama, sample_notes, db, capsys):
    assert main(["load", "-f", str(sample_notes), "-n", "notes", *db], models=fake_ollama) == 0
    assert "notes: 5 added, 0 updated, 0 removed, 0 unchanged" in capsys.readouterr().out
    calls = fake_ollama.embedder.calls
    assert main(["load", "-f", str(sample_notes), "-n", "notes", *db], models=fake_ollama) == 0
    assert "0 added, 0 updated, 0 removed, 5 unchanged" in capsys.readouterr().out
    assert fake_ollama.embedder.calls == calls


def test_load_no_stemming_is_passed_to_the_load_and_kept(fake_ollama, sample_notes, db, capsys):
    from graph.context import Context
    from graph.index.vectorstore import IndexInfo, get_collection

    def stemmed() -> bool:
        context = Context(chroma_persist_directory=db[1], collection_name="notes")
        return IndexInfo.of(get_collection(context)).stemmed

    load = ["load", "-f", str(sample_notes), "-n", "notes", *db]
    assert main([*load, "--no-stemming"], models=fake_ollama) == 0
    assert stemmed() is False
    assert main(load, models=fake_ollama) == 0
    assert stemmed() is False and "5 unchanged" in capsys.readouterr().out
    assert main([*load, "--stemming"], models=fake_ollama) == 0
    assert stemmed() is True and "matches words by their stem" in capsys.readouterr().err


def test_ingestion_runs_offline_with_the_packaged_spacy_model(
    sample_notes, db, capsys, fake_ollama
):
    # sockets are disabled for every unit test: a runtime download would fail this load
    import spacy

    assert spacy.util.is_package("en_core_web_sm")
    assert main(["load", "-f", str(sample_notes), "-n", "notes", *db], models=fake_ollama) == 0


def test_ask_streams_answer_then_sources(fake_ollama, sample_notes, db, capsys):
    main(["load", "-f", str(sample_notes), "-n", "notes", *db], models=fake_ollama)
    capsys.readouterr()
    code = main(
        [
            "ask",
            "-q",
            "How do I practise whiteboarding interviews?",
            "-n",
            "notes",
            "--threshold",
            "0.1",
            *db,
        ],
        models=fake_ollama,
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("Based on your notes: the answer is in the context.\n")
    assert out.count("Based on your notes") == 1
    # the section asked about first: it ties with the note's top section in the fusion, and
    # ties follow BM25's order
    assert "\n\nSources:\n  [1] career/interviews.md — Interviews > Whiteboarding\n" in out


def test_ask_json_and_verbose(fake_ollama, sample_notes, db, capsys):
    main(["load", "-f", str(sample_notes), "-n", "notes", *db], models=fake_ollama)
    capsys.readouterr()
    question = ["ask", "-q", "sourdough starter feeding", "-n", "notes", "--threshold", "0.1"]
    assert main([*question, "--json", *db], models=fake_ollama) == 0
    state = json.loads(capsys.readouterr().out)
    assert state["route"] == "retrieve"
    assert state["steps"][0].startswith("route: retrieve")
    assert {"path": "personal/sourdough.md", "heading": "Sourdough bread > Starter"} in state[
        "sources"
    ]
    assert main([*question, "-v", *db], models=fake_ollama) == 0
    err = capsys.readouterr().err
    assert "[route: retrieve" in err and "[grade_documents: personal/sourdough.md" in err


def test_calculator_works_without_ollama(db, capsys):
    # no fake: the real Ollama provider, and sockets are disabled — nothing may be called
    code = main(["ask", "-q", "calculate: 456*4343 - 56/(443-11+4)", "-n", "notes", *db])
    assert code == 0
    assert capsys.readouterr().out.strip() == "456*4343 - 56/(443-11+4) ≈ 1980407.87155963"


def test_no_answer_is_a_clean_exit(fake_ollama, db, capsys):
    assert main(["ask", "-q", "what about sourdough?", "-n", "notes", *db], models=fake_ollama) == 0
    assert "empty or does not exist" in capsys.readouterr().out


def test_query_shows_scores(fake_ollama, sample_notes, db, capsys):
    main(["load", "-f", str(sample_notes), "-n", "notes", *db], models=fake_ollama)
    capsys.readouterr()
    assert (
        main(
            ["query", "-q", "wireguard port forwarding", "-n", "notes", "-r", "3", *db],
            models=fake_ollama,
        )
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert (
        out[0].startswith("1. ") and "tech/networking.md — Home network > Port forwarding" in out[0]
    )
    assert len([line for line in out if line[:2] in ("1.", "2.", "3.")]) == 3
    assert fake_ollama.calls() == 0  # no LLM
    # A chunk retrieval held below the floor is marked so; one it kept is not.
    for floor, marked in (("0.0", 0), ("0.99", 3)):
        argv = ["query", "-q", "wireguard port forwarding", "-n", "notes", "-r", "3", *db]
        assert main([*argv, "--threshold", floor], models=fake_ollama) == 0
        ranked = [
            line for line in capsys.readouterr().out.splitlines() if line[:2] in ("1.", "2.", "3.")
        ]
        assert sum(line.endswith("(below threshold)") for line in ranked) == marked


def test_collections_and_drop(fake_ollama, sample_notes, db, capsys, monkeypatch):
    main(["load", "-f", str(sample_notes), "-n", "notes", *db], models=fake_ollama)
    capsys.readouterr()
    assert main(["collections", *db], models=fake_ollama) == 0
    name, notes, chunks, model, words = capsys.readouterr().out.rstrip("\n").split("\t")
    assert (name, notes, model, words) == ("notes", "5 notes", "fake-embed", "words stemmed")
    assert chunks.endswith(" chunks")
    main(["load", "-f", str(sample_notes), "-n", "notes", "--no-stemming", *db], models=fake_ollama)
    capsys.readouterr()
    assert main(["collections", *db], models=fake_ollama) == 0
    assert capsys.readouterr().out.rstrip("\n").endswith("\tfake-embed\twords as written")
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert main(["drop", "-n", "notes", *db], models=fake_ollama) == 2
    assert "--yes" in capsys.readouterr().err
    assert main(["drop", "-n", "notes", "--yes", *db], models=fake_ollama) == 0
    assert main(["collections", *db], models=fake_ollama) == 0
    assert "no collections" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["load", "-f", "/nonexistent/notes", "-n", "notes"], 2, "does not exist"),
        (["load", "-f", ".", "-n", "x"], 2, "invalid collection name"),
        (["ask", "-q", "hi", "-n", "notes", "-k", "0"], 2, "k must be between 1 and 50"),
        (["ask", "-q", "hi", "-n", "notes", "--threshold", "2"], 2, "score_threshold"),
        (["drop", "-n", "missing", "--yes"], 2, "no collection named 'missing'"),
        (["query", "-q", "hi", "-n", "nosuch"], 2, "no collection named 'nosuch'"),
        (["query", "-q", "hi", "-n", "nosuch", "--json"], 2, "no collection named 'nosuch'"),
    ],
)
def test_errors_are_one_line_with_exit_code(argv, code, message, db, capsys, fake_ollama):
    assert main([*argv, *db], models=fake_ollama) == code
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_model_not_pulled_gives_pull_hint(sample_notes, db, capsys, monkeypatch):
    class NotPulled(KeywordEmbeddings):
        def embed_documents(self, texts):
            raise ResponseError(
                '{"error": "model \\"nomic-embed-text\\" not found, try pulling it first"}', 404
            )

    models = FakeModels()
    models.embedder = NotPulled()
    code = main(
        ["load", "-f", str(sample_notes), "-n", "notes", "--persist-dir", db[1]], models=models
    )
    err = capsys.readouterr().err
    assert code == 3
    assert "run `ollama pull nomic-embed-text`" in err and "Traceback" not in err


def test_ollama_down_message_names_the_url(sample_notes, db, capsys, monkeypatch):
    class Down(KeywordEmbeddings):
        def embed_documents(self, texts):
            raise ConnectionError("Failed to connect to Ollama.")

    models = FakeModels()
    models.embedder = Down()
    code = main(
        ["load", "-f", str(sample_notes), "-n", "notes", *db, "--ollama-host", "127.0.0.1:9"],
        models=models,
    )
    err = capsys.readouterr().err
    assert code == 3
    assert "cannot reach Ollama at http://127.0.0.1:9" in err and "ollama serve" in err


@pytest.mark.parametrize(
    ("cause", "code"),
    [(ServiceError("Chroma is not answering"), 3), (ConfigError("the index is not usable"), 2)],
)
def test_an_error_a_framework_wrapped_keeps_its_exit_code(sample_notes, db, capsys, cause, code):
    class Wrapping(KeywordEmbeddings):
        def embed_documents(self, texts):
            raise RuntimeError("binding failed") from cause

    models = FakeModels()
    models.embedder = Wrapping()
    assert main(["load", "-f", str(sample_notes), "-n", "notes", *db], models=models) == code
    err = capsys.readouterr().err
    assert str(cause) in err and "binding failed" not in err and "Traceback" not in err


def test_interrupt_exits_130_with_message(sample_notes, db, capsys, monkeypatch):
    class Interrupt(KeywordEmbeddings):
        def embed_documents(self, texts):
            raise KeyboardInterrupt

    models = FakeModels()
    models.embedder = Interrupt()
    assert main(["load", "-f", str(sample_notes), "-n", "notes", *db], models=models) == 130
    assert "run the command again to finish" in capsys.readouterr().err


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["ask"])
    assert exc.value.code == 2


def test_ask_with_input_image(monkeypatch, sample_notes, db, capsys):
    models = FakeModels(capabilities={"llava": {"vision"}})
    image = str(sample_notes / "tech" / "img" / "network.png")
    code = main(
        [
            "ask",
            "-q",
            "based on the image: what colour?",
            "-n",
            "notes",
            "--vision-model",
            "llava",
            "--image",
            image,
            *db,
        ],
        models=models,
    )
    assert code == 0
    assert capsys.readouterr().out.startswith("The image shows a small network diagram.")
    sent = models.prompts("vision")[0]
    assert "what colour?" in sent
    with open(image, "rb") as handle:  # the file's bytes reached the model, as base64
        assert models.images("vision") == [[base64.b64encode(handle.read()).decode()]]


def test_ask_with_unreadable_image_is_a_usage_error(fake_ollama, db, capsys):
    fake_ollama.caps = {"llava": {"vision"}}
    code = main(
        [
            "ask",
            "-q",
            "based on the image: what?",
            "-n",
            "notes",
            "--vision-model",
            "llava",
            "--image",
            "/no/such/file.png",
            *db,
        ],
        models=fake_ollama,
    )
    assert code == 2
    assert "cannot read image /no/such/file.png" in capsys.readouterr().err


def test_progress_bar_only_on_a_terminal(fake_ollama, sample_notes, db, capsys, monkeypatch):
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    assert main(["load", "-f", str(sample_notes), "-n", "notes", *db], models=fake_ollama) == 0
    err = capsys.readouterr().err
    assert "\rembedding: 100%" in err and "chunk/s]\n" in err
    monkeypatch.setattr("sys.stderr.isatty", lambda: False)
    assert (
        main(
            [
                "load",
                "-f",
                str(sample_notes),
                "-n",
                "notes",
                "--rebuild",
                "--chunk-size",
                "800",
                "--chunk-overlap",
                "100",
                *db,
            ],
            models=fake_ollama,
        )
        == 0
    )
    assert "embedding: " not in capsys.readouterr().err


def test_unusable_index_folder_is_a_one_line_error(fake_ollama, sample_notes, tmp_path, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the index folder should be")
    args = ["--persist-dir", str(blocker), "-e", "fake-embed"]
    assert main(["load", "-f", str(sample_notes), "-n", "notes", *args], models=fake_ollama) == 2
    err = capsys.readouterr().err
    assert f"cannot use the index folder {blocker}" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2


def test_escape_sequences_in_notes_never_reach_the_terminal(fake_ollama, tmp_path, db, capsys):
    notes = tmp_path / "hostile"
    notes.mkdir()
    (notes / "trap.md").write_text(
        "# Trap\n\nwireguard port \x1b]0;pwned\x07 and \x1b[2J clear screen \x9b31m here\n"
    )
    assert main(["load", "-f", str(notes), "-n", "notes", *db], models=fake_ollama) == 0
    assert main(["query", "-q", "wireguard port", "-n", "notes", *db], models=fake_ollama) == 0
    fake_ollama.answers["generate"] = "The note says \x1b[31mred\x1b[0m things"
    assert main(["ask", "-q", "wireguard port", "--threshold", "0", *db], models=fake_ollama) == 0
    out = capsys.readouterr().out
    assert "wireguard port" in out and "The note says [31mred[0m things" in out
    assert not any(ch in out for ch in "\x1b\x07\x9b")


def test_load_and_collections_count_notes_alike(fake_ollama, db, capsys):
    from pathlib import Path

    vault = Path(__file__).resolve().parents[1] / "obsidian_vault"
    assert main(["load", "-f", str(vault), "-n", "vault", *db], models=fake_ollama) == 0
    loaded = capsys.readouterr().out
    assert "7 added" in loaded and "1 of the notes empty, nothing to search" in loaded
    assert main(["collections", *db], models=fake_ollama) == 0
    listed = capsys.readouterr().out
    assert listed.startswith("vault\t6 notes + 1 empty\t9 chunks\t")  # 6 + 1 = 7 added
    assert main(["collections", "--json", *db], models=fake_ollama) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert (row["notes"], row["empty_notes"]) == (6, 1)
    assert main(["load", "-f", str(vault), "-n", "vault", *db], models=fake_ollama) == 0
    assert "7 unchanged" in capsys.readouterr().out  # the empty note is tracked


def test_a_folder_in_the_wrong_case_is_named_in_the_right_one(fake_ollama, db, capsys):
    from pathlib import Path

    vault = Path(__file__).resolve().parents[1] / "obsidian_vault"
    main(["load", "-f", str(vault), "-n", "vault", *db], models=fake_ollama)
    capsys.readouterr()
    question = ["-q", "sourdough", "-n", "vault", *db]
    assert main(["query", *question, "--folder", "baking"], models=fake_ollama) == 0
    assert capsys.readouterr().out == (
        "no note matches the filter (folder baking/); did you mean folder Baking/?\n"
    )
    assert main(["ask", *question, "--folder", "BAKING"], models=fake_ollama) == 0
    assert capsys.readouterr().out.rstrip().endswith("Did you mean folder Baking/?")
    assert main(["query", *question, "--folder", "nothing"], models=fake_ollama) == 0
    assert "did you mean" not in capsys.readouterr().out


def test_ctrl_c_in_ask_ends_the_model_work_within_a_second(sample_notes, db, capsys, monkeypatch):
    # Grading: several calls at once in other threads; the interrupt lands in the main one.
    # Ctrl-C as a terminal delivers it, whatever an earlier test in this worker left set.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    assert main(["load", "-f", str(sample_notes), "-n", "notes", *db], models=FakeModels()) == 0
    monkeypatch.setenv("RAG_GRADE_CONCURRENCY", "2")
    slow = FakeModels(latency=2.0)
    pressed = {}

    def press_ctrl_c_while_grading():
        deadline = time.monotonic() + 20
        while slow.calls("grade") < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        pressed["calls"], pressed["at"] = slow.calls(), time.monotonic()
        os.kill(os.getpid(), signal.SIGINT)  # as a terminal's Ctrl-C: to the process

    threading.Thread(target=press_ctrl_c_while_grading, daemon=True).start()
    question = "How do I practise whiteboarding interviews?"
    argv = ["ask", "-q", question, "-n", "notes", "--threshold", "0.1", "-k", "6", *db]
    code = main(argv, models=slow)
    returned = time.monotonic()
    assert code == 130 and "interrupted" in capsys.readouterr().err
    assert returned - pressed["at"] < 1.0, "rag ask waited for the model calls in flight"
    assert slow.concurrency.active == 0 and slow.concurrency.aborted == 2
    assert slow.calls() == pressed["calls"]  # no model call started after Ctrl-C
    signal.signal(signal.SIGINT, previous)
