"""The `review:` config section, its place in the embedded default, and what ships the page (package data,
the dev extra and system package the browser test needs)."""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from monitor.config import ConfigError, MonitorConfig, ReviewConfig, load_config

ROOT = Path(__file__).resolve().parents[4]


def test_defaults() -> None:
    review = MonitorConfig().review
    assert (review.trace_url_template, review.page_size) == ("", 50)
    assert review.trace_url("ab" * 16) is None


@pytest.mark.parametrize(
    "template",
    [
        "http://localhost:16686/trace/{trace_id}",
        "https://grafana.example/explore?left=%7B%22queries%22:%5B%7B%22query%22:%22{trace_id}%22%7D%5D%7D",
        'https://grafana.example/explore?panes={"a":{"queries":[{"query":"{trace_id}"}]}}',
    ],
)
def test_trace_url_templates_of_jaeger_and_grafana(template: str) -> None:
    url = ReviewConfig(trace_url_template=template).trace_url("0af7651916cd43dd8448eb211c80319c")
    assert url == template.replace("{trace_id}", "0af7651916cd43dd8448eb211c80319c")


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("http://localhost:16686/trace/", "{trace_id}"),
        ("javascript:alert('{trace_id}')", "http"),
        ("ftp://host/{trace_id}", "http"),
        ("/trace/{trace_id}", "http"),
        ("http:///{trace_id}", "http"),
        ("http://host/a b/{trace_id}", "spaces"),
    ],
)
def test_invalid_trace_url_templates(template: str, problem: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(problem)):
        ReviewConfig(trace_url_template=template)


def test_page_size_bounds_and_errors_from_a_file(tmp_path: Path) -> None:
    assert ReviewConfig(page_size=500).page_size == 500
    path = tmp_path / "c.yaml"
    path.write_text("review:\n  page_size: 0\n  trace_url_template: http://x/trace\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    text = str(caught.value)
    assert "c.yaml:2: review.page_size" in text and "c.yaml:3: review.trace_url_template" in text
    env = {"AGENT_MONITOR_REVIEW__TRACE_URL_TEMPLATE": "http://jaeger:16686/trace/{trace_id}"}
    assert load_config(None, env=env).review.trace_url("ab") == "http://jaeger:16686/trace/ab"


def _default_text() -> str:
    return resources.files("monitor").joinpath("default_config.yaml").read_text("utf-8")


def test_the_default_config_has_the_section_right_before_api_every_key_commented() -> None:
    text = _default_text()
    sections = [line.rstrip(":") for line in text.splitlines() if re.fullmatch(r"[a-z_]+:.*", line)]
    sections = [s.split(":")[0] for s in sections]
    assert sections.index("review") + 1 == sections.index("api")
    assert ReviewConfig.model_validate(yaml.safe_load(text)["review"]) == ReviewConfig()  # durations as text
    block = text.split("\nreview:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    keys = [i for i, line in enumerate(block) if re.match(r"  [a-z_]+:", line)]
    assert {block[i].split(":")[0].strip() for i in keys} == set(ReviewConfig.model_fields)
    for i in keys:
        assert "#" in block[i] or block[i - 1].lstrip().startswith("#"), block[i]


def test_docs_describe_every_key() -> None:
    configuration = (ROOT / "docs" / "configuration.md").read_text()
    section = configuration.split("### `review`", 1)[1].split("\n### ", 1)[0]
    for key in ReviewConfig.model_fields:
        assert f"`{key}`" in section
    page = (ROOT / "docs" / "review-page.md").read_text()
    for word in ("/review/traces/", "/review/breakdown", "Content-Security-Policy", "trace_url_template", "since"):
        assert word in page


def test_the_stylesheet_ships_as_package_data() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["monitor"]
    css = ROOT / "monitor" / "web" / "pages" / "static" / "review.css"
    assert css.is_file() and any(css.relative_to(ROOT / "monitor").match(p) for p in patterns)
    assert resources.files("monitor.web.pages").joinpath("static/review.css").read_text().startswith("/*")
    assert any(dep.startswith("playwright") for dep in pyproject["project"]["optional-dependencies"]["dev"])


def test_make_system_deps_installs_chromium_with_prometheus_in_one_apt_get() -> None:
    makefile = (ROOT / "Makefile").read_text()
    target = makefile.split("\nsystem-deps:\n", 1)[1].split("\n\n", 1)[0]
    installs = [line for line in target.splitlines() if "apt-get install" in line]
    assert len(installs) == 1
    assert all(p in installs[0] for p in ("prometheus ", "prometheus-alertmanager", "chromium"))
    assert "/usr/bin/chromium" in target
