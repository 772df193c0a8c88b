"""A markdown table is indexed one line a row, each cell after its column's header (parser 3)."""

from __future__ import annotations

from graph.index.chunking import partition_note, table_text
from graph.index.obsidian import parser_for
from graph.index.retrieval import RetrievedChunk
from graph.window import question_window

DOCTORS = (
    "# Ärzte\n\n## Ärztinnen und Ärzte\n\n"
    "| Wer | Fach | Telefon | Für wen |\n"
    "|---|---|---|---|\n"
    "| Dr. Sabine Hoffmann | Hausärztin | 0341 5567890 | Jana, Tobias |\n"
    "| Dr. Katrin Brandt | Orthopädin, 3. OG | 0341 9123456 | |\n"
    "| Dr. Emre Yilmaz | Kinderarzt | 0341 4455667 | Lina |\n"
)


def _section(text: str, heading: str) -> str:
    return next(s.text for s in partition_note(text) if s.heading.endswith(heading))


def test_each_row_is_a_line_with_each_cell_after_its_header():
    lines = _section(DOCTORS, "Ärztinnen und Ärzte").splitlines()
    # the phone number stands on the line of the doctor it belongs to, after "Telefon"
    assert lines == [
        "Wer: Dr. Sabine Hoffmann; Fach: Hausärztin; Telefon: 0341 5567890; Für wen: Jana, Tobias",
        "Wer: Dr. Katrin Brandt; Fach: Orthopädin, 3. OG; Telefon: 0341 9123456",
        "Wer: Dr. Emre Yilmaz; Fach: Kinderarzt; Telefon: 0341 4455667; Für wen: Lina",
    ]


def test_a_question_s_window_of_a_long_table_keeps_the_row_it_asks_about():
    rows = "".join(f"| Dr. Name{i} | Fach{i} | 0341 {i:07d} | Familie{i} |\n" for i in range(30))
    text = _section(DOCTORS + rows, "Ärztinnen und Ärzte")
    chunk = RetrievedChunk(content=text, source="Ärzte.md", heading="Ärzte", score=0.5)
    window = question_window(chunk, "Welche Telefonnummer hat Dr. Brandt?", 600)["content"]
    assert len(window) < len(text)
    assert "Wer: Dr. Katrin Brandt; Fach: Orthopädin, 3. OG; Telefon: 0341 9123456" in window


def test_cells_are_read_as_text_markup_and_entities_included():
    got = table_text(
        "<table><thead><tr><th>Item</th><th>Price</th></tr></thead><tbody>"
        "<tr><td><strong>Bread</strong> &amp; butter</td><td>3 <code>€</code></td>"
        "<td>extra</td></tr></tbody></table>",
        "flat",
    )
    assert got == "Item: Bread & butter; Price: 3 €; extra"


def test_a_table_without_a_header_row_gives_its_cells_apart():
    got = table_text("<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td></td></tr></table>", "")
    assert got == "a | b\nc"


def test_a_header_far_longer_than_its_cells_is_not_repeated_on_every_row():
    # A note may come from someone else: a long header over many short cells would make the
    # section many times the note's size.
    header = "<tr>" + "".join(f"<th>{'h' * 500}{i}</th>" for i in range(3)) + "</tr>"
    body = "<tr><td>1</td><td>2</td><td>3</td></tr>" * 50
    got = table_text(f"<table><thead>{header}</thead><tbody>{body}</tbody></table>", "")
    assert got.splitlines() == ["1 | 2 | 3"] * 50


def test_unstructured_s_own_text_is_kept_where_the_html_holds_no_row():
    assert table_text(None, "a b c") == table_text("<p>x</p>", "a b c") == "a b c"


def test_a_note_with_a_table_is_read_again_by_parser_3_and_only_such_a_note():
    assert parser_for(DOCTORS) == 3
    assert parser_for("---\nphone: 1\n---\n| a |\n|:-:|\n") == 3
    assert parser_for("a | b\n--- | ---\n1 | 2\n") == 3
    assert parser_for("---\nphone: 1\n---\nbody\n") == 2
    # dashes and pipes in other lines are no table
    for text in ("a - b | c\n", "---\n\ntext\n\n---\n", "x || y\n- item\n", "|a|\n"):
        assert parser_for(text) == 1, text
