"""The answer asked for in the question's language (``ANSWER_LANGUAGE = "question"``)."""

from __future__ import annotations

import pytest

import graph.prompts as prompts
from graph.prompts import ANSWER_REQUEST, GENERATE_SYSTEM, GENERATE_USER
from nodes.generate import answer_prompt

SECTION = {
    "source": "Garten/Tomaten.md",
    "heading": "Tomaten > Gießen",
    "content": "Im Juli alle zwei Tage 2 Liter pro Pflanze, morgens, nie über die Blätter.",
    "score": 0.8,
    "images": [],
}
GERMAN = "Wie viel Wasser bekommt eine Tomatenpflanze im Juli?"
ENGLISH = "How much water does a tomato plant get in July?"


def turn(question: str) -> tuple[str, str]:
    system, user = answer_prompt([SECTION], question)
    return str(system.content), str(user.content)


def test_a_german_question_is_asked_for_a_german_answer(monkeypatch):
    monkeypatch.setattr(prompts, "ANSWER_LANGUAGE", "question")
    system, user = turn(GERMAN)
    assert user.endswith(f"Question: {GERMAN}\n\n{ANSWER_REQUEST['de']}")
    assert "auf Deutsch" in ANSWER_REQUEST["de"] and "[1]" in ANSWER_REQUEST["de"]
    # The instructions stay the same text for every language: the server's copy of them
    # (read for the last answer, or ahead) serves this one too.
    assert system == GENERATE_SYSTEM


@pytest.mark.parametrize("setting", ["english", "question"])
def test_an_english_question_gets_the_english_answer_turn_whatever_the_setting(
    monkeypatch, setting
):
    monkeypatch.setattr(prompts, "ANSWER_LANGUAGE", setting)
    _, user = turn(ENGLISH)
    assert user == GENERATE_USER.format(notes=prompts.format_context([SECTION]), question=ENGLISH)


def test_a_question_in_a_language_without_a_request_of_its_own_is_asked_in_english(
    monkeypatch,
):
    monkeypatch.setattr(prompts, "ANSWER_LANGUAGE", "question")
    french = "Combien d'eau reçoit un plant de tomate en juillet ?"
    assert prompts.language_of(french) == "fr"
    assert turn(french)[1].endswith(ANSWER_REQUEST["en"])


def test_set_to_english_a_german_question_gets_the_english_request(monkeypatch):
    monkeypatch.setattr(prompts, "ANSWER_LANGUAGE", "english")
    assert turn(GERMAN)[1].endswith(ANSWER_REQUEST["en"])
