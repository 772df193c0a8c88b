"""``rag load --watch``: keep a collection in step with its notes folder.

After the first load, every burst of file-system changes under the folder (quiet for the
debounce time) triggers the same incremental load: it re-embeds only notes whose content
changed and removes the chunks of notes that are gone, so creating, editing, deleting and
renaming notes are all one code path. Editors that save by writing a temporary file and
renaming it over the note show up as a change of the note itself. Events are only a trigger:
what is indexed is decided by comparing the folder with the collection, so a missed or
coalesced event can never leave the index wrong after the next load.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from langchain_core.embeddings import Embeddings

from graph.context import Context
from graph.errors import ConfigError
from graph.index.ingest import NOTE_SUFFIXES, LoadOptions, LoadReport, load_notes

#: Milliseconds without a new change before a load starts (editors write in several steps).
DEBOUNCE_MS = 600


def change_lines(report: LoadReport) -> list[str]:
    """One line per note the load changed in the index."""
    return (
        [f"added {source}" for source in report.added]
        + [f"updated {source}" for source in report.updated]
        + [f"removed {source}" for source in report.removed]
        + [f"skipped {source}: {reason}" for source, reason in report.skipped]
    )


def watch_notes(
    context: Context,
    notes_dir: str | Path,
    embeddings: Embeddings,
    options: LoadOptions | None = None,
    *,
    notify: Callable[[str], None],
    on_ready: Callable[[], None] = lambda: None,
    debounce_ms: int = DEBOUNCE_MS,
    stop: threading.Event | None = None,
) -> None:
    """Load on every change under ``notes_dir`` until ``stop`` is set or Ctrl-C.

    ``on_ready`` runs once the watcher is in place and the index caught up with the folder.

    A load that finds no notes at all (the folder emptied) is reported and the watch goes
    on; the index keeps what it had until notes come back. Ctrl-C raises
    ``KeyboardInterrupt`` to the caller: a load cut short leaves an index that every reader
    can use and that the next load completes (see ``graph.index.ingest``).
    """
    from watchfiles import watch

    root = Path(notes_dir).expanduser().resolve()
    ready = False
    for changes in watch(
        root,
        watch_filter=lambda _change, path: _may_be_note(root, path),
        debounce=debounce_ms,
        step=50,
        stop_event=stop,
        raise_interrupt=True,
        # An empty set arrives after this long without changes: the first one says the
        # watcher is in place, so a change made from then on cannot be missed.
        yield_on_timeout=True,
        rust_timeout=500,
    ):
        if not changes and ready:
            continue
        try:
            report = load_notes(context, root, embeddings, options, notify=notify)
        except ConfigError as exc:
            notify(f"warning: {exc}")
            continue
        for line in change_lines(report):
            notify(line)
        if not ready:  # the first load caught up with changes made before the watcher began
            ready = True
            on_ready()


def _may_be_note(root: Path, path: str) -> bool:
    """Changes worth a load: notes, and folders (a deleted folder takes its notes along)."""
    try:
        relative = Path(path).relative_to(root)
    except ValueError:
        return False
    if any(part.startswith(".") for part in relative.parts):
        return False
    suffix = relative.suffix.lower()
    return suffix in NOTE_SUFFIXES or suffix == ""
