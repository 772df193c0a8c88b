"""The grader asked in the note section's language (``GRADE_LANGUAGE = "notes"``), both layouts."""

from __future__ import annotations

from dataclasses import replace

import pytest

import graph.prompts as prompts
import nodes.grade_documents as grading
from graph.prompts import GRADE_SYSTEM, GRADE_SYSTEM_DE, language_of

GERMAN = (
    "Den Teig über Nacht im Kühlschrank gehen lassen. Am nächsten Morgen auf dem Blech "
    "backen, bei 250 Grad für 20 Minuten, dann die Temperatur auf 220 Grad senken."
)
ENGLISH = (
    "Let the dough rise overnight in the fridge. The next morning bake it on the tray at "
    "250 degrees for 20 minutes, then lower the temperature to 220 degrees."
)


def chunk(text: str) -> dict:
    return {"source": "bread.md", "heading": "Bake", "content": text, "score": 0.8, "images": []}


def test_language_of_names_the_language_and_says_english_when_it_cannot_tell():
    assert language_of(GERMAN) == "de"
    assert language_of(ENGLISH) == "en"
    assert language_of("1234 5678 -- ::") == "en"  # no letters to judge by
    # seeded: the same text, the same answer every time (langdetect samples at random); asked
    # past the cache, which would hide an unseeded detection
    detect = language_of.__wrapped__
    assert {detect("kubectl get pods -n prod") for _ in range(20)} == {
        detect("kubectl get pods -n prod")
    }


def test_each_text_is_detected_once(monkeypatch):
    import langdetect

    language_of.cache_clear()
    calls: list[str] = []
    real = langdetect.detect
    monkeypatch.setattr(langdetect, "detect", lambda text: calls.append(text) or real(text))
    assert [language_of(GERMAN) for _ in range(3)] == ["de"] * 3
    assert calls == [GERMAN]


@pytest.mark.parametrize("setting", ["english", "notes"])
def test_an_english_section_gets_the_english_grader_whatever_the_setting(monkeypatch, setting):
    monkeypatch.setattr(prompts, "GRADE_LANGUAGE", setting)
    system, user = grading.grade_prompt(chunk(ENGLISH), "How hot is the oven?")
    assert system.content == GRADE_SYSTEM
    assert user.content.endswith("\n\nQuestion: How hot is the oven?")


def test_a_german_section_gets_the_german_grader_only_when_set_to_the_notes_language(
    monkeypatch,
):
    monkeypatch.setattr(prompts, "GRADE_LANGUAGE", "notes")
    system, user = grading.grade_prompt(chunk(GERMAN), "Wie heiß ist der Ofen?")
    assert system.content == GRADE_SYSTEM_DE
    assert user.content.startswith('<note number="1" source="bread.md"')
    assert user.content.endswith("</note>\n\nFrage: Wie heiß ist der Ofen?")

    monkeypatch.setattr(prompts, "GRADE_LANGUAGE", "english")
    system, user = grading.grade_prompt(chunk(GERMAN), "Wie heiß ist der Ofen?")
    assert system.content == GRADE_SYSTEM
    assert user.content.endswith("\n\nQuestion: Wie heiß ist der Ofen?")


def test_a_section_in_a_language_without_prompts_gets_the_english_grader(monkeypatch):
    monkeypatch.setattr(prompts, "GRADE_LANGUAGE", "notes")
    french = (
        "Laisser lever la pâte toute la nuit au réfrigérateur. Le lendemain matin, la cuire "
        "sur la plaque à 250 degrés pendant 20 minutes, puis baisser la température."
    )
    assert language_of(french) == "fr"
    system, _ = grading.grade_prompt(chunk(french), "Quelle température ?")
    assert system.content == GRADE_SYSTEM


def grade_prompts(tmp_path, ctx, models, monkeypatch, layout: str) -> tuple[str, str]:
    """The grade prompts (German section's, English section's) of a German and an English note."""
    from graph.builder import build_graph
    from graph.index.ingest import load_notes

    monkeypatch.setattr(grading, "GRADE_LAYOUT", layout)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "brot.md").write_text(f"# Brot\n\n{GERMAN}\n")
    (notes / "bread.md").write_text(f"# Bread\n\n{ENGLISH}\n")
    ctx = replace(ctx, score_threshold=0.0, k=2)  # both sections reach the grader
    load_notes(ctx, notes, models.embedder)
    build_graph(models=models).invoke({"question": "oven dough bake Teig"}, context=ctx)
    prompts = models.prompts("grade")
    assert len(prompts) == 2
    marks = ("Beurteile Notiz", "Judge note") if layout == "after_notes" else ("Den", "Let")
    german = [p for p in prompts if marks[0] in p]
    english = [p for p in prompts if marks[1] in p]
    assert len(german) == len(english) == 1
    return german[0], english[0]


def test_each_section_graded_after_the_notes_is_named_in_its_language(
    tmp_path, ctx, models, monkeypatch
):
    from graph.prompts import GRADE_AFTER_NOTES

    assert prompts.GRADE_LANGUAGE == "notes"
    # Both grades hold both sections; what follows them names one, in its language.
    german, english = grade_prompts(tmp_path, ctx, models, monkeypatch, "after_notes")
    assert german.endswith(GRADE_AFTER_NOTES["de"].split("{heading})")[1])
    assert "(brot.md > Brot)" in german and "(bread.md > Bread)" in english
    assert english.endswith(GRADE_AFTER_NOTES["en"].split("{heading})")[1])


def test_each_section_graded_alone_gets_the_grader_in_its_language(
    tmp_path, ctx, models, monkeypatch
):
    german, english = grade_prompts(tmp_path, ctx, models, monkeypatch, "alone")
    assert GRADE_SYSTEM_DE in german and german.endswith("Frage: oven dough bake Teig")
    assert GRADE_SYSTEM in english and english.endswith("Question: oven dough bake Teig")


def test_threads_detecting_at_once_on_first_use_all_get_the_language():
    # langdetect fills its factory on first use: a thread must never see it half loaded.
    import threading

    from langdetect import detector_factory

    for _ in range(3):
        detector_factory._factory = None  # as in a new process
        barrier, got = threading.Barrier(4), []

        def detect():
            barrier.wait()
            got.append(language_of.__wrapped__(GERMAN))  # past the cache: each detects

        threads = [threading.Thread(target=detect) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert got == ["de"] * 4
