"""/api/v1/signatures(+/{id}) over a real store on both databases (rows from SQL fixtures), checked against the
OpenAPI document; the conventions of /api/v1/results (401, 400, 404, 503); the CLI over the API and the store."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

import pytest

from monitor.cli import build_parser
from monitor.web.app import build_api_app
from monitor.web.openapi import PREFIX, openapi_document
from tests.monitor.web.test_openapi import conforms
from tests.support.backends import Backend, sqlite_backend
from tests.support.signature_rows import Sig, failing_traces, insert_signature, set_up
from tests.support.threaded_server import get, serve

TOKEN = "s3cret-token-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NEW, OLD = "ab12" * 4, "cd34" * 4


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "postgres":
        return Backend("postgres", request.getfixturevalue("postgres_url"))
    return sqlite_backend(tmp_path)


def seed(backend: Backend) -> float:
    now = time.time()
    set_up(backend)
    insert_signature(backend, Sig(NEW, first_seen=now - 600, last_seen=now - 60, count=3, versions=["1.5"]))
    insert_signature(
        backend,
        Sig(OLD, evaluator="error_free", step_name="search", first_seen=now - 9e5, last_seen=now - 100, count=40),
    )
    failing_traces(backend, Sig(NEW), [now - 600, now - 300, now - 60], variant="1.5", start=1)
    failing_traces(backend, Sig(OLD, evaluator="error_free"), [now - 3000], start=10, also=())
    return now


def app_of(backend: Backend, reader: Any) -> Any:
    return build_api_app(lambda accept: (b"", "text/plain"), dict, TOKEN, reader=reader, evaluators_info=list)


def test_signatures_api_answers_conform_to_the_document(backend: Backend) -> None:
    seed(backend)
    document = openapi_document()
    reader = backend.reader()
    with serve(app_of(backend, reader)) as base:
        status, _, page = get(f"{base}{PREFIX}/signatures?since=1h", AUTH)
        assert status == 200, page
        assert conforms(document, {"$ref": "#/components/schemas/SignaturesPage"}, page) == []
        assert [s["id"] for s in page["items"]] == [NEW, OLD]
        first = page["items"][0]
        assert first["status"] == "new" and first["results"] == 3 and first["versions"] == ["1.5"]
        assert sum(first["trend"]) == 3 and len(first["trend"]) == 12
        status, _, only = get(f"{base}{PREFIX}/signatures?evaluator=error_free", AUTH)
        assert [s["id"] for s in only["items"]] == [OLD]
        status, _, detail = get(f"{base}{PREFIX}/signatures/{NEW}?limit=2", AUTH)
        assert status == 200 and conforms(document, {"$ref": "#/components/schemas/SignatureDetail"}, detail) == []
        assert [len(t["verdicts"]) for t in detail["traces"]] == [2, 2] and detail["next_cursor"]
        assert {v["evaluator"] for v in detail["traces"][0]["verdicts"]} == {"tool_success_rate", "error_free"}
        status, _, rest = get(f"{base}{PREFIX}/signatures/{NEW}?limit=2&cursor={detail['next_cursor']}", AUTH)
        assert status == 200 and len(rest["traces"]) == 1 and rest["next_cursor"] is None
        error = {"$ref": "#/components/schemas/ApiError"}
        for path, expected in (
            (f"signatures/{'0' * 16}", 404),
            ("signatures/xyz", 400),
            ("signatures?limit=0", 400),
            ("signatures?since=1h&until=2h", 400),
            ("signatures?outcome=fail", 400),
            ("signatures?cursor=forged", 400),
            ("signatures?since=" + "9" * 300, 400),
        ):
            status, _, body = get(f"{base}{PREFIX}/{path}", AUTH)
            assert status == expected and conforms(document, error, body) == [], path
        assert get(f"{base}{PREFIX}/signatures")[0] == 401
    reader.close()


@pytest.mark.integration
def test_without_a_store_it_is_503() -> None:
    with serve(app_of(None, None)) as base:  # type: ignore[arg-type]
        status, _, body = get(f"{base}{PREFIX}/signatures", AUTH)
    assert status == 503 and body["error"].startswith("review unavailable")


def cli(*argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(list(argv))
    out, err = io.StringIO(), io.StringIO()
    code = args.handler(args, out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.integration
def test_cli_lists_signatures_from_the_store_and_the_api(tmp_path: Path) -> None:
    backend = sqlite_backend(tmp_path)
    seed(backend)
    code, out, _ = cli("signatures", "--store", backend.location, "--since", "1h")
    assert code == 0 and out.index(NEW) < out.index(OLD) and "convert_currency" in out
    code, out, _ = cli("review", "--by", "signature", "--store", backend.location, "--evaluator", "error_free")
    assert code == 0 and OLD in out and NEW not in out
    code, out, _ = cli("signatures", NEW, "--store", backend.location)
    assert code == 0 and f"signature {NEW} (new)" in out and "*tool_success_rate" in out and "error_free" in out
    code, _, err = cli("signatures", NEW, "--store", backend.location, "--evaluator", "x")
    assert code == 2 and "takes no --evaluator" in err
    code, _, err = cli("signatures", "0" * 16, "--store", backend.location)
    assert code == 1 and "404" in err
    reader = backend.reader()
    with serve(app_of(backend, reader)) as base:
        code, out, _ = cli("signatures", "--url", base, "--token", TOKEN, "--json")
        assert code == 0 and '"id": "' + NEW in out
        code, out, _ = cli("review", "--by", "signature", "--url", base, "--token", TOKEN, "--variant", "1.5")
        assert code == 0 and NEW in out and OLD not in out
    reader.close()
