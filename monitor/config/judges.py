"""`judges:` — the LLM judges' client (Gemini API key or Vertex AI), its retries and limits."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, NonNegativeInt, PositiveInt

from evaluators.judges.settings import DEFAULT_MODEL as DEFAULT_JUDGE_MODEL
from evaluators.judges.settings import DEFAULT_RETRY_STATUS_CODES, JudgeSettings

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


class JudgesConfig(Section):
    """LLM judges (Gemini API key or Vertex AI); the key falls back to GEMINI_API_KEY / GOOGLE_API_KEY.

    Limits apply to all judges together; a judge's own params (`max_concurrency`, `requests_per_minute`,
    `daily_token_budget`) narrow them. 0 means unlimited for `requests_per_minute` and `daily_token_budget`.
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

    @property
    def enabled(self) -> bool:
        return bool(self.gemini_api_key or self.vertex_project)

    def settings(self) -> JudgeSettings:
        """The judge engine's settings (evaluators.judges.JudgeSettings: the same fields, the key as `api_key`;
        it forbids unknown fields, so the two cannot drift apart silently)."""
        return JudgeSettings(api_key=self.gemini_api_key, **self.model_dump(exclude={"gemini_api_key"}))
