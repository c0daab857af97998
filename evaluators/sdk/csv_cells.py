"""Formula neutralisation of CSV cells (OWASP, CSV Injection): a spreadsheet runs a cell starting with `=`, `+`,
`-`, `@`, a tab or a carriage return as a formula (`=HYPERLINK(...)`, `=cmd|...`), also after leading spaces or
quotes, so such a cell is written with a single quote in front. A cell starting with a quote gets one too, which
makes the change reversible: `restore` takes exactly the quotes `neutralise` added."""

from __future__ import annotations

FORMULA_STARTS = frozenset("=+-@\t\r")
_LEADING = " \"'"  # skipped before the first character a spreadsheet reads (OWASP: also after whitespace or quotes)


def neutralise(cell: str) -> str:
    """`cell` with a single quote in front when a spreadsheet could read it as a formula (or it starts with a
    quote); unchanged otherwise."""
    return "'" + cell if _needs_quote(cell) else cell


def restore(cell: str) -> str:
    """The text `neutralise` was given for `cell` (a cell without its quote is returned as it is)."""
    return cell[1:] if cell.startswith("'") and _needs_quote(cell[1:]) else cell


def _needs_quote(cell: str) -> bool:
    if cell.startswith("'"):
        return True
    rest = cell.lstrip(_LEADING)
    return bool(rest) and rest[0] in FORMULA_STARTS
