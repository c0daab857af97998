"""No SQL is edited at run time (issue 40 item 1): no module under monitor/ puts SQL text together from variable
parts (an f-string, `%`, `.format`, `.replace`, `" AND ".join`) — statements are SQLAlchemy Core constructs compiled
once per database with bound parameters (monitor/store/statements.py).

Allowed: a PRAGMA spelled once at import from a module constant (SQLite binds no parameter there). The modules
other branches of the same change convert are exempt while they still hold such SQL (`EXEMPT`); an exemption no
longer needed fails, so that the list only shrinks.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SQL = re.compile(
    r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|WHERE|VALUES|PRAGMA|SET|FROM|JOIN|LIMIT|RETURNING|ORDER BY"
    r"|GROUP BY|ON CONFLICT)\b"
)
PLACEHOLDERS = ("?", "%s")
# path (or folder) → why its SQL text is still put together (another branch of issue 40 item 1 converts it)
EXEMPT: dict[str, str] = {}


def _constant_text(node: ast.AST) -> str:
    """The constant parts of a string expression (an f-string's text between its values)."""
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ""


def _edit(node: ast.AST) -> str | None:
    """The SQL text `node` puts together, or None."""
    if isinstance(node, ast.JoinedStr):
        text = _constant_text(node)
        return text if SQL.search(text) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        text = _constant_text(node.left)
        return text if SQL.search(text) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        base = _constant_text(node.func.value)
        arguments = [_constant_text(a) for a in node.args]
        if node.func.attr == "format" and SQL.search(base):
            return base
        if node.func.attr == "replace" and (SQL.search(base) or any(a in PLACEHOLDERS for a in arguments)):
            return f"{base!r}.replace{tuple(arguments)}"
        if node.func.attr == "join" and base.strip() in ("AND", "OR"):
            return f"{base!r}.join"
    return None


def _allowed_pragmas(tree: ast.Module) -> set[int]:
    """The ids of the f-strings assigned at module level that spell a PRAGMA from constants."""
    allowed: set[int] = set()
    for statement in tree.body:
        value = statement.value if isinstance(statement, ast.Assign | ast.AnnAssign) else None
        if isinstance(value, ast.JoinedStr) and _constant_text(value).startswith("PRAGMA "):
            allowed.add(id(value))
    return allowed


def edits_in(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    allowed = _allowed_pragmas(tree)
    where = path.relative_to(ROOT).as_posix()
    return [f"{where}:{node.lineno}: {text[:100]!r}" for node in ast.walk(tree)
            if id(node) not in allowed and (text := _edit(node)) is not None]  # fmt: skip


def _exempt(where: str) -> bool:
    return any(where == path or (path.endswith("/") and where.startswith(path)) for path in EXEMPT)


def test_no_module_puts_sql_together_at_run_time() -> None:
    found = [edit for path in sorted((ROOT / "monitor").rglob("*.py")) if not _exempt(path.relative_to(ROOT).as_posix())
             for edit in edits_in(path)]  # fmt: skip
    assert not found, "SQL put together at run time (write it as a statements.py Statement):\n" + "\n".join(found)


def _files(path: str) -> list[Path]:
    return sorted((ROOT / path).rglob("*.py")) if path.endswith("/") else [ROOT / path]


def test_every_exemption_is_still_needed() -> None:
    stale = [path for path in EXEMPT if not any(edits_in(p) for p in _files(path))]
    assert not stale, f"no SQL is put together there any more: drop {stale} from EXEMPT"


def test_the_scan_sees_each_way_of_editing_sql() -> None:
    source = """
import x
PRAGMA_OK = f"PRAGMA busy_timeout = {MS}"
a = f"SELECT * FROM t WHERE id = {x}"
b = "DELETE FROM t WHERE id = %s" % x
c = "UPDATE t SET a = {}".format(x)
d = x.replace("?", "%s")
e = " AND ".join(x)
f = ", ".join(x)
g = f"{x} rows"
def h():
    return f"PRAGMA busy_timeout = {x}"
"""
    tree = ast.parse(source)
    allowed = _allowed_pragmas(tree)
    lines = sorted(node.lineno for node in ast.walk(tree) if id(node) not in allowed and _edit(node) is not None)
    assert lines == [4, 5, 6, 7, 8, 12]
