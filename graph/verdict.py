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
Off by default (``AFTER_THE_OPENING``): two sets let one more near miss through.

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
from graph.llm import ask, message_text, reply
from graph.models import ModelProvider, Purpose, get_models, model_for

#: Whether a grade is asked after the model's opening once it has written one (else always
#: with the format). Off: the verdicts are the format's but for 31 of 922 sections, each at a
#: P(yes) between 0.45 and 0.59, and the runbooks and the German notes each let one more near
#: miss through (docs/quality.md, the answer path's designs).
AFTER_THE_OPENING = False

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


def ask_verdict(context: Context, purpose: Purpose, prompt: Sequence[BaseMessage]) -> str:
    """The reply to a yes/no ``prompt`` answered as ``{"score": ...}`` (a grade).

    After the model's own opening where it has written one, else asked with the format (and
    its opening learned from the reply).
    """
    if not AFTER_THE_OPENING:
        return ask(context, purpose, prompt)
    provider, model = get_models(), (context.ollama_base_url, model_for(context, purpose))
    try:
        with _lock:
            known = _openings.setdefault(provider, {})
            opening = known.get(model)
    except TypeError:  # a provider that cannot be a key (unhashable, no weak references)
        return ask(context, purpose, prompt)
    if opening:
        said = ask(context, purpose, [*prompt, AIMessage(opening)], **one_token(context))
        word = _WORD.fullmatch(said)
        if word:
            return f'{opening}{"yes" if word.group(1).lower() in ("yes", "y") else "no"}"}}'
        if said.lstrip().startswith("{"):  # a new reply, not this one continued
            with _lock:
                known[model] = None
    message = reply(context, purpose, prompt)
    text = message_text(message).strip()
    learned = _OPENING.match(text)
    with _lock:
        if message.additional_kwargs.get("reasoning_content"):
            known[model] = None  # its verdict follows its reasoning: never skip that
        elif learned:
            known.setdefault(model, learned.group(1))
    return text


def one_token(context: Context) -> dict:
    """The call's options: one token, no format (the opening is already written), greedy.

    ``num_ctx`` is the grade's own: another would make Ollama load the model again.
    """
    return {
        "options": {"num_ctx": context.num_ctx, "temperature": 0, "num_predict": 1},
        "format": None,
    }
