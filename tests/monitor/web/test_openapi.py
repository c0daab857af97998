"""The OpenAPI document: valid OpenAPI 3.1, every /api/v1 route of the app in it with the parameters the
handlers accept, and the answers it describes match what the API really sends."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from monitor.review.api_params import BREAKDOWN_PARAMS, RESULTS_PARAMS
from monitor.web.app import build_api_app
from monitor.web.health import OPEN_PATHS
from monitor.web.openapi import OPENAPI_PATH, PREFIX
from tests.monitor.web.test_api_v1 import TOKEN, TRACE, evaluators
from tests.support.fake_reader import FakeReader, item, trace_detail
from tests.support.threaded_server import get, serve


def app_and_reader() -> tuple[Any, FakeReader]:
    reader = FakeReader(items=[item(1), item(2, outcome="pass", score=1.0)])
    reader.traces[TRACE] = trace_detail(TRACE, [item(3, trace_id=TRACE)])
    app = build_api_app(lambda accept: (b"", "text/plain"), dict, TOKEN, reader=reader, evaluators_info=evaluators)
    return app, reader


def conforms(document: dict[str, Any], schema: dict[str, Any], value: Any) -> list[str]:
    """Errors of `value` against a schema of the document (its $refs resolved within the document)."""
    root = {**schema, "components": document["components"]}
    return [e.message for e in Draft202012Validator(root).iter_errors(value)]


@pytest.mark.integration
def test_document_is_valid_openapi_31_and_lists_every_route() -> None:
    app, _ = app_and_reader()
    with serve(app) as base:
        status, _, document = get(base + OPENAPI_PATH)  # open, though the API has a token
    assert status == 200
    assert document["openapi"] == "3.1.0"
    validate(document)  # raises on an invalid document
    served = {
        route.resource.canonical
        for route in app.router.routes()
        if route.method == "GET" and route.resource is not None and route.resource.canonical.startswith(PREFIX)
    }
    assert served == set(document["paths"])
    assert len(served) == 14
    posted = {
        route.resource.canonical
        for route in app.router.routes()
        if route.method == "POST" and route.resource is not None and route.resource.canonical.startswith(PREFIX)
    }
    assert posted == {p for p, operations in document["paths"].items() if "post" in operations} == {PREFIX + "/reviews"}
    assert OPENAPI_PATH in OPEN_PATHS


def test_parameters_responses_and_security_are_described() -> None:
    from monitor.web.openapi import openapi_document

    document = openapi_document()
    paths = document["paths"]

    def params(path: str) -> dict[str, dict[str, Any]]:
        return {p["name"]: p for p in paths[path]["get"]["parameters"]}

    results = params(f"{PREFIX}/results")
    assert list(results) == [p.name for p in RESULTS_PARAMS]
    assert results["outcome"]["schema"]["enum"] == ["pass", "fail", "skip"]
    assert results["limit"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}
    assert list(params(f"{PREFIX}/breakdown")) == [p.name for p in BREAKDOWN_PARAMS]
    assert params(f"{PREFIX}/breakdown")["by"]["schema"]["enum"] == ["service", "agent", "model", "tool", "variant"]
    assert "variant" in results and "variant" in params(f"{PREFIX}/breakdown")
    item_fields = document["components"]["schemas"]["ResultItem"]["properties"]
    assert item_fields["variant"] == {"default": "", "title": "Variant", "type": "string"}
    trace_param = params(f"{PREFIX}/traces/{{trace_id}}")["trace_id"]
    assert trace_param["in"] == "path" and trace_param["required"] is True
    for path in ("results", "traces/{trace_id}", "breakdown"):
        responses = paths[f"{PREFIX}/{path}"]["get"]["responses"]
        assert set(responses) == {"200", "400", "401", "404", "503"}, path
        assert responses["503"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ApiError"}
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearer"] == {**schemes["bearer"], "type": "http", "scheme": "bearer"}
    assert schemes["session"]["in"] == "cookie" and schemes["session"]["name"] == "agent_monitor_session"
    assert document["security"] == [{"bearer": []}, {"session": []}]
    assert paths[OPENAPI_PATH]["get"]["security"] == []


@pytest.mark.integration
def test_real_answers_conform_to_the_documented_schemas() -> None:
    from monitor.web.openapi import openapi_document

    document = openapi_document()
    app, _ = app_and_reader()
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    checks = [
        ("/results?limit=1", "results", "200"),
        (f"/traces/{TRACE}", "traces/{trace_id}", "200"),
        ("/breakdown?by=model", "breakdown", "200"),
        ("/evaluators", "evaluators", "200"),
        ("/results?limit=x", "results", "400"),
        (f"/traces/{'cd' * 16}", "traces/{trace_id}", "404"),
    ]
    with serve(app) as base:
        for query, path, status in checks:
            got, _, body = get(f"{base}{PREFIX}{query}", bearer)
            assert str(got) == status, query
            schema = document["paths"][f"{PREFIX}/{path}"]["get"]["responses"][status]["content"]["application/json"]
            assert conforms(document, schema["schema"], body) == [], query
        got, _, body = get(f"{base}{PREFIX}/results")
        assert got == 401 and conforms(document, {"$ref": "#/components/schemas/ApiError"}, body) == []
    assert conforms(document, {"$ref": "#/components/schemas/ResultsPage"}, {"items": 3}) != []  # it does check


def test_docs_describe_every_path_and_parameter() -> None:
    from pathlib import Path

    from monitor.web.openapi import openapi_document

    text = (Path(__file__).resolve().parents[3] / "docs" / "review.md").read_text(encoding="utf-8")
    for path, operations in openapi_document()["paths"].items():
        assert f"`GET {path}`" in text, path
        if "post" in operations:
            assert f"`POST {path}`" in text, path
        for param in operations["get"].get("parameters", []):
            assert f"`{param['name']}`" in text, (path, param["name"])
