"""unstructured kept offline and quiet while it runs, and only then.

unstructured (the markdown partitioner behind ``graph.index.chunking``) sends a telemetry
request to its vendor when it is imported and again on each partition call, and prints an
advertising notice, unless these variables are set; it reads them at each of those moments.
The product must never reach the network except the local Ollama and Chroma, so they are
set while unstructured is imported or called, and put back afterwards: the rest of the
process (a notebook's other libraries) sees its environment as it was. Chroma's telemetry is
switched off where its clients are made (``graph.index.vectorstore.chroma_settings``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Each variable and the value set when it is unset or empty. unstructured treats any
#: non-empty DO_NOT_TRACK / SCARF_NO_ANALYTICS as "opted out", so a user's own value stays.
UNSTRUCTURED_QUIET = {
    "DO_NOT_TRACK": "1",
    "SCARF_NO_ANALYTICS": "true",
    # The notice goes to stdout on a terminal, where `rag` writes its answers.
    "UNSTRUCTURED_DISABLE_NOTICE": "1",
}

_lock = threading.Lock()
_depth = 0
_saved: dict[str, str | None] = {}


@contextmanager
def unstructured_offline() -> Iterator[None]:
    """Run the block with unstructured's telemetry and notice switched off (see the module).

    Also a decorator. Nested and concurrent uses share one setting: the variables go back
    to their earlier values when the last use ends.
    """
    global _depth
    with _lock:
        if _depth == 0:
            _saved.clear()
            for name, value in UNSTRUCTURED_QUIET.items():
                _saved[name] = os.environ.get(name)
                if not (_saved[name] or "").strip():
                    os.environ[name] = value
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for name, earlier in _saved.items():
                    if earlier is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = earlier
