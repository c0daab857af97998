"""`judges:` — the LLM judges' client (Gemini API key or Vertex AI), its retries and limits."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, NonNegativeInt, PositiveInt, field_validator

from evaluators.judges.settings import DEFAULT_MODEL as DEFAULT_JUDGE_MODEL
from evaluators.judges.settings import (
    DEFAULT_RETRY_STATUS_CODES,
    DEFAULT_SAFETY_SETTINGS,
    HarmBlockThreshold,
    HarmCategory,
    JudgeSettings,
)

from .units import Duration, NonNegativeDuration, Section


class JudgeRetryConfig(Section):
    """The judge client's own retries (google-genai HttpRetryOptions): exponential back-off with jitter; every
    attempt counts against `requests_per_minute`."""

    attempts: Annotated[int, Field(ge=1, le=10)] = 4
    initial_delay: Duration = 1.0
    max_delay: Duration = 30.0
    exp_base: Annotated[float, Field(ge=1)] = 2.0
    jitter: NonNegativeDuration = 1.0
    http_status_codes: list[Annotated[int, Field(ge=100, le=599)]] = Field(
        default_factory=lambda: list(DEFAULT_RETRY_STATUS_CODES)
    )


def _threshold(value: Any) -> Any:
    """YAML 1.1 reads an unquoted `OFF` as false: that is the threshold OFF (`true` stays an error)."""
    return "OFF" if value is False else value


Threshold = Annotated[HarmBlockThreshold, BeforeValidator(_threshold)]


class JudgesConfig(Section):
    """LLM judges (Gemini API key or Vertex AI); the key falls back to GEMINI_API_KEY / GOOGLE_API_KEY.

    Limits apply to all judges together; a judge's own params (`max_concurrency`, `requests_per_minute`,
    `daily_token_budget`) narrow them. 0 means unlimited for `requests_per_minute` and `daily_token_budget`.
    `model` null (or unset) is the built-in default judge model (`evaluators.judges.DEFAULT_MODEL`, the one place
    it is written). `safety_settings` (harm category → threshold) go with every request; `{}` sends none.
    """

    gemini_api_key: Annotated[str, Field(min_length=1)] | None = Field(default=None, repr=False)
    vertex_project: str | None = None
    vertex_location: str = "us-central1"
    model: str = DEFAULT_JUDGE_MODEL
    base_url: str | None = None
    api_version: str | None = None
    request_timeout: Duration = 30.0
    judgement_timeout: Duration = 120.0
    retry: JudgeRetryConfig = Field(default_factory=JudgeRetryConfig)
    max_concurrency: PositiveInt = 4
    requests_per_minute: NonNegativeInt = 60
    daily_token_budget: NonNegativeInt = 0
    cache_size: NonNegativeInt = 1024
    redact: bool = True
    max_pending: PositiveInt = 1000
    pending_max_age: Duration = 3600.0  # a kept judgement older than this at a restart is skipped, not sent
    safety_settings: dict[HarmCategory, Threshold] = Field(default_factory=lambda: dict(DEFAULT_SAFETY_SETTINGS))

    @field_validator("model", mode="before")
    @classmethod
    def _default_model(cls, value: Any) -> Any:
        return DEFAULT_JUDGE_MODEL if value is None else value

    @property
    def enabled(self) -> bool:
        return bool(self.gemini_api_key or self.vertex_project)

    def settings(self) -> JudgeSettings:
        """The judge engine's settings (evaluators.judges.JudgeSettings: the same fields, the key as `api_key`;
        it forbids unknown fields, so the two cannot drift apart silently)."""
        return JudgeSettings(
            api_key=self.gemini_api_key, **self.model_dump(exclude={"gemini_api_key", "pending_max_age"})
        )
