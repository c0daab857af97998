"""The README is a front door and every link in the prose resolves: each relative link in README.md,
CONTRIBUTING.md and docs/*.md names a file or folder of this tree, and a `#fragment` names a heading of its target
(GitHub's slugs: lower case, punctuation dropped, spaces to hyphens, `-1`, `-2` for repeats) or an explicit
`<a id=...>` in it. The README stays short (at most 150 lines, no table cell over 200 characters) and lists every
page of docs/. Links inside code (fenced blocks, inline code) are not links and are not checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 150
MAX_README_CELL = 200

FENCE_LINE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
EXPLICIT_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...


def prose_lines(text: str) -> list[str]:
    """The lines of `text` outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE_LINE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def links(text: str) -> list[str]:
    """The targets of the Markdown links (and images) of `text`, outside code."""
    return [m.group(1) for line in prose_lines(text) for m in LINK.finditer(INLINE_CODE.sub("", line))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: the rendered text, lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", text)  # emphasis markers, not snake_case underscores
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every fragment a link may name in a page: its headings' slugs (repeats numbered) and explicit anchors."""
    found: set[str] = set(EXPLICIT_ANCHOR.findall(text))
    seen: dict[str, int] = {}
    for line in prose_lines(text):
        if match := HEADING.match(line):
            base = slug(match.group(2))
            count = seen.get(base, 0)
            found.add(base if count == 0 else f"{base}-{count}")
            seen[base] = count + 1
    return found


def problem(page: Path, target: str) -> str | None:
    """Why the link `target` written in `page` does not resolve, or None when it does."""
    if EXTERNAL.match(target):
        return None
    path_part, _, fragment = target.partition("#")
    destination = (page.parent / path_part).resolve() if path_part else page
    if not destination.exists():
        return f"no such file or folder: {path_part}"
    if not fragment or destination.suffix != ".md" or not destination.is_file():
        return None
    if fragment not in anchors(destination.read_text(encoding="utf-8")):
        return f"{destination.relative_to(ROOT)} has no heading or anchor #{fragment}"
    return None


PAGE_LINKS = [(page, target) for page in PAGES if page.is_file() for target in links(page.read_text(encoding="utf-8"))]


def test_the_pages_exist_and_link() -> None:
    """README, CONTRIBUTING and the docs are there, and the extraction finds their links (a regex that matched
    nothing would check nothing)."""
    assert all(page.is_file() for page in PAGES), [str(p) for p in PAGES if not p.is_file()]
    assert len(PAGE_LINKS) >= 200
    assert (README, "docs/configuration.md") in PAGE_LINKS


@pytest.mark.parametrize(
    ("page", "target"),
    sorted(set(PAGE_LINKS)),
    ids=[f"{page.relative_to(ROOT)}->{target}" for page, target in sorted(set(PAGE_LINKS))],
)
def test_every_relative_link_resolves(page: Path, target: str) -> None:
    assert problem(page, target) is None, f"{page.relative_to(ROOT)} links {target}: {problem(page, target)}"


def test_readme_is_a_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_README_LINES, f"README.md has {len(text.splitlines())} lines"
    cells = [cell.strip() for line in prose_lines(text) if line.startswith("|") for cell in line.strip("|").split("|")]
    long_cells = [cell for cell in cells if len(cell) > MAX_README_CELL]
    assert not long_cells, f"README.md table cells over {MAX_README_CELL} characters: {long_cells}"


def test_readme_lists_every_docs_page() -> None:
    listed = {target.partition("#")[0] for target in links(README.read_text(encoding="utf-8"))}
    missing = [f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md")) if f"docs/{p.name}" not in listed]
    assert not missing, f"README.md does not link {missing}"


def test_the_check_sees_broken_links() -> None:
    """Slugs follow GitHub; missing files, missing headings and links in code are told apart."""
    assert slug("`/review/traces/{trace_id}`: one trace") == "reviewtracestrace_id-one-trace"
    assert slug("5. Gate a rollout: Argo Rollouts") == "5-gate-a-rollout-argo-rollouts"
    assert slug("Spend: recording rules and `AgentSpendOverBudget`") == "spend-recording-rules-and-agentspendoverbudget"
    assert slug("Sizing the judges' limits") == "sizing-the-judges-limits"
    assert anchors('# A\n## A\n```\n# not a heading\n```\n<a id="Custom"></a>') == {"a", "a-1", "Custom"}
    doc = ROOT / "docs" / "metrics.md"
    assert problem(doc, "configuration.md#receivers") is None
    assert problem(doc, "configuration.md#no-such-heading") is not None
    assert problem(doc, "no-such-page.md") is not None
    assert problem(doc, "#evaluation-results") is None and problem(doc, "#nothing") is not None
    assert problem(doc, "https://example.com/x.md#y") is None
    assert links('see [a](x.md) and `[b](y.md)`\n```\n[c](z.md)\n```\n![d](img.png "t")') == ["x.md", "img.png"]
