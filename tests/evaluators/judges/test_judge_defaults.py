"""The judges' defaults: the default judge model is written in one place (`evaluators.judges.DEFAULT_MODEL`), not
repeated by the embedded config or the docs, and is priced; the safety settings name only what google-genai knows."""

from __future__ import annotations

import re
import typing
from importlib import resources
from pathlib import Path

import genai_prices
import yaml
from google.genai import types

from evaluators.judges import DEFAULT_MODEL, JudgeSettings
from evaluators.judges.settings import DEFAULT_SAFETY_SETTINGS, HarmBlockThreshold, HarmCategory
from monitor.config.loader import load_config

ROOT = Path(__file__).resolve().parents[3]
MODEL_ID = re.compile(r"\bgemini-\d[\w.-]*")


def test_the_embedded_default_leaves_the_judge_model_to_the_code() -> None:
    text = resources.files("monitor").joinpath("default_config.yaml").read_text("utf-8")
    assert yaml.safe_load(text)["judges"]["model"] is None
    assert MODEL_ID.findall(text) == []
    assert load_config(env={}).judges.model == DEFAULT_MODEL == JudgeSettings().model


def test_the_docs_name_no_judge_model_of_their_own() -> None:
    for page in ("configuration.md", "evaluators.md", "metrics.md"):
        assert MODEL_ID.findall((ROOT / "docs" / page).read_text("utf-8")) == [], page


def test_the_default_judge_model_has_a_price() -> None:
    """A model genai-prices does not know would make every judge request `unpriced`."""
    price = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=1000, output_tokens=100), DEFAULT_MODEL, provider_id="google"
    )
    assert price.total_price > 0


def test_the_safety_settings_spell_google_genais_names() -> None:
    categories = {c.value for c in types.HarmCategory} - {"HARM_CATEGORY_UNSPECIFIED"}
    thresholds = {t.value for t in types.HarmBlockThreshold} - {"HARM_BLOCK_THRESHOLD_UNSPECIFIED"}
    assert set(typing.get_args(HarmCategory)) <= categories
    assert set(typing.get_args(HarmBlockThreshold)) == thresholds
    assert set(DEFAULT_SAFETY_SETTINGS.values()) == {"OFF"}
    assert set(DEFAULT_SAFETY_SETTINGS) == {
        "HARM_CATEGORY_HARASSMENT",
        "HARM_CATEGORY_HATE_SPEECH",
        "HARM_CATEGORY_SEXUALLY_EXPLICIT",
        "HARM_CATEGORY_DANGEROUS_CONTENT",
    }


def test_an_unquoted_off_in_yaml_is_the_threshold_off(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "judges:\n  safety_settings: {HARM_CATEGORY_HARASSMENT: OFF, HARM_CATEGORY_HATE_SPEECH: BLOCK_NONE}\n"
    )
    settings = load_config(path, env={}).judges.settings().safety_settings
    assert settings == {"HARM_CATEGORY_HARASSMENT": "OFF", "HARM_CATEGORY_HATE_SPEECH": "BLOCK_NONE"}
