"""The notes index: reading a notes folder into Chroma and searching it.

Everything that knows about Chroma, the notes on disk, chunking, embeddings conventions and
BM25 lives here. The rule that keeps it reusable: ``graph.index`` never imports ``nodes``,
``graph.builder`` or ``graph.state``; the graph imports the index, never the reverse
(``tests/unit_tests/test_layout.py`` checks it). Collection facts (the ``rag:*`` metadata
keys) are read and written only through :class:`graph.index.vectorstore.IndexInfo`.

Nothing is imported here: ``graph.context`` needs ``graph.index.embedding`` while the rest of
the package needs ``graph.context``, so each module is imported by its own name.
"""
