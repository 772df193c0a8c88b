"""`rag` end to end through the real HTTP clients. Assertions are on behaviour and
protocol, not on the tiny model's answers."""

import json
import re

from tests.integration_tests.conftest import (
    ERASED,
    free_port,
    rag,
    rag_on_terminal,
    said_in_order,
)

QUESTION = "How should I practise whiteboarding for interviews?"


def test_launched_commands_behave_as_fresh_processes(loaded_notes, ollama_url, workdir):
    """The tests' launcher (forks with the libraries imported) changes nothing but the time."""
    commands = [
        ("query", "-q", "sourdough starter", "-n", "notes", "-r", "2", "--json"),
        ("ask", "-q", QUESTION, "--no-such-flag"),
    ]
    for command in commands:
        fresh = rag(*command, url=ollama_url, workdir=workdir, fresh=True)
        launched = rag(*command, url=ollama_url, workdir=workdir)
        assert (launched.returncode, launched.stdout, launched.stderr) == (
            fresh.returncode,
            fresh.stdout,
            fresh.stderr,
        ), command


def ask(question: str, flags: str, *, url: str, workdir):
    """`rag ask -q QUESTION -n notes FLAGS...` against the loaded sample notes."""
    return rag("ask", "-q", question, "-n", "notes", *flags.split(), url=url, workdir=workdir)


def test_load_then_reload_is_incremental(loaded_notes, ollama_url, workdir):
    assert "notes: 5 added" in loaded_notes.stdout
    again = rag(
        "load", "-f", str(workdir / "notes"), "-n", "notes", url=ollama_url, workdir=workdir
    )
    assert again.returncode == 0
    assert "0 added, 0 updated, 0 removed, 5 unchanged" in again.stdout


ANSWER = "Yes: practise on a real whiteboard, against a timer, saying your reasoning aloud."


def test_ask_retrieval_question_streams_and_cites(loaded_notes, ollama_url, workdir, faults):
    # Every model call answers ANSWER, so the grader says yes (its first word) to every chunk
    # and an answer is generated: the tiny model's own grades may reject everything.
    faults(reply=ANSWER)
    flags = ["--threshold", "0", "-k", "3", "-v"]
    result = rag(
        "ask", "-q", QUESTION, "-n", "notes", *flags, url=ollama_url, workdir=workdir, merged=True
    )
    out = result.stdout  # stdout and stderr together, in the order the command wrote them
    assert result.returncode == 0, out
    assert "[route: retrieve" in out
    assert "[retrieve: 3 chunk(s)" in out
    graded = re.findall(r"\[grade_documents: (.+?) > .*: yes\]", out)
    assert len(graded) == 3, out
    # Streamed: the answer reaches the output while generate runs, before its step is
    # reported (an answer printed once at the end would follow the step).
    assert out.index(ANSWER) < out.index("  [generate: answered from 3 chunk(s)"), out
    # Cited: a source line for each note the answer came from, and only those.
    cited = re.findall(r"^  \[\d+\] (\S+\.md)", out.split("\nSources:\n", 1)[1], re.MULTILINE)
    assert cited and set(cited) == set(graded), out


def test_ask_json_reports_the_path(loaded_notes, ollama_url, workdir):
    result = ask(QUESTION, "--threshold 0 -k 2 --json", url=ollama_url, workdir=workdir)
    state = json.loads(result.stdout)
    assert state["route"] == "retrieve"
    assert [s.split(":")[0] for s in state["steps"]][:2] == ["route", "retrieve"]
    assert len(state["grades"]) == 2
    assert state["steps"][-1].split(":")[0] in ("generate", "no_answer")


def test_calculator_trigger(loaded_notes, ollama_url, workdir):
    result = ask("calculate: 456*4343 - 56/(443-11+4)", "", url=ollama_url, workdir=workdir)
    assert result.returncode == 0
    assert result.stdout.strip() == "456*4343 - 56/(443-11+4) ≈ 1980407.87155963"


def test_nothing_relevant_is_a_clean_no_answer(loaded_notes, ollama_url, workdir):
    result = ask(
        "What is the boiling point of tungsten?",
        "--threshold 1.0 --json",
        url=ollama_url,
        workdir=workdir,
    )
    assert result.returncode == 0
    state = json.loads(result.stdout)
    assert state["no_answer_reason"] == "below_threshold"
    assert "Closest notes:" in state["answer"]


def test_image_branch_sends_note_image_to_vision_model(loaded_notes, ollama_url, workdir):
    from tests.integration_tests.conftest import VISION_MODEL

    result = rag(
        "ask",
        "-q",
        "based on the image, how is the router set up?",
        "-n",
        "notes",
        "--vision-model",
        VISION_MODEL,
        "--threshold",
        "0",
        "--json",
        url=ollama_url,
        workdir=workdir,
    )
    assert result.returncode == 0, result.stderr
    state = json.loads(result.stdout)
    assert state["route"] == "image"
    assert state["steps"][-1].startswith(f"image: 1 image(s) sent to {VISION_MODEL}")
    assert {"path": "tech/img/network.png", "heading": ""} in state["sources"]


def test_image_branch_without_vision_model_says_so(loaded_notes, ollama_url, workdir):
    result = ask("based on the image, what is it?", "", url=ollama_url, workdir=workdir)
    assert result.returncode == 0
    assert "no 'vision' capability for 'llama3.1:8b'" in result.stdout


def query_scores(ollama_url, workdir, **env) -> list[float]:
    args = "query -q sourdough-starter -n notes -r 3".split()
    result = rag(*args, url=ollama_url, workdir=workdir, **env)
    assert result.returncode == 0, result.stderr
    lines = [x for x in result.stdout.splitlines() if x[:2] in ("1.", "2.", "3.")]
    assert len(lines) == 3
    return [float(x.split()[1]) for x in lines]


def test_query_shows_scores_without_llm(loaded_notes, ollama_url, workdir):
    hybrid = query_scores(ollama_url, workdir)  # fused rank order: scores need not descend
    assert all(0 <= s <= 1 for s in hybrid)
    vector = query_scores(ollama_url, workdir, RAG_RETRIEVAL_MODE="vector")
    assert vector == sorted(vector, reverse=True)


def test_ollama_unreachable(loaded_notes, workdir):
    url = f"http://127.0.0.1:{free_port()}"
    # A fresh interpreter: the whole process's stderr is one line (no shutdown noise either).
    result = rag("ask", "-q", QUESTION, "-n", "notes", url=url, workdir=workdir, fresh=True)
    assert result.returncode == 3
    assert f"cannot reach Ollama at {url}" in result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1


def test_calculator_works_with_ollama_down(workdir):
    url = f"http://127.0.0.1:{free_port()}"
    result = rag("ask", "-q", "2^10 + 1", "-n", "notes", url=url, workdir=workdir)
    assert result.returncode == 0 and result.stdout.strip() == "2^10 + 1 = 1025"


def test_model_missing_hint(loaded_notes, ollama_url, workdir):
    result = ask(QUESTION, "-m no-such-model:1b --threshold 0", url=ollama_url, workdir=workdir)
    assert result.returncode == 3
    assert "run `ollama pull no-such-model:1b`" in result.stderr


def test_embedding_model_missing_on_load(ollama_url, workdir):
    result = rag(
        "load",
        "-f",
        str(workdir / "notes"),
        "-n",
        "other",
        "-e",
        "missing-embed",
        url=ollama_url,
        workdir=workdir,
    )
    assert result.returncode == 3
    assert "run `ollama pull missing-embed`" in result.stderr


def test_slow_model_timeout_is_honoured(loaded_notes, ollama_url, workdir, faults):
    faults(delay=4)
    result = ask(QUESTION, "--threshold 0 --timeout 1", url=ollama_url, workdir=workdir)
    assert result.returncode == 3
    assert "did not answer in time" in result.stderr


def test_malformed_grader_json_still_completes(loaded_notes, ollama_url, workdir, faults):
    faults(malformed_json=True)
    result = ask(QUESTION, "--threshold 0 -k 2 --json", url=ollama_url, workdir=workdir)
    assert result.returncode == 0, result.stderr
    state = json.loads(result.stdout)
    assert len(state["grades"]) == 2 and all(g["fallback"] for g in state["grades"])
    assert state["route"] == "retrieve" and state["steps"][-1].startswith("generate:")


def test_stream_cut_mid_answer(loaded_notes, ollama_url, workdir, faults):
    faults(drop_stream_after=1)
    flags = "-q", QUESTION, "-n", "notes", "--threshold", "0", "-k", "1"
    result = rag("ask", *flags, url=ollama_url, workdir=workdir, fresh=True)
    assert result.returncode == 3
    assert "broke off mid-response" in result.stderr
    assert "Traceback" not in result.stderr


def test_chroma_server(chroma_server, ollama_url, workdir):
    notes = str(workdir / "notes")
    loaded = rag(
        "load", "-f", notes, "-n", "served", "-d", chroma_server, url=ollama_url, workdir=workdir
    )
    assert loaded.returncode == 0, loaded.stderr
    assert "served: 5 added" in loaded.stdout
    again = rag(
        "load", "-f", notes, "-n", "served", "-d", chroma_server, url=ollama_url, workdir=workdir
    )
    assert "5 unchanged" in again.stdout
    asked = rag(
        "ask",
        "-q",
        QUESTION,
        "-n",
        "served",
        "-d",
        chroma_server,
        "--threshold",
        "0",
        "-k",
        "2",
        "--json",
        url=ollama_url,
        workdir=workdir,
    )
    assert asked.returncode == 0, asked.stderr
    assert len(json.loads(asked.stdout)["grades"]) == 2


def test_chroma_server_unreachable(ollama_url, workdir):
    url = f"http://127.0.0.1:{free_port()}"
    result = rag("ask", "-q", QUESTION, "-n", "notes", "-d", url, url=ollama_url, workdir=workdir)
    assert result.returncode == 3
    assert f"cannot reach the Chroma server at {url}" in result.stderr


def test_ask_on_a_terminal_says_what_the_graph_does_then_leaves_the_answer(
    loaded_notes, ollama_url, workdir, faults
):
    faults(reply=ANSWER, delay=0.3)  # each model call takes a moment: the stages can be seen
    flags = ["--threshold", "0", "-k", "2"]
    raw, _, status = rag_on_terminal(
        "ask", "-q", QUESTION, "-n", "notes", *flags, url=ollama_url, workdir=workdir
    )
    assert status == 0, raw
    said_in_order(raw)
    # The sources are printed once the answer is written, while it is checked.
    assert raw.index("Sources:") < raw.rindex("] checking against your notes")
    # What stays on the screen: the answer and its sources, every status line erased.
    screen = ERASED.sub("", raw).replace("\r\n", "\n")
    assert "\x1b" not in screen and "\r" not in screen
    assert re.fullmatch(rf"{re.escape(ANSWER)}\n\nSources:\n(  \[\d\] .+\n){{1,2}}", screen)


def test_no_status_line_when_the_answer_is_piped_or_json(loaded_notes, ollama_url, workdir, faults):
    faults(reply=ANSWER, delay=0.3)
    flags = ["--threshold", "0", "-k", "2"]
    raw, piped, status = rag_on_terminal(
        "ask",
        "-q",
        QUESTION,
        "-n",
        "notes",
        *flags,
        url=ollama_url,
        workdir=workdir,
        stdout_piped=True,  # stderr stays on the terminal
    )
    assert status == 0 and raw == ""
    assert piped.startswith(f"{ANSWER}\n\nSources:\n  [1] ")
    raw, _, status = rag_on_terminal(
        "ask", "-q", QUESTION, "-n", "notes", *flags, "--json", url=ollama_url, workdir=workdir
    )
    assert status == 0 and "\x1b" not in raw and "grading" not in raw
    assert json.loads(raw)["answer"] == ANSWER


def test_grades_end_after_their_verdict_and_are_read(loaded_notes, ollama_url, workdir):
    # The grade's request carries VERDICT_END: the server stops after the verdict's value, so
    # each reply the CLI reads is cut there (no closing brace) and still counts.
    result = ask(QUESTION, "--threshold 0 -k 2 --json", url=ollama_url, workdir=workdir)
    assert result.returncode == 0, result.stderr
    grades = json.loads(result.stdout)["grades"]
    assert len(grades) == 2 and not any(g["fallback"] for g in grades), grades
    assert all(re.fullmatch(r'\{\s*"score"\s*:\s*"(yes|no)', g["raw"]) for g in grades), grades
