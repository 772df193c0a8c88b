"""The names lookup of the answer check (``graph/names.py``, ``nodes/generate.py``).

A draft that names a host, a tool or a town none of its sections writes is withdrawn without
a model call; one whose names are all written, and that gives no figure, is kept without one;
in German sections, where every noun is capitalised, names are not read.
"""

from __future__ import annotations

import pytest

from graph.builder import build_graph
from graph.names import capitals_mark_names, names_of, unwritten_names
from graph.progress import describe
from graph.prompts import UNSUPPORTED, UNSUPPORTED_NAMES
from tests.fakes import FakeModels

NOT_STATED = UNSUPPORTED.split(":")[0]  # "Your notes don't say this"

OFFICE = (
    "# Office network\n\n## VPN\n\nThe office VPN runs WireGuard on the gateway wg0. "
    "Ask the platform team for a key; keys are rotated every spring.\n"
)
REISE = (
    "# Reise nach Graz\n\n## Unterkunft\n\nWir übernachten im Hotel Sonne in der Altstadt, "
    "das Frühstück ist im Preis inbegriffen und die Zimmer sind ruhig.\n"
)


def test_names_are_capitalised_words_inside_a_sentence_codes_and_quoted_terms():
    draft = 'The VPN runs WireGuard on wg0. Keys come from "the platform team" [1].'
    # "The" and "Keys" start sentences; [1] is a citation, not a code
    assert names_of(draft) == ["VPN", "WireGuard", "wg0", "the platform team"]
    assert names_of("It is rotated every spring [2].") == []


@pytest.mark.parametrize(
    ("answer", "names"),
    [
        ("The router uses WPA3 and Quad9 [1].", ["WPA3", "Quad9"]),
        ("Pi-hole runs on the Raspberry Pi [2].", ["Raspberry", "Pi"]),
        ('Im Rezept steht "Dinkelmehl" [1].', ["Rezept", "Dinkelmehl"]),
        ("Use py-spy on wg0.", ["wg0"]),
        ("It opens at nine.", []),
        ("It's the cat's bowl, Anna's too.", ["Anna"]),  # apostrophes quote nothing
        ("Der Schlüssel hängt im «Flur» [1].", ["Schlüssel", "Flur"]),
    ],
)
def test_the_names_of_a_draft_are_its_names_codes_and_quoted_terms(answer, names) -> None:
    assert names_of(answer) == names


@pytest.mark.parametrize(
    "answer",
    [
        "It opens on weekdays.[1] Saturdays it is closed.",  # a citation after the full stop
        "It rests overnight. [1] Then it is baked.",
        "It rests.  Then it is baked; Afterwards it cools.",
        "- Restart the router\n1) Open it\n## Steps\n> Quoted\nLine\nThen more.",
        "It opens at 9am with 5GB for the 2nd disk in 24h.",  # figures: the figure lookup's
    ],
)
def test_sentence_starts_list_items_and_figures_are_no_names(answer):
    assert names_of(answer) == []


def test_a_name_is_written_when_a_section_writes_it_in_any_case():
    assert unwritten_names("It runs Wireguard and OpenVPN.", [OFFICE]) == ["OpenVPN"]
    assert unwritten_names("It runs OpenVPN, OpenVPN again.", [OFFICE]) == ["OpenVPN"]
    assert unwritten_names("It runs WIREGUARD on WG0.", [OFFICE]) == []


def test_to_withdraw_any_occurrence_counts_to_keep_only_a_whole_word():
    # "Postgres" is in "PostgreSQL": a short form is not withdrawn; but "Go" inside "good"
    # does not keep a draft without the model
    assert unwritten_names("It runs on Postgres.", ["The database is PostgreSQL 16."]) == []
    assert unwritten_names("It is in Go.", ["A good tool."]) == []
    assert unwritten_names("It is in Go.", ["A good tool."], whole_words=True) == ["Go"]
    assert unwritten_names("It is in Go.", ["Written in go, v1."], whole_words=True) == []


@pytest.mark.parametrize(
    ("answer", "grounds"),
    [
        ("It was £212 at the March rehearsal.", "Daily/2026-03-19.md\nKitty is at £212."),
        ("The October 2025 survey read 28%.", "Damp survey, 30 Oct 2025: 28%."),
        ("The recheck in September was fine.", "Sept 3: recheck fine."),
        ("The gig is on Saturday.", "Sat 18 April: the gig."),
        ("Rehearsals are on Thursdays.", "Thurs 19:30 at the garage."),
        ("It was done in Sept.", "Daily/2026-09-03.md\nDone."),
        ("She works Monday, Tuesday and Friday.", "Days: Mon, Tue, Thu, Fri"),
        ("Open Monday to Friday.", "Open Mon–Fri, 9 to 5."),
    ],
)
def test_a_month_or_a_weekday_is_written_by_any_form_of_it(answer, grounds):
    assert unwritten_names(answer, [grounds]) == []
    assert unwritten_names(answer, [grounds], whole_words=True) == []


@pytest.mark.parametrize(
    ("answer", "grounds", "missing"),
    [
        ("It was £212 at the June rehearsal.", "Daily/2026-03-19.md\nKitty is at £212.", "June"),
        ("The gig is on Saturday.", "Sunday: we sat down.", "Saturday"),  # short forms are words
        ("We play on Sunday.", "Only if there is sun.", "Sunday"),
        ("We meet on Monday.", "C'mon, be on time.", "Monday"),
        ("They marry on Wednesday.", "They will wed.", "Wednesday"),
        ("It is due in March.", "Marc said it was due.", "March"),
        ("It is due in March.", "Check the grammar.", "March"),
        ("It was paid in May.", "Invoice 12026-05-01, paid.", "May"),  # no ISO date
        ("The December accounts.", "The 2011-12 accounts.", "December"),  # a year range
    ],
)
def test_another_month_or_weekday_or_a_word_like_one_is_not_written(answer, grounds, missing):
    assert unwritten_names(answer, [grounds], whole_words=True) == [missing]


def test_capitals_mark_names_except_in_german():
    assert capitals_mark_names([OFFICE])
    assert not capitals_mark_names([OFFICE, REISE])
    assert capitals_mark_names([])


@pytest.fixture
def office(graded_vault):
    return graded_vault({"office-2024.md": OFFICE})


def ask(ctx, draft: str, check: str, question: str = "Which VPN does the office run?"):
    models = FakeModels({"generate": draft, "check": f'{{"score": "{check}"}}'})
    events: list = []
    out = None
    for mode, payload in build_graph(models=models).stream(
        {"question": question}, context=ctx, stream_mode=["custom", "values"]
    ):
        if mode == "custom":
            events.append(payload)
        else:
            out = payload
    (checked,) = [e for e in events if e["stage"] == "checked"]
    return out, models, checked


def test_a_name_no_section_writes_is_not_stated_without_asking_the_model(office):
    draft = "The office VPN runs OpenVPN [1]."
    out, models, checked = ask(office, draft, "yes")  # the model would have said "yes"
    assert models.calls("check") == 0
    assert out["no_answer_reason"] == "unsupported"
    shown, added = out["answer"].split("\n\n")
    assert shown == draft and UNSUPPORTED_NAMES.startswith(f"{NOT_STATED}:")
    assert added.startswith(NOT_STATED) and added.endswith("do not mention OpenVPN.")
    assert "[1] office-2024.md" in added
    assert out["steps"][-1] == "generate: checked against the notes: OpenVPN in none of them"
    assert checked["by"] == "lookup" and describe(checked) == "checked: not stated in your notes"


def test_names_the_sections_write_settle_a_draft_without_figures_without_the_model(office):
    draft = "The office VPN runs WireGuard on wg0 [1]."
    out, models, checked = ask(office, draft, "no")  # the model would have said "no"
    assert models.calls("check") == 0
    assert out["answer"] == draft and out["no_answer_reason"] is None
    assert out["steps"][-1] == "generate: checked against the notes: every name written in them"
    assert checked["by"] == "names"
    assert describe(checked) == "checked: the names it gives are in your notes"


@pytest.mark.parametrize(
    "draft",
    [
        "Ask the platform team for a key [1].",  # no name: nothing to look up
        # a figure only the note's name holds: its figures do not settle it, nor its names
        "The 2024 office VPN runs WireGuard [1].",
    ],
)
def test_a_draft_its_names_do_not_settle_goes_to_the_model(office, draft):
    out, models, checked = ask(office, draft, "no")
    assert models.calls("check") == 1
    assert checked["by"] == "model" and out["no_answer_reason"] == "unsupported"


def test_a_month_a_daily_notes_name_dates_does_not_withdraw_a_right_answer(graded_vault):
    # The question's "March" repeated in the draft: the note is named by its day in March
    daily = graded_vault({"2026-03-19.md": "Rehearsal. Lou says the band kitty is at £212.\n"})
    question = "How much was in the band kitty at the March rehearsal?"
    draft = "£212 was in the band kitty at the March rehearsal [1]."
    out, models, checked = ask(daily, draft, "no", question)
    assert models.calls("check") == 0
    assert out["answer"] == draft and out["no_answer_reason"] is None
    assert checked["by"] == "figures"


def test_in_german_sections_names_are_not_read(graded_vault):
    reise = graded_vault({"reise.md": REISE})
    question = "In welchem Hotel übernachten wir in Graz?"
    # "Hotel Mond" is not written, but German capitalises every noun: the model decides
    out, models, checked = ask(reise, "Wir übernachten im Hotel Mond [1].", "yes", question)
    assert models.calls("check") == 1
    assert checked["by"] == "model" and out["no_answer_reason"] is None
    out, models, checked = ask(reise, "Wir übernachten im Hotel Sonne [1].", "no", question)
    assert models.calls("check") == 1 and out["no_answer_reason"] == "unsupported"


def test_a_german_answer_over_english_notes_is_left_to_the_model(office):
    draft = "Den Schlüssel bekommst du vom Plattform-Team über das Gateway [1]."
    out, models, checked = ask(office, draft, "yes")
    assert models.calls("check") == 1 and checked["by"] == "model"
    assert out["no_answer_reason"] is None


def test_a_name_only_a_heading_writes_does_not_keep_a_draft_without_the_model(office):
    # "Network" is in the note's title (Office network), not in the section's text: it is
    # written (no withdrawal), but settles nothing, as a figure found only there
    out, models, checked = ask(office, "The VPN is part of the Network [1].", "no")
    assert models.calls("check") == 1 and checked["by"] == "model"
    assert out["no_answer_reason"] == "unsupported"


def test_a_name_written_only_inside_a_longer_word_goes_to_the_model(office):
    # "Way" is inside "gateway": not withdrawn, and not settled either
    out, models, checked = ask(office, "The VPN is the Way in [1].", "no")
    assert models.calls("check") == 1 and checked["by"] == "model"
