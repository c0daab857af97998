"""monitor/web/html.py: strings are always escaped, markup only comes from its own builders."""

from __future__ import annotations

import pytest

from monitor.web.html import Html, document, el, join


def test_text_and_attribute_values_are_escaped() -> None:
    out = str(el("td", "<b>&\"'", title='"><script>x</script>', class_="a b"))
    assert out == '<td title="&quot;&gt;&lt;script&gt;x&lt;/script&gt;" class="a b">&lt;b&gt;&amp;&quot;&#x27;</td>'


def test_only_built_markup_is_inserted_as_is() -> None:
    inner = el("em", "x")
    assert str(el("p", inner, "<em>y</em>")) == "<p><em>x</em>&lt;em&gt;y&lt;/em&gt;</p>"
    with pytest.raises(TypeError):
        Html("<script>alert(1)</script>")


def test_nested_lists_none_and_numbers() -> None:
    assert str(el("ul", [el("li", n) for n in (1, 2.5)], None, [[["<"]]])) == "<ul><li>1</li><li>2.5</li>&lt;</ul>"
    assert str(join("a", None, el("br"), "<", sep=" | ")) == "a | <br> | &lt;"


def test_boolean_and_missing_attributes() -> None:
    assert (
        str(el("input", type="checkbox", checked=True, disabled=False, value=None)) == '<input type="checkbox" checked>'
    )
    assert str(el("label", "x", for_="id", aria_label="y")) == '<label for="id" aria-label="y">x</label>'


@pytest.mark.parametrize(
    "href",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        " javascript:x",
        "data:text/html,<b>",
        "//evil.example/",
        "vbscript:x",
    ],
)
def test_url_attributes_refuse_anything_but_paths_and_http(href: str) -> None:
    with pytest.raises(ValueError):
        el("a", "x", href=href)


@pytest.mark.parametrize("href", ["/review?a=1&b=2", "?x=1", "#span-1", "http://jaeger:16686/trace/1", "HTTPS://x/"])
def test_url_attributes_take_paths_queries_fragments_and_http(href: str) -> None:
    assert "href=" in str(el("a", "x", href=href))


@pytest.mark.parametrize("tag", ["script", "style", "iframe", "Script", "a b", "img onerror=x"])
def test_dangerous_or_malformed_tags_are_refused(tag: str) -> None:
    with pytest.raises(ValueError):
        el(tag)


@pytest.mark.parametrize("name", ["onclick", "onerror_", "x y", 'a"b', "style="])
def test_event_handler_and_malformed_attribute_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError):
        el("p", **{name: "x"})


def test_void_elements_take_no_children_and_document_has_a_doctype() -> None:
    with pytest.raises(ValueError):
        el("br", "x")
    page = str(document(el("title", "<t>"), el("p", "b")))
    assert page.startswith('<!doctype html>\n<html lang="en"><head><title>&lt;t&gt;</title></head>')
