"""A grade's verdict in one decoded token: the model's own opening sent back, its word read.

Asked with Ollama's JSON-schema ``format``, Qwen2.5-Coder-1.5B writes ``{"score": "yes"}``
over three lines: nine decode steps (about 0.5 s on 2 cores) for one decision, six of them
before the verdict's word. Once a model has written that opening, later grades send it back
as the beginning of the assistant's reply (Ollama and llama.cpp continue a final assistant
message) and let the model write one token, the verdict's word: 0.85-1.15 s a grade instead
of 1.4-1.65 s on 2 cores. The verdict follows the same text, but not the same arithmetic: the
opening is read in one batch with the prompt where the model wrote it token by token, and
llama.cpp's batched and one-token kernels round differently. With Qwen2.5-Coder-1.5B, 31 of
922 verdicts of the evaluation sets came out the other way (25 of them "no" where the format
had "yes"), each of a P(yes) between 0.45 and 0.59 under the format (``bench/grade_opening.py``).
Read from the token's log-probabilities, the P(yes) after the opening keeps the surest section
first, and kept against ``OPENING_BAR`` (0.47) it gives the format's verdict for 342 of the
tune sets' 345 sections (338 as the word). Off by default (``AFTER_THE_OPENING``): nearly equal
P(yes)s still come in another order, and the 1.5B writer answers two daily-vault questions
worse from the same sections in another order (``bench/opening_bar.py``).

A reply that is not a verdict word (``Yes``, ``y`` and ``n`` count) is asked again the usual
way. A model whose chat template starts a new reply instead of continuing the last one (its
reply begins ``{`` again) is asked the usual way from then on, and so is one whose reply
carries reasoning (a level it cannot switch off, or ``<think>`` in its text): its verdict
follows its reasoning, which the opening would skip.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage

from graph.context import Context
from graph.llm import message_text, reply, yes_probability
from graph.models import CHECK_TOP_LOGPROBS, ModelProvider, Purpose, get_models, model_for

#: Whether a grade is asked after the model's opening once it has written one (else always
#: with the format). Off: read as the word, the verdicts are the format's but for 31 of 922
#: sections, each at a P(yes) between 0.45 and 0.59, and the runbooks and the German notes each
#: let one more near miss through; by P(yes) against ``OPENING_BAR``, the daily vault loses two
#: right answers to kept sections read in another order (docs/quality.md).
AFTER_THE_OPENING = False

#: After the opening, a section is kept when the grader's P(yes) reaches this (``None``: when
#: the word it writes is "yes"). Read after the opening, P(yes) comes out a little lower than
#: under the format; of the bars 0.40-0.60, 0.47 gives the format's verdict for the most
#: sections of the tune sets (342 of 345; 0.5: 339).
OPENING_BAR: float | None = 0.47

#: A verdict's opening as a model writes it under the format: up to the value's first quote
#: (the reply may end after the value: ``VERDICT_END``).
_OPENING = re.compile(r'(\{\s*"score"\s*:\s*")(?:yes|no)(?:"|$)')

#: The one token read after the opening: the word, or its first letter (a tokenizer may split).
_WORD = re.compile(r"\s*(yes|no|y|n)\W*", re.IGNORECASE)

#: Per provider, per server and model: the opening it wrote (``None``: not to be used).
_openings: weakref.WeakKeyDictionary[ModelProvider, dict[tuple[str, str], str | None]] = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()


def ask_verdict(
    context: Context, purpose: Purpose, prompt: Sequence[BaseMessage]
) -> tuple[str, float | None]:
    """The reply to a yes/no ``prompt`` answered as ``{"score": ...}`` (a grade), and P(yes).

    After the model's own opening where it has written one (``AFTER_THE_OPENING``), else
    asked with the format (and its opening learned from the reply). After the opening, the
    verdict is its P(yes) against ``OPENING_BAR`` where that is set and the server gives
    log-probabilities, else the word. P(yes) is ``None`` where the server gives none.
    """
    provider, model = get_models(), (context.ollama_base_url, model_for(context, purpose))
    try:
        with _lock:
            known = _openings.setdefault(provider, {})
            opening = known.get(model) if AFTER_THE_OPENING else None
    except TypeError:  # a provider that cannot be a key (unhashable, no weak references)
        known, opening = None, None
    if opening and known is not None:
        message = reply(context, purpose, [*prompt, AIMessage(opening)], **one_token(context))
        said = message_text(message).strip()
        word = _WORD.fullmatch(said)
        if word:
            sure = yes_probability(message, written=opening)
            yes = word.group(1).lower() in ("yes", "y")
            if OPENING_BAR is not None and sure is not None:
                yes = sure >= OPENING_BAR
            return f'{opening}{"yes" if yes else "no"}"}}', sure
        if said.lstrip().startswith("{"):  # a new reply, not this one continued
            with _lock:
                known[model] = None
    message = reply(context, purpose, prompt, logprobs=True, top_logprobs=CHECK_TOP_LOGPROBS)
    text = message_text(message).strip()
    learned = _OPENING.match(text)
    if known is not None and AFTER_THE_OPENING:
        with _lock:
            if message.additional_kwargs.get("reasoning_content"):
                known[model] = None  # its verdict follows its reasoning: never skip that
            elif learned:
                known.setdefault(model, learned.group(1))
    return text, yes_probability(message)


def one_token(context: Context) -> dict:
    """The call's options: one token and its log-probabilities, no format, greedy.

    The opening is already written; the token's log-probabilities give its P(yes).
    ``num_ctx`` is the grade's own: another would make Ollama load the model again.
    """
    return {
        "options": {"num_ctx": context.num_ctx, "temperature": 0, "num_predict": 1},
        "format": None,
        "logprobs": True,
        "top_logprobs": CHECK_TOP_LOGPROBS,
    }
