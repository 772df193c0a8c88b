"""Check the whole set-up (`rag doctor`): one line per check, each failure with its fix.

Checks, in order: Ollama reachable and its version; the chat, embedding and vision models
pulled and able to do their job; ``num_ctx`` against a typical answer prompt; the Chroma
server reachable or the index folder writable; each collection's embedding model against
the configured one; whether Ollama grades chunks in parallel.

Exit codes: 0 everything passes (warnings allowed), 2 a configuration problem, 3 a service
unreachable or failing. Ollama is reached through :class:`OllamaAPI` (``graph.ollama``'s
client by default), so tests can answer for it; a failure is reported as what it is: only a
connection that cannot be made is "unreachable", while a timeout, an HTTP error or an answer
that is not JSON is "failed" with the server's own words.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from graph.context import Context
from graph.errors import (
    OllamaBadReply,
    OllamaError,
    OllamaHTTPError,
    OllamaModelMissing,
    OllamaTimeout,
    OllamaUnreachable,
    RagError,
)
from graph.fit import ANSWER_RESERVE, estimate_tokens
from graph.models import (
    choose_think,
    keeps_earlier_prompts,
    model_info,
    parse_version,
    supports_json_schema,
    supports_logprobs,
)
from graph.ollama import OllamaClient
from graph.prompts import GENERATE_SYSTEM, GENERATE_USER, note_block

Status = Literal["ok", "warn", "config", "unreachable", "failed"]
#: The chunk size of a typical index (``rag load``'s default).
TYPICAL_CHUNK = 1500
#: Two requests at once taking at least this many times one request: served one by one
#: (in turn they take 2x; a server answering in parallel on a busy machine can reach 1.5x).
SERIAL_RATIO = 1.75
#: At most this many times one request: served in parallel. In between, the timing does not
#: tell the two apart, and the check says so rather than guess.
PARALLEL_RATIO = 1.35
#: Rounds timed of each kind; the fastest counts, since a busy machine only adds time.
TIMING_ROUNDS = 3


#: What an :class:`OllamaAPI` raises when no connection can be made, and when ``/api/show``
#: does not know the model (the names a fake server in the tests raises).
Unreachable = OllamaUnreachable
NotFound = OllamaModelMissing


class OllamaAPI(Protocol):
    """The little of Ollama's HTTP API the doctor uses; failures are ``OllamaError``s."""

    def get(self, path: str) -> dict:
        """GET ``path``'s JSON."""
        ...

    def post(self, path: str, body: dict) -> dict:
        """POST ``body`` to ``path``, return the JSON answer."""
        ...


@dataclass
class Check:
    """One line of the report."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def line(self) -> str:
        """``[ok] name: detail`` and, for a problem, ``  → fix``."""
        mark = "FAIL" if self.status in ("config", "unreachable", "failed") else self.status
        return f"[{mark:>4}] {self.name}: {self.detail}" + (
            f" — fix: {self.fix}" if self.fix else ""
        )


def exit_code(checks: list[Check]) -> int:
    """3 if a service is unreachable or failing, else 2 if something is misconfigured, else 0."""
    statuses = {c.status for c in checks}
    return 3 if statuses & {"unreachable", "failed"} else 2 if "config" in statuses else 0


def diagnose(
    context: Context,
    ollama: OllamaAPI | None = None,
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> list[Check]:
    """Every check, in order (later ones are skipped when what they need is unreachable)."""
    api = ollama or OllamaClient(context.ollama_base_url, context.request_timeout)
    checks: list[Check] = []
    reachable = _check_ollama(context, api, checks)
    chat_ok = False
    if reachable:
        chat_ok = _check_models(_with_embedding_model(context), api, checks)
    checks.append(_check_num_ctx(context))
    if _check_chroma(context, checks):
        _check_collections(context, checks)
    if reachable and chat_ok:
        checks.append(_check_parallel(context, api, clock))
    return checks


def _check_ollama(context: Context, api: OllamaAPI, checks: list[Check]) -> bool:
    url = context.ollama_base_url
    try:
        version = str(api.get("/api/version").get("version", ""))
    except OllamaError as exc:
        checks.append(_failed("ollama", exc, url))
        return False
    parsed = parse_version(version)
    if not supports_json_schema(parsed):
        checks.append(
            Check(
                "ollama",
                "warn",
                f"Ollama {version} at {url} predates JSON-schema output; grades use JSON mode",
                "upgrade Ollama: 0.5 or later for reliable grades, 0.12.11 or later for the "
                "answer check's probabilities",
            )
        )
    elif context.check_answers and not supports_logprobs(parsed):
        checks.append(
            Check(
                "ollama",
                "warn",
                f"Ollama {version} at {url} predates token log-probabilities; the answer "
                "check takes any yes",
                "upgrade Ollama to 0.12.11 or later: the check then lets only a sure yes pass",
            )
        )
    elif not keeps_earlier_prompts(parsed):
        checks.append(
            Check(
                "ollama",
                "warn",
                f"Ollama {version} at {url} keeps only the prompt it read last: each question "
                "reads the grader's and the answer's instructions again",
                "upgrade Ollama to 0.30 or later: it keeps earlier prompts in memory too, and "
                "answers start sooner",
            )
        )
    else:
        checks.append(Check("ollama", "ok", f"Ollama {version} at {url}"))
    return True


#: What to do about each kind of Ollama failure (the first that matches).
_FIXES: tuple[tuple[type[OllamaError], str], ...] = (
    (OllamaUnreachable, "start it with `ollama serve`, or point OLLAMA_HOST / --ollama-host at it"),
    (OllamaTimeout, "check the server's load, or raise RAG_REQUEST_TIMEOUT / --timeout"),
    (OllamaHTTPError, "read Ollama's own log (`journalctl -u ollama` or its console)"),
    (OllamaBadReply, "point OLLAMA_HOST / --ollama-host at an Ollama server"),
)


def _failed(name: str, exc: OllamaError, url: str) -> Check:
    """The check ``name`` failed by ``exc``: "unreachable" only when no connection was made."""
    fix = next((text for kind, text in _FIXES if isinstance(exc, kind)), "")
    if isinstance(exc, OllamaUnreachable):
        reason = exc.__cause__ or exc  # the connection error itself, e.g. "Connection refused"
        return Check(name, "unreachable", f"no answer from {url} ({reason})", fix)
    return Check(name, "failed", str(exc), fix)


def _show(api: OllamaAPI, model: str) -> dict | None:
    """``/api/show``'s answer for ``model``; ``None`` when it is not pulled."""
    try:
        return api.post("/api/show", {"model": model})
    except OllamaModelMissing:
        return None


def _check_models(context: Context, api: OllamaAPI, checks: list[Check]) -> bool:
    """Chat, embedding and vision models; True when the chat model can answer."""
    wanted: list[tuple[str, str, str]] = [
        ("chat model", context.chat_model, "completion"),
        ("embedding model", context.embedding_model, "embedding"),
    ]
    if context.vision_model:
        wanted.append(("vision model", context.vision_model, "vision"))
    chat_ok = False
    for role, model, needed in wanted:
        try:
            shown = _show(api, model)
        except OllamaError as exc:
            checks.append(_failed(role, exc, context.ollama_base_url))
            continue
        if shown is None:
            checks.append(Check(role, "config", f"{model} is not pulled", f"`ollama pull {model}`"))
            continue
        info = model_info(shown)
        caps = ", ".join(sorted(info.capabilities)) or "not reported"
        # Servers before capabilities were reported say nothing: not a reason to fail.
        if info.capabilities and needed not in info.capabilities:
            checks.append(
                Check(
                    role,
                    "config",
                    f"{model} cannot do '{needed}' (capabilities: {caps})",
                    f"choose a model with '{needed}' ({_SETTING[role]})",
                )
            )
            continue
        detail = f"{model} ({caps})"
        if "thinking" in info.capabilities:
            think = choose_think(info, reasoning=False)
            detail += (
                "; reasoning switched off for internal calls"
                if think is False
                else f"; reasoning cannot be switched off, effort '{think}' is used"
            )
        checks.append(Check(role, "ok", detail))
        chat_ok = chat_ok or role == "chat model"
    if not context.vision_model and context.enable_image and chat_ok:
        shown = _show(api, context.chat_model)
        if shown is not None and "vision" not in model_info(shown).capabilities:
            checks.append(
                Check(
                    "vision model",
                    "warn",
                    f"none set and {context.chat_model} cannot see images: image questions "
                    "get no answer",
                    "set RAG_VISION_MODEL (e.g. llava) and `ollama pull` it",
                )
            )
    return chat_ok


_SETTING = {
    "chat model": "RAG_CHAT_MODEL / --model",
    "embedding model": "RAG_EMBEDDING_MODEL / -e",
    "vision model": "RAG_VISION_MODEL / --vision-model",
}


def typical_prompt_tokens(context: Context) -> int:
    """Tokens of an answer prompt with ``k`` full-size chunks, plus room for the answer."""
    chunk = {
        "source": "folder/a-typical-note.md",
        "heading": "Title > Section",
        "content": "x" * TYPICAL_CHUNK,
    }
    notes = "\n".join(note_block(chunk, number=i) for i in range(1, context.k + 1))
    prompt = f"{GENERATE_SYSTEM}\n{GENERATE_USER.format(notes=notes, question='q' * 200)}"
    return estimate_tokens(prompt) + min(ANSWER_RESERVE, context.num_ctx // 4)


def _check_num_ctx(context: Context) -> Check:
    needed = typical_prompt_tokens(context)
    if needed <= context.num_ctx:
        return Check(
            "context window",
            "ok",
            f"num_ctx {context.num_ctx} holds {context.k} chunks of {TYPICAL_CHUNK} characters "
            f"(about {needed} tokens)",
        )
    return Check(
        "context window",
        "config",
        f"num_ctx {context.num_ctx} is too small for {context.k} chunks of {TYPICAL_CHUNK} "
        f"characters (about {needed} tokens): the lowest-ranked chunks would be dropped",
        f"raise RAG_NUM_CTX / --num-ctx to {_round_up(needed)} or lower RAG_K / -k",
    )


def _round_up(tokens: int) -> int:
    return -(-tokens // 1024) * 1024


def _check_chroma(context: Context, checks: list[Check]) -> bool:
    if context.chroma_server_url:
        from graph.index.vectorstore import open_client

        try:
            open_client(context)
        except RagError as exc:
            status: Status = "unreachable" if exc.exit_code == 3 else "config"
            checks.append(Check("chroma", status, str(exc), "check RAG_CHROMA_URL / -d"))
            return False
        checks.append(Check("chroma", "ok", f"server at {context.chroma_server_url}"))
        return True
    folder = Path(context.effective_chroma_dir)
    problem = _unwritable(folder)
    if problem:
        checks.append(
            Check(
                "chroma",
                "config",
                f"index folder {folder} is not writable ({problem})",
                "point RAG_CHROMA_DIR / --persist-dir at a writable folder",
            )
        )
        return False
    checks.append(Check("chroma", "ok", f"index folder {folder} is writable"))
    return folder.is_dir()


def _unwritable(folder: Path) -> str:
    """Why ``folder`` cannot be written (empty: it can), without creating it."""
    existing = folder
    while not existing.exists():
        if existing.parent == existing:
            return "no existing parent"
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file"
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return ""


def _with_embedding_model(context: Context) -> Context:
    """The embedding model questions will use: as set, else the collection's, else the default."""
    from dataclasses import replace

    from graph.index.vectorstore import DEFAULT_EMBEDDING_MODEL, with_embedding_model

    try:
        return with_embedding_model(context)
    except RagError:  # the index cannot be opened: the Chroma check reports it
        return replace(context, embedding_model=context.embedding_model or DEFAULT_EMBEDDING_MODEL)


def _check_collections(context: Context, checks: list[Check]) -> None:
    from graph.index.catalog import describe_collections

    try:
        rows = describe_collections(context)
    except RagError as exc:
        status: Status = "unreachable" if exc.exit_code == 3 else "config"
        checks.append(Check("collections", status, str(exc)))
        return
    names = {row["name"] for row in rows}
    if context.collection_name not in names:
        checks.append(
            Check(
                "collections",
                "warn",
                f"no collection '{context.collection_name}' yet",
                "`rag load -f FOLDER`",
            )
        )
    for row in rows:
        model = row["embedding_model"]
        # With no model set, each collection is searched with its own: only a set one can clash.
        if model and context.embedding_model and model != context.embedding_model:
            status = "config" if row["name"] == context.collection_name else "warn"
            checks.append(
                Check(
                    f"collection {row['name']}",
                    status,
                    f"loaded with {model}, but the configured embedding model is "
                    f"{context.embedding_model}: its searches would find nothing useful",
                    f"set RAG_EMBEDDING_MODEL={model}, or `rag load --rebuild` it",
                )
            )
        else:
            checks.append(
                Check(
                    f"collection {row['name']}",
                    "ok",
                    f"{row['notes']} notes, {row['chunks']} chunks, {model or 'model unknown'}",
                )
            )


def _check_parallel(context: Context, api: OllamaAPI, clock: Callable[[], float]) -> Check:
    """Time two tiny requests at once against one: Ollama's OLLAMA_NUM_PARALLEL is not visible."""
    if context.grade_concurrency == 1:
        return Check("parallel grading", "ok", "grade_concurrency is 1: chunks graded in turn")
    body: dict[str, Any] = {
        "model": context.chat_model,
        "messages": [{"role": "user", "content": "Say yes."}],
        "stream": False,
        "options": {"num_predict": 8, "temperature": 0},
    }

    def once() -> float:
        started = clock()
        api.post("/api/chat", body)
        return clock() - started

    def pair(pool: ThreadPoolExecutor) -> float:
        started = clock()
        list(pool.map(lambda _: api.post("/api/chat", body), range(2)))
        return clock() - started

    try:
        once()  # loads the model: not timed
        single = min(once() for _ in range(TIMING_ROUNDS))
        with ThreadPoolExecutor(max_workers=2) as pool:
            double = min(pair(pool) for _ in range(TIMING_ROUNDS))
    except OllamaError as exc:
        return Check("parallel grading", "warn", f"could not time requests: {exc}")
    ratio = double / single if single > 0 else 1.0
    if PARALLEL_RATIO < ratio < SERIAL_RATIO:
        return Check(
            "parallel grading",
            "ok",
            f"inconclusive: two requests took {ratio:.1f}x one (in turn: 2x, in parallel: "
            f"about 1x; a busy machine blurs the two); rerun `rag doctor` when it is idle",
        )
    if ratio >= SERIAL_RATIO:
        return Check(
            "parallel grading",
            "warn",
            f"two requests took {ratio:.1f}x one: Ollama answers one at a time, so "
            f"grade_concurrency {context.grade_concurrency} does not speed grading up",
            f"start Ollama with OLLAMA_NUM_PARALLEL={context.grade_concurrency} "
            "(memory permitting)",
        )
    return Check(
        "parallel grading", "ok", f"two requests took {ratio:.1f}x one: served in parallel"
    )


def report(checks: list[Check], as_json: bool = False) -> str:
    """The checks as lines, or as JSON with the exit code."""
    if as_json:
        import json

        return json.dumps(
            {"exit_code": exit_code(checks), "checks": [asdict(c) for c in checks]}, indent=2
        )
    return "\n".join(c.line() for c in checks)
