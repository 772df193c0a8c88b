"""The evaluation lab: what measures this project's quality, apart from any way in.

Labelled sets and their roles (``sets``), retrieval metrics (``retrieval``), answers through
this graph and the classic design (``answers``, ``classic_rag``), fitting the answer check's
bar (``calibrate``) and writing a labelled set from a user's own notes (``questions``, on the
sections ``sections`` draws). ``rag eval``, ``rag calibrate`` and ``rag questions`` are
thin commands over it; notebooks and ``bench/`` import it directly. It imports the graph
and the index, never ``app.cli`` or ``app.serving``.
"""
