r"""Everything ``rag`` prints goes through here, without control characters.

Notes, file names, model replies and error messages may carry escape sequences: a note
named ``x_\e]0;PWN\a.md`` would set the terminal's title, ``\e[2J`` clear the screen.
Every line ``rag`` writes (results, watch lines, warnings, errors, prompts, ``--json``)
passes through one function here, and ``tests/unit_tests/test_cli_output.py`` checks that
no other module of ``app.cli`` writes to the terminal itself.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Protocol

# C0 controls except tab and newline, DEL, C1 controls (so no escape sequence survives, even
# one cut across two streamed tokens), and lone surrogates: a file name's undecodable byte,
# which a terminal in the POSIX locale would get back raw (0x9b is a C1 CSI there).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
# What json.dumps(ensure_ascii=False) leaves raw inside strings although a terminal acts on it.
_JSON_RAW = re.compile("[\x7f-\x9f\ud800-\udfff]")


def terminal_text(text: str) -> str:
    """``text`` without control characters, safe to print to a terminal."""
    return _CONTROL.sub("", text)


def json_safe(document: str) -> str:
    r"""JSON text with DEL, C1 controls and lone surrogates escaped (``\u009b``): same data.

    ``json.dumps`` escapes C0 controls already; these can only occur inside strings, where
    an escape means the same character, so the document stays valid and parses the same.
    """
    return _JSON_RAW.sub(lambda match: f"\\u{ord(match.group()):04x}", document)


class Writer(Protocol):
    """Where text can be written (a text stream)."""

    def write(self, text: str, /) -> object:
        """Write ``text``."""
        ...


def say(
    text: str = "", *, end: str = "\n", stream: Writer | None = None, flush: bool = False
) -> None:
    """Write ``text`` (a result) on ``stream``, stdout unless told, without control characters."""
    out = sys.stdout if stream is None else stream
    out.write(terminal_text(text + end))
    flush_out = getattr(out, "flush", None)
    if flush and flush_out is not None:
        flush_out()


def say_json(data: Any) -> None:
    """Write ``data`` on stdout as indented JSON (``--json``), escaped for a terminal."""
    say(json_safe(json.dumps(data, indent=2, ensure_ascii=False)))


def sources(listed: list[Any]) -> None:
    """An answer's sources, numbered as the answer cites them inline (``[1]``)."""
    from graph.state import source_line

    for number, source in enumerate(listed, start=1):
        say(f"  {source_line(number, source)}")


def warn(text: str, *, end: str = "\n", flush: bool = False) -> None:
    """Write ``text`` (a warning, progress or reasoning) on stderr without control characters."""
    say(text, end=end, stream=sys.stderr, flush=flush)


def error(message: str) -> None:
    """Write the one-line ``rag: error: ...`` on stderr."""
    warn(f"rag: error: {message}")


def error_trace() -> None:
    """Write the traceback of the exception being handled (``--debug``) on stderr."""
    warn(traceback.format_exc(), end="")


class ProgressBar:
    """A long run's count, rate and time left on stderr (tqdm), redrawn in place.

    Shown only to a person watching: nothing when stderr is not a terminal (a pipe, a file,
    CI). Called as ``bar(done, total, note)`` by the work it follows (``note``: a few words
    such as "3 kept", shown after the figures); a bar ends when ``done`` reaches ``total``,
    and the next call starts a new one (one bar per design or per set). Used as a context
    manager, so a run stopped half way leaves its line ended.
    """

    def __init__(self, what: str, unit: str) -> None:
        self.what = terminal_text(what)
        self.unit = terminal_text(unit)
        self._bar: Any = None

    def __call__(self, done: int, total: int, note: str = "") -> None:
        """Show ``done`` of ``total`` (and ``note``); the bar ends when they are equal."""
        if total <= 0 or not sys.stderr.isatty():
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total, desc=self.what, unit=self.unit, file=sys.stderr, dynamic_ncols=True
            )
        if note:
            self._bar.set_postfix_str(terminal_text(note), refresh=False)
        self._bar.update(done - self._bar.n)
        if done >= total:
            self.close()

    def close(self) -> None:
        """End the bar's line (nothing when none is shown)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


#: Erases the terminal's current line and returns to its start: a status line's own code.
_ERASE_LINE = "\r\x1b[2K"


class StatusLine:
    """One line on stderr saying what is being done and for how long, redrawn in place.

    Shown only to a person watching: when ``enabled`` and both stdout and stderr are
    terminals (nothing in a pipe, a file or ``--json``). Redrawn every ``interval`` seconds
    so the time keeps counting while a stage lasts. Anything else printed while it is up
    goes through :meth:`above` (the line is erased, the text printed, the line drawn again
    below it) or follows :meth:`hide` (answer tokens: the line stays away until the next
    :meth:`show`). Used as a context manager: the line is gone when the block ends.
    """

    def __init__(self, enabled: bool = True, interval: float = 0.5) -> None:
        self.enabled = enabled and sys.stdout.isatty() and sys.stderr.isatty()
        self.interval = interval
        self.started = time.monotonic()
        self.text = ""
        self._drawn = False
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> StatusLine:
        if self.enabled:
            self._ticker = threading.Thread(target=self._tick, name="status-line", daemon=True)
            self._ticker.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        self.hide()

    def show(self, text: str) -> None:
        """Say ``text`` from now on (with the time since the line was made)."""
        with self._lock:
            self.text = text
            self._draw()

    def hide(self) -> None:
        """Erase the line until the next :meth:`show`."""
        with self._lock:
            self.text = ""
            self._erase()

    @contextmanager
    def above(self) -> Iterator[None]:
        """Print something above the line: erased before, drawn again after."""
        with self._lock:
            self._erase()
            yield
            self._draw()

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                self._draw()

    def _draw(self) -> None:
        if not (self.enabled and self.text):
            return
        line = f"[{time.monotonic() - self.started:5.1f} s] {terminal_text(self.text)}"
        # Longer than the terminal, the line would wrap and the carriage return could not
        # take it back.
        width = shutil.get_terminal_size().columns - 1
        sys.stderr.write(_ERASE_LINE + line[:width])
        sys.stderr.flush()
        self._drawn = True

    def _erase(self) -> None:
        if self._drawn:
            sys.stderr.write(_ERASE_LINE)
            sys.stderr.flush()
            self._drawn = False


def answer_piece(
    payload: tuple[Any, dict[str, Any]],
    filters: dict[str, Any],
    status: StatusLine,
    show_thinking: bool,
) -> str:
    """Print a streamed message piece (``messages`` mode) if an answering node wrote it.

    Reasoning is split off by one ``ReasoningFilter`` per node in ``filters``, and goes to
    stderr only when ``show_thinking``. Returns the answer text printed.
    """
    from graph.llm import ReasoningFilter, message_text

    chunk, metadata = payload
    node = metadata.get("langgraph_node")
    if node not in ("generate", "image"):
        return ""
    reasoning, text = filters.setdefault(node, ReasoningFilter()).feed(message_text(chunk))
    reasoning += chunk.additional_kwargs.get("reasoning_content") or ""
    if reasoning or text:
        status.hide()
    if reasoning and show_thinking:
        warn(reasoning, end="", flush=True)
    if text:
        say(text, end="", flush=True)
    return text


def interactive() -> bool:
    """Whether a person can answer a question (stdin is a terminal)."""
    return sys.stdin.isatty()


def ask(question: str) -> str:
    """Ask ``question`` on stdout and return the reply typed on stdin."""
    return input(terminal_text(question))
