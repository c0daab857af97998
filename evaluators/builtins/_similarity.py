"""How alike two user requests are: their content words (stopwords left out) compared as sequences and as sets."""

from __future__ import annotations

import difflib
import re

__all__ = ["content_words", "similarity"]

# Words that carry no request of their own: left out before two messages are compared.
_STOPWORD_TEXT = (
    "a an the i me my we you your it its is are was were be been am do does did can could would should will "
    "shall may might must to of in on at for from by with about as and or but if so that this these those "
    "there here what which who whom how when where why please just really also very not no yes ok okay hi hello "
    "thanks thank want know need tell like"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)


def content_words(text: str) -> list[str]:
    """The words of `text` that carry its request: lowercased, stopwords and possessive endings left out."""
    words = (w.lower().replace("’", "'") for w in _WORD.findall(text))
    return [w.removesuffix("'s") for w in words if w not in _STOPWORDS and w.removesuffix("'s") not in _STOPWORDS]


def similarity(a: list[str], b: list[str]) -> float:
    """How alike two requests are (0–1), over their content words: the larger of difflib's ratio of the two word
    sequences and the share of the shorter one's distinct words found in the other (a rephrase that adds words
    to the earlier request, or repeats part of it, still scores high)."""
    if not a or not b:
        return 0.0
    ratio = difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
    small, large = sorted((set(a), set(b)), key=len)
    overlap = len(small & large) / len(small)
    return max(ratio, overlap)
