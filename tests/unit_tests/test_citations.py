"""Each inline citation is listed beside the note section that writes what it cites.

The writer's text is streamed as written; where it cites a number whose section writes none
of what the citation follows and another section writes it, the listing under the answer is
reordered so that the number names that section (``graph/citations.py``).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.cli.main import main
from graph.builder import build_graph
from graph.citations import MOST_CITATIONS, claims, listed_by_what_they_write
from graph.warmup import settle
from nodes.generate import cite
from tests.fakes import FakeModels

CONTACT = {"source": "People/Sunil.md", "heading": "Sunil Rao", "content": "Sunil Rao, Volt & Co."}
LOG = {
    "source": "Projects/Renovation.md",
    "heading": "Rewire",
    "content": "Upstairs rewire signed off, certificate VC-26-0419, by Sunil.",
}
BAND = {
    "source": "Projects/Band.md",
    "heading": "The band",
    "content": "Jess Okafor plays drums, Lou Marsh plays keys.",
}
GIG = {"source": "Projects/Gigs.md", "heading": "April gig", "content": "Lou Marsh brings the PA."}


def sources_of(*chunks):
    return [{"path": c["source"], "heading": c["heading"]} for c in chunks]


def test_a_citation_naming_a_section_that_writes_none_of_it_lists_the_one_that_does():
    answer = "The certificate number is VC-26-0419. This is in note [1]."
    listed = listed_by_what_they_write(answer, sources_of(CONTACT, LOG), [CONTACT, LOG])
    assert listed == sources_of(LOG, CONTACT)


def test_a_citation_is_listed_with_the_section_writing_the_most_of_its_names():
    answer = "Jess Okafor plays drums and Lou Marsh plays keys. [2]"
    listed = listed_by_what_they_write(answer, sources_of(BAND, GIG), [BAND, GIG])
    assert listed == sources_of(GIG, BAND)  # [2] now lists the band's note


def test_a_citation_whose_section_writes_it_keeps_the_listing():
    answer = "Jess Okafor plays drums and Lou Marsh plays keys. [1]"
    assert listed_by_what_they_write(answer, sources_of(BAND, GIG), [BAND, GIG]) == sources_of(
        BAND, GIG
    )


def test_sections_writing_as_much_of_it_keep_the_cited_one():
    twin = {**LOG, "source": "Daily/2026-03-20.md", "heading": ""}
    answer = "The certificate is VC-26-0419 [3]."
    sources = sources_of(CONTACT, LOG, twin)
    assert listed_by_what_they_write(answer, sources, [CONTACT, LOG, twin]) == sources
    answer = "The certificate is VC-26-0419 [1]."  # two sections write it, neither alone
    assert listed_by_what_they_write(answer, sources, [CONTACT, LOG, twin]) == sources


def test_two_citations_wanting_one_section_leave_the_listing_as_it_is():
    answer = "The certificate is VC-26-0419 [1], signed off as VC-26-0419 [2]."
    sources = sources_of(CONTACT, GIG, LOG)
    assert listed_by_what_they_write(answer, sources, [CONTACT, GIG, LOG]) == sources


def test_one_number_cited_for_claims_of_two_sections_leaves_the_listing_as_it_is():
    answer = "Lou Marsh brings the PA [1]. The certificate is VC-26-0419 [1]."
    sources = sources_of(CONTACT, GIG, LOG)
    assert listed_by_what_they_write(answer, sources, [CONTACT, GIG, LOG]) == sources


def test_a_citation_keeping_its_section_stays_where_another_moves():
    answer = "Lou Marsh brings the PA [2]. The certificate is VC-26-0419 [1]."
    sources = sources_of(CONTACT, GIG, LOG)
    listed = listed_by_what_they_write(answer, sources, [CONTACT, GIG, LOG])
    assert listed == sources_of(LOG, GIG, CONTACT)


def test_other_numbers_keep_their_sections_where_they_can():
    # "note 2" outside brackets still names the gig: only [1] and the note it takes swap
    answer = "The certificate is VC-26-0419 [1]. Lou Marsh brings the PA (note 2)."
    listed = listed_by_what_they_write(answer, sources_of(CONTACT, GIG, LOG), [CONTACT, GIG, LOG])
    assert listed == sources_of(LOG, GIG, CONTACT)


def test_a_citation_of_several_sections_keeps_each():
    answer = "The certificate is VC-26-0419 [1, 7]."  # 7 names no source
    sources = sources_of(CONTACT, GIG, LOG)
    assert listed_by_what_they_write(answer, sources, [CONTACT, GIG, LOG]) == sources


def test_a_section_is_judged_by_its_text_not_its_heading():
    titled = {**CONTACT, "heading": "Certificate VC-26-0419"}
    answer = "The certificate is VC-26-0419 [1]."
    listed = listed_by_what_they_write(answer, sources_of(titled, LOG), [titled, LOG])
    assert listed == sources_of(LOG, titled)


@pytest.mark.parametrize("cited", ["[0]", "[" + "9" * 5000 + "]", "[01000]"])
def test_numbers_naming_no_source_leave_the_listing(cited):
    answer = f"The certificate is VC-26-0419 {cited}."
    sources = sources_of(CONTACT, LOG)
    assert listed_by_what_they_write(answer, sources, [CONTACT, LOG]) == sources


def test_an_answer_citing_more_than_the_judged_citations_is_listed_as_read():
    answer = "The certificate is VC-26-0419 [1]. " * (MOST_CITATIONS + 1)
    sources = sources_of(CONTACT, LOG)
    assert listed_by_what_they_write(answer, sources, [CONTACT, LOG]) == sources
    answer = "The certificate is VC-26-0419 [1]. " * MOST_CITATIONS
    assert listed_by_what_they_write(answer, sources, [CONTACT, LOG]) == sources_of(LOG, CONTACT)


SECTIONS = [CONTACT, LOG, BAND, GIG, {**LOG, "heading": "Rewire, again"}]
CLAIMS = [
    "The certificate is VC-26-0419",
    "Jess Okafor plays drums",
    "Lou Marsh brings the PA",
    "Sunil Rao did it",
    "This is in note",
    "",
]


@given(
    st.lists(st.sampled_from(SECTIONS), min_size=1, max_size=5),
    st.lists(
        st.tuples(st.sampled_from(CLAIMS), st.lists(st.integers(0, 7), min_size=1, max_size=3)),
        max_size=6,
    ),
)
def test_the_listing_is_always_the_same_sources_in_some_order(chunks, cited):
    answer = " ".join(f"{claim} [{', '.join(map(str, numbers))}]." for claim, numbers in cited)
    sources = cite(chunks)
    listed = listed_by_what_they_write(answer, sources, chunks)
    assert sorted(map(str, listed)) == sorted(map(str, sources))


def test_a_claim_without_figures_or_names_is_judged_by_the_one_before_it():
    assert claims("It is VC-26-0419 [2]. This is in note [1].") == [
        ("It is VC-26-0419 ", [2]),
        ("It is VC-26-0419 ", [1]),
    ]
    # a number cited outside brackets is no figure of the claim
    assert claims("Lou (note 2) brings the PA [1, 2].") == [("Lou   brings the PA ", [1, 2])]


def test_numbers_naming_no_source_are_left_alone():
    answer = "The certificate is VC-26-0419 [3]."
    sources = sources_of(CONTACT, LOG)
    assert listed_by_what_they_write(answer, sources, [CONTACT, LOG]) == sources


def test_in_german_sections_names_are_not_read_and_figures_still_are():
    oven = {"source": "Brot.md", "heading": "Backen", "content": "Den Ofen auf 250 °C vorheizen."}
    dough = {"source": "Teig.md", "heading": "Teig", "content": "Der Teig ruht über Nacht."}
    answer = "Der Ofen wird auf 250 °C vorgeheizt [1]."
    assert listed_by_what_they_write(answer, sources_of(dough, oven), [dough, oven]) == (
        sources_of(oven, dough)
    )
    answer = "Der Teig ruht im Kühlschrank [1]."  # no figure; its nouns are not names here
    sources = sources_of(oven, dough)
    assert listed_by_what_they_write(answer, sources, [oven, dough]) == sources


NOTES = {
    "sunil.md": "# Sunil Rao\n\nSunil Rao, electrician at Volt & Co, did the upstairs rewire.\n",
    "renovation.md": "# Renovation\n\nUpstairs rewire certificate: VC-26-0419.\n",
}


def miscited(prompt: str) -> str:
    """The writer's reply: it cites the electrician's note, wherever that was read."""
    numbers = re.findall(r'<note number="(\d+)" source="([^"]+)"', prompt)
    [cited] = [number for number, source in numbers if source == "sunil.md"]
    return f"The rewire's certificate is VC-26-0419. This is in note [{cited}]."


def test_the_graph_lists_a_miscited_answers_source_under_the_number_it_cites(graded_vault):
    vault = graded_vault(NOTES)
    models = FakeModels({"generate": miscited})
    state = build_graph(models=models).invoke(
        {"question": "What is the upstairs rewire's certificate number?"}, context=vault
    )
    settle(timeout=10)
    written = models.prompts("generate")[0]
    assert state["answer"] == miscited(written)  # the text as streamed
    cited = int(state["answer"][-3])
    assert state["sources"][cited - 1]["path"] == "renovation.md"
    assert sorted(s["path"] for s in state["sources"]) == ["renovation.md", "sunil.md"]
    assert "generate: sources listed by the sections that write what is cited" in state["steps"]


def test_rag_ask_prints_the_note_that_writes_it_under_the_number_cited(tmp_path, capsys):
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text)
    db = ["--persist-dir", str(tmp_path / "db"), "-e", "fake-embed", "-n", "notes"]
    assert main(["load", "-f", str(folder), *db], models=FakeModels()) == 0
    models = FakeModels({"generate": miscited})
    capsys.readouterr()
    question = "What is the upstairs rewire's certificate number?"
    assert main(["ask", "-q", question, "--threshold", "0", *db], models=models) == 0
    out = capsys.readouterr().out
    cited = miscited(models.prompts("generate")[0])[-3]
    assert f"[{cited}] renovation.md" in out
    assert f"[{cited}] sunil.md" not in out
