"""Loading got faster without changing what is indexed: chunks are pinned by hash.

tests/unit_tests/data/chunk_fingerprints.json was computed with the partitioning used before
(unstructured with language detection and narrative-text classification); the fast path
and the parallel path must produce exactly the same chunks, hence the same chunk ids.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graph.index.chunking import chunk_note, chunk_sections, sections_of
from graph.index.offline import unstructured_offline
from graph.index.parsing import chunk_notes
from tests.unit_tests.chunk_corpus import corpus, fingerprint

ROOT = Path(__file__).resolve().parents[2]
PINNED = json.loads((Path(__file__).parent / "data" / "chunk_fingerprints.json").read_text())
SIZES = {"1500/300": (1500, 300), "200/40": (200, 40)}


@pytest.mark.parametrize("sizes", SIZES)
def test_fast_partitioning_gives_the_pinned_chunks(sizes):
    notes = corpus()
    assert set(notes) == set(PINNED[sizes])
    got = {source: fingerprint(chunk_note(text, *SIZES[sizes])) for source, text in notes.items()}
    assert got == PINNED[sizes]


def test_unstructured_own_classification_still_gives_the_pinned_chunks():
    from unstructured.partition.md import partition_md

    notes = corpus()
    picked = ["edge/mixed.md", "sample_notes/career/interviews.md", "gen/note-0.md"]
    for source in picked:
        with unstructured_offline():
            elements = partition_md(text=notes[source])  # language detection, spaCy tests
        chunks = chunk_sections(sections_of(elements), 1500, 300)
        assert fingerprint(chunks) == PINNED["1500/300"][source], source


def test_parallel_chunking_keeps_order_and_chunks():
    notes = corpus()
    sources = list(notes)
    every = chunk_notes([notes[s] for s in sources], 1500, 300, workers=2, parallel_from=2)
    assert {s: fingerprint(c) for s, c in zip(sources, every)} == PINNED["1500/300"]


def test_fast_path_does_not_change_unstructured_for_other_callers(monkeypatch):
    # Imported and called directly, unstructured sends its telemetry unless told not to (the
    # tests have no network: the blocked request surfaced as a warning).
    monkeypatch.setenv("DO_NOT_TRACK", "1")
    from unstructured.partition.md import partition_md

    chunk_note("# T\n\nSome text here that is long enough to be a sentence.\n", 1500, 300)
    kinds = {type(e).__name__ for e in partition_md(text="We went to the market and bought bread.")}
    assert kinds == {"NarrativeText"}


def test_chunking_does_not_import_torch_yet_torch_still_imports_afterwards(tmp_path):
    """spaCy's thinc imports torch whenever it is installed (4-6 s per loading process).

    The torch here is a stand-in package first on the path, so the test needs no real torch:
    it logs each import, and it is as importable as torch is (``torch.utils.dlpack`` too, so
    a thinc that reached it would go on to read its attributes, and fail).
    """
    fake = tmp_path / "site" / "torch"
    (fake / "utils").mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "import os\n"
        "with open(os.environ['TORCH_IMPORTS'], 'a') as log:\n"
        "    log.write('imported\\n')\n"
        "STAND_IN = True\n"
    )
    (fake / "utils" / "__init__.py").write_text("")
    (fake / "utils" / "dlpack.py").write_text("")
    imports = tmp_path / "torch-imports.log"
    imports.write_text("")
    script = (
        "import sys\n"
        "from graph.index.chunking import chunk_note\n"
        "chunk_note('# T\\n\\nSome text here that is long enough.\\n', 1500, 300)\n"
        "from unstructured.partition.md import partition_md\n"
        "from graph.index.offline import unstructured_offline\n"
        "with unstructured_offline():\n"
        "    partition_md(text='We went to the market and bought bread.')  # spaCy runs too\n"
        "print('torch' in sys.modules, open(sys.argv[1]).read().count('imported'))\n"
        "import torch\n"
        "print(torch.STAND_IN)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake.parent), str(ROOT)])}
    result = subprocess.run(
        [sys.executable, "-c", script, str(imports)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**env, "TORCH_IMPORTS": str(imports)},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "0", "True"]
    assert imports.read_text() == "imported\n"  # once, by the script itself
