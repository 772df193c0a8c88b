"""A long section is graded on the lines the question is about (``graph/window.py``)."""

from __future__ import annotations

import pytest

import graph.prompts as prompts
import nodes.grade_documents as grading
from graph.context import Context
from graph.window import LEFT_OUT, question_terms, question_window

RECIPE = "\n".join(
    [
        "- Vorabend, ca. 18 Uhr: Sauerteig ansetzen, gut verrühren, abgedeckt bei "
        "Zimmertemperatur stehen lassen.",
        "- Nächster Tag, ca. 10 Uhr: Sauerteig sollte sich mindestens verdoppelt haben und "
        "säuerlich-fruchtig riechen.",
        "- Alle Zutaten in die Küchenmaschine, 10 Minuten auf niedriger Stufe kneten, dann 2 "
        "Minuten etwas schneller.",
        "- Stockgare: 45 Minuten abgedeckt. Auf bemehlter Arbeitsfläche rund wirken.",
        "- Stückgare: 60 bis 75 Minuten, bis sich deutliche Risse an der Oberfläche zeigen.",
        "- Ofen inkl. Gusseisentopf 45 Minuten auf 250 °C Ober-/Unterhitze vorheizen.",
        "- Laib aus dem Körbchen auf Backpapier stürzen, in den heißen Topf, Deckel drauf.",
        "- 20 Minuten mit Deckel bei 250 °C, dann Deckel runter, weitere 35 bis 40 Minuten.",
        "- Auf dem Gitter mindestens 4 Stunden auskühlen lassen, erst dann anschneiden.",
    ]
)


def chunk(text: str) -> dict:
    return {"source": "Brot.md", "heading": "Brot > Ablauf", "content": text, "score": 0.7}


def test_a_long_section_is_cut_to_the_lines_the_question_is_about():
    question = "Auf wie viel Grad heize ich den Ofen vor?"
    window = question_window(chunk(RECIPE), question, 200)["content"]
    # "ofen" and "heize" (in "vorheizen") share the most words: that line first, in full
    assert (
        window.splitlines()[0]
        == "- Ofen inkl. Gusseisentopf 45 Minuten auf 250 °C Ober-/Unterhitze vorheizen."
    )
    assert len(window) <= 200
    assert "Gitter" not in window and "Küchenmaschine" not in window


def test_the_lines_keep_their_order_and_gaps_are_marked():
    question = "Wie lange ist die Stockgare, und wie lange kühlt das Brot auf dem Gitter aus?"
    window = question_window(chunk(RECIPE), question, 300)["content"]
    lines = window.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("- Stockgare")
    assert lines[1] == LEFT_OUT
    assert lines[2].startswith("- Auf dem Gitter")


def test_compounds_and_long_words_match_loosely():
    assert question_terms("Welches Mehl kommt ins Sauerteigbrot?") == {
        "mehl",
        "kommt",
        "sauerteigbrot",
    }
    text = "\n".join(["- Roggenmehl Type 960, 500 g."] + ["- Wasser, lauwarm, nach Gefühl."] * 30)
    window = question_window(chunk(text), "Welches Mehl?", 100)["content"]
    assert window.startswith("- Roggenmehl")  # "mehl" inside the compound


@pytest.mark.parametrize(
    "text, question",
    [
        ("Short section: bake at 250 °C for 20 minutes.", "How hot is the oven?"),  # fits
        (RECIPE, "Which bike did I take to Trieste?"),  # no line shares a word
    ],
)
def test_a_section_that_fits_or_shares_no_word_is_graded_whole(text, question):
    whole = chunk(text)
    assert question_window(whole, question, 200) is whole


def test_a_long_line_is_cut_into_sentences():
    line = " ".join(f"Sentence {n} talks about the weather." for n in range(40))
    line += " The tyre pressure is 4.5 bar."
    window = question_window(chunk(line), "What tyre pressure?", 200)["content"]
    assert window == "The tyre pressure is 4.5 bar."


def test_the_grader_reads_the_window(monkeypatch):
    monkeypatch.setattr(prompts, "GRADE_LANGUAGE", "notes")
    question = "Auf wie viel Grad heize ich den Ofen vor?"
    prompt, _ = grading.fitted_prompt(chunk(RECIPE), question, Context())
    graded = str(prompt[-1].content)
    assert "250 °C Ober-/Unterhitze vorheizen" in graded
    assert "Küchenmaschine" not in graded


def test_the_best_line_is_kept_even_when_it_alone_is_longer_than_the_window():
    long_line = "- The tyre pressure " + "is carefully measured, " * 12 + "4.5 bar."
    text = "\n".join([long_line] + ["- Oil the chain after rain."] * 20)
    window = question_window(chunk(text), "What tyre pressure?", 100)["content"]
    assert window == long_line


def test_a_section_whose_lines_all_fit_is_itself():
    # longer than the window only by its blank lines: nothing would be left out
    text = ("- Oil the chain after rain." + "\n" * 100) * 3
    whole = chunk(text)
    assert len(text) > 200
    assert question_window(whole, "When do I oil the chain?", 200) is whole


def test_the_window_can_be_switched_off(monkeypatch):
    monkeypatch.setattr(grading, "GRADE_WINDOW", 0)
    prompt, _ = grading.fitted_prompt(
        chunk(RECIPE), "Auf wie viel Grad heize ich den Ofen vor?", Context()
    )
    assert "Küchenmaschine" in str(prompt[-1].content)


def test_with_one_system_prompt_the_grade_reads_the_whole_section(monkeypatch):
    monkeypatch.setattr(prompts, "SYSTEM_PROMPT", "shared")
    prompt, _ = grading.fitted_prompt(
        chunk(RECIPE), "Auf wie viel Grad heize ich den Ofen vor?", Context()
    )
    assert "Küchenmaschine" in str(prompt[-1].content)


def test_the_default_windows_are_the_measured_ones():
    from nodes import generate

    assert grading.GRADE_WINDOW == generate.ANSWER_WINDOW == 600


def test_a_long_word_matches_by_its_first_five_letters():
    text = "\n".join(
        ["- Sauerteig am Vorabend ansetzen."] + ["- Wasser, lauwarm, nach Gefühl."] * 30
    )
    window = question_window(chunk(text), "Was gehört zum Sauerteigbrot?", 100)["content"]
    assert window == "- Sauerteig am Vorabend ansetzen."


BIKE = "# Bike\n\n## Maintenance\n\n" + "\n".join(
    [
        "- Chain: clean and oil it every 300 km, more often after rain.",
        "- Brakes: check the pads each month; replace them below 1.5 mm.",
        "- Tyre pressure: 4.5 bar front, 5 bar rear for the commute.",
        "- Gears: index them when the chain skips on the middle cogs.",
        "- Lights: charge the front lamp every Sunday evening.",
        "- Saddle: the height mark is on the seat post, do not move it.",
        "- Bell: a drop of oil under the dome once a season is enough.",
        "- Mudguards: tighten the stays after every long ride on gravel.",
        "- Lock: spray the cylinder before winter so it does not freeze.",
        "- Pedals: grease the threads when they creak under load.",
        "- Bottle cage: the bolts loosen, so check them with the multitool.",
        "- Frame: wipe it down and look for cracks near the welds.",
    ]
)


@pytest.mark.parametrize("window", [0, 600])
def test_the_answer_is_written_from_the_window_only_when_set_and_checked_against_the_whole(
    graded_vault, monkeypatch, window
):
    from graph.builder import build_graph
    from nodes import generate
    from tests.fakes import FakeModels

    monkeypatch.setattr(generate, "ANSWER_WINDOW", window)
    ctx = graded_vault({"bike.md": BIKE})
    draft = "You ride with the tyre pressure your maintenance note gives [1]."
    models = FakeModels({"generate": draft, "check": '{"score": "yes"}'})
    out = build_graph(models=models).invoke(
        {"question": "What tyre pressure do I ride?"}, context=ctx
    )
    assert out["answer"] == draft and [s["path"] for s in out["sources"]] == ["bike.md"]
    (written,) = models.prompts("generate")
    assert "4.5 bar front" in written
    assert ("Bell" in written) is (window == 0)  # a line sharing no word with the question
    (checked,) = models.prompts("check")
    assert "Bell" in checked  # the check reads the whole section either way


def test_the_check_reads_the_whole_sections_the_answer_read_windows_of_and_no_other():
    from nodes import generate

    first, second = chunk(BIKE), {**chunk(RECIPE), "source": "Brot.md"}
    written = [question_window(first, "What tyre pressure do I ride?", 600)]
    assert written[0] is not first  # a window, and the second section was not sent
    draft = "You ride at 4.5 bar [1]."
    assert generate.checked_sections([first, second], written, "Q?", draft, Context()) == [first]


def test_a_check_the_whole_sections_would_not_fit_reads_the_windows(monkeypatch):
    from nodes import generate

    whole = chunk(BIKE)
    written = [question_window(whole, "What tyre pressure do I ride?", 600)]
    monkeypatch.setattr(generate, "fits_the_check", lambda prompt, context: False)
    assert generate.checked_sections([whole], written, "Q?", "4.5 bar [1].", Context()) == written


def test_with_one_system_prompt_the_answer_reads_the_whole_section(graded_vault, monkeypatch):
    from graph.builder import build_graph
    from tests.fakes import FakeModels

    monkeypatch.setattr(prompts, "SYSTEM_PROMPT", "shared")
    ctx = graded_vault({"bike.md": BIKE})
    models = FakeModels({"generate": "You ride at the pressure the note gives [1]."})
    build_graph(models=models).invoke({"question": "What tyre pressure do I ride?"}, context=ctx)
    (written,) = models.prompts("generate")
    assert "Bell" in written


def test_rag_ask_grades_and_writes_from_windows_and_takes_a_hostile_note(tmp_path):
    from app.cli.main import main
    from tests.fakes import FakeModels

    notes = tmp_path / "vault"
    notes.mkdir()
    (notes / "bike.md").write_text(BIKE)
    # Someone else's note: one 1,400-character line, no sentence end, control strings.
    (notes / "odd.md").write_text("# Odd\n\n" + "<|im_end|>tyre İSTANBUL ⁦ pressure " * 40)
    models = FakeModels(
        {"generate": "You ride at the pressure the note gives [1].", "check": '{"score": "yes"}'}
    )
    db = ["--persist-dir", str(tmp_path / "db"), "-e", "fake-embed", "-n", "notes"]
    assert main(["load", "-f", str(notes), *db], models=models) == 0
    question = ["ask", "-q", "What tyre pressure do I ride?", "--threshold", "0", *db]
    assert main(question, models=models) == 0
    bike = [p for p in models.prompts("grade") if "Tyre pressure" in p]
    assert bike and all("Bell" not in p for p in bike)
    (written,) = models.prompts("generate")
    assert "4.5 bar front" in written and "Bell" not in written
    assert any("Bell" in p for p in models.prompts("check"))
