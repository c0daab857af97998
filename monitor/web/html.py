"""HTML built only from escaped parts: `el(tag, *children, **attrs)` escapes every string it is given.

Text becomes markup only through this module: a plain `str` child or attribute value is always escaped
(`html.escape`, quotes included), and only an `Html` value (what `el`, `join` and `document` return) is
inserted as it is. So a page cannot forget to escape trace content; it can only build elements from it.
Tag and attribute names must be literal lowercase names, and URL attributes (href, src, action) only take
relative paths, queries, fragments or http(s) URLs, so data can never become a `javascript:` link.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from html import escape
from typing import Union

_NAME = re.compile(r"[a-z][a-z0-9-]*")
_URL_ATTRS = frozenset({"href", "src", "action", "formaction"})
_SAFE_URL = re.compile(r"(/(?!/)|\?|#|https?://)", re.IGNORECASE)
VOID = frozenset({"br", "hr", "img", "input", "link", "meta"})


class Html:
    """Markup that is safe to emit as it is; made only by this module's functions."""

    __slots__ = ("_markup",)

    def __init__(self, markup: str, _token: object = None) -> None:
        if _token is not _PRIVATE:
            raise TypeError("Html is built with el(), join() or document(), never from a string")
        self._markup = markup

    def __str__(self) -> str:
        return self._markup

    def __repr__(self) -> str:
        return f"Html({self._markup[:60]!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Html) and other._markup == self._markup

    def __hash__(self) -> int:
        return hash(self._markup)


_PRIVATE = object()
Child = Union[Html, str, int, float, None, Iterable["Child"]]  # noqa: UP007 (a recursive alias needs Union)
AttrValue = str | int | float | bool | None


def _markup(text: str) -> Html:
    return Html(text, _PRIVATE)


def _render(child: Child, out: list[str]) -> None:
    if child is None or child is False:
        return
    if isinstance(child, Html):
        out.append(child._markup)
    elif isinstance(child, str):
        out.append(escape(child, quote=True))
    elif isinstance(child, int | float):
        out.append(escape(str(child), quote=True))
    else:
        for item in child:
            _render(item, out)


def _attribute(name: str, value: AttrValue) -> str:
    name = name.rstrip("_").replace("_", "-")  # class_ -> class, aria_label -> aria-label
    if not _NAME.fullmatch(name) or name.startswith("on"):
        raise ValueError(f"not an attribute this module writes: {name!r}")
    if value is None or value is False:
        return ""
    if value is True:
        return f" {name}"
    text = str(value)
    if name in _URL_ATTRS and not _SAFE_URL.match(text):
        raise ValueError(f"{name} must be a relative path, query, fragment or http(s) URL: {text[:80]!r}")
    return f' {name}="{escape(text, quote=True)}"'


def el(tag: str, *children: Child, **attrs: AttrValue) -> Html:
    """`<tag attrs>children</tag>`, every str escaped; attributes as keywords (`class_="x"`, `data_id=...`),
    True for a bare attribute, None/False to leave one out."""
    if not _NAME.fullmatch(tag) or tag in ("script", "style", "iframe", "object", "embed"):
        raise ValueError(f"not a tag this module writes: {tag!r}")
    out = [f"<{tag}", *(_attribute(name, value) for name, value in attrs.items()), ">"]
    if tag in VOID:
        if children:
            raise ValueError(f"<{tag}> takes no children")
        return _markup("".join(out))
    _render(children, out)
    out.append(f"</{tag}>")
    return _markup("".join(out))


def join(*children: Child, sep: Child = None) -> Html:
    """The children one after another (escaped as in `el`), with `sep` between them."""
    out: list[str] = []
    parts = [c for c in children if c is not None]
    for index, child in enumerate(parts):
        if index and sep is not None:
            _render(sep, out)
        _render(child, out)
    return _markup("".join(out))


_SCRIPT_PATH = re.compile(r"/[a-z0-9_/-]+\.js")


def script_file(src: str) -> Html:
    """`<script src defer>` of a script file served by this site (a plain absolute path; never inline code, which
    the review page's CSP refuses anyway)."""
    if not _SCRIPT_PATH.fullmatch(src) or "//" in src:
        raise ValueError(f"not a script path this module writes: {src[:80]!r}")
    return _markup(f'<script src="{src}" defer></script>')


def document(head: Child, body: Child, lang: str = "en") -> Html:
    """A whole HTML5 document."""
    return _markup("<!doctype html>\n" + str(el("html", el("head", head), el("body", body), lang=lang)) + "\n")
