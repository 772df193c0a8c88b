"""The language a text is written in: which prompts a section or a question gets."""

import functools
import threading

#: langdetect loads its language profiles into a module-wide factory on first use, without a
#: lock: a thread detecting meanwhile saw a factory empty or half loaded ("en", "pl" for German
#: text). Runs grade at once (the OpenAI-compatible API, the served API): one detection at a
#: time, a few milliseconds each.
_LANGDETECT = threading.Lock()


@functools.lru_cache(maxsize=4096)
def language_of(text: str) -> str:
    """The ISO 639-1 code of ``text``'s language (``langdetect``), "en" when it cannot tell.

    Seeded, so the same text always gets the same code, and each text is detected once: the
    grader, the answer check's names and the read-ahead ask about the same sections.
    """
    from langdetect import DetectorFactory, LangDetectException, detect

    with _LANGDETECT:
        # langdetect reads random samples of the text: seeded, it gives one language per text
        DetectorFactory.seed = 0
        try:
            return str(detect(text))
        except LangDetectException:  # no letters to judge by
            return "en"
