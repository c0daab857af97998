"""The language of a text: py3langid's identifier (its model ships in the package: no network), loaded once per
process and shared by every caller (`response_language`, explanations' `input.language`).

A text is classified on its first `LANGUAGE_CHARS` characters: py3langid's cost is linear in the text (its
tokenizer steps through the bytes in Python) plus ~25 µs of fixed work per call, so a question's first sentence is
what is paid for. The last classifications are remembered by their cut text: a trace's input classified by an
evaluator is not classified again for its explanation dimension.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any, NamedTuple

log = logging.getLogger(__name__)

LANGUAGE_CHARS = 120  # characters of a text classified (the cost is linear in them)
_CACHED = 256  # classifications remembered (by their cut text)

_identifier: Any = None
_identifier_lock = threading.Lock()
_identifier_failed = False


class Detected(NamedTuple):
    """A text's most likely language (an ISO 639-1 code) and its normalised probability (0–1)."""

    language: str
    probability: float


def language_identifier() -> Any:
    """py3langid's identifier with normalised probabilities, loaded once per process (None: it cannot load)."""
    global _identifier, _identifier_failed
    if _identifier is not None or _identifier_failed:
        return _identifier
    with _identifier_lock:
        if _identifier is None and not _identifier_failed:
            try:
                from py3langid import langid

                cls = langid.LanguageIdentifier
                load = getattr(cls, "from_model_file", None) or cls.from_pickled_model  # 0.4 / 0.3
                _identifier = load(langid.MODEL_FILE, norm_probs=True)
            except Exception as exc:
                _identifier_failed = True
                log.warning("languages are not detected: py3langid could not load (%r)", exc)
    return _identifier


def letters(text: str) -> int:
    """How many alphabetic characters `text` holds."""
    return sum(map(str.isalpha, text))


def detect_language(text: str, chars: int = LANGUAGE_CHARS) -> Detected | None:
    """The language of `text`'s first `chars` characters (None: no language model in this process)."""
    return _classify(text[:chars])


@functools.lru_cache(maxsize=_CACHED)
def _classify(cut: str) -> Detected | None:
    identifier = language_identifier()
    if identifier is None:
        return None
    language, probability = identifier.classify(cut)
    return Detected(str(language), float(probability))


__all__ = ["LANGUAGE_CHARS", "Detected", "detect_language", "language_identifier", "letters"]
