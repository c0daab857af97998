"""JudgeSettings: how the judge engine reaches Gemini and how much it may spend (the daemon's `judges` section)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

# The one place the default judge model is written (the config, its embedded default and the docs refer here):
# a stable (GA) Gemini Flash model of https://ai.google.dev/gemini-api/docs/models, with no shutdown date on
# https://ai.google.dev/gemini-api/docs/deprecations.
DEFAULT_MODEL = "gemini-3.8-flash"
# Retried by the google-genai client itself: timeouts, throttling and server errors (never 400/401/403/404).
DEFAULT_RETRY_STATUS_CODES = (408, 429, 500, 502, 503, 504)

# Gemini's harm categories and block thresholds (google-genai `types.HarmCategory` / `HarmBlockThreshold`), spelt
# here so that loading the judges does not import google-genai. The image categories are Vertex AI's only.
HarmCategory = Literal[
    "HARM_CATEGORY_HARASSMENT",
    "HARM_CATEGORY_HATE_SPEECH",
    "HARM_CATEGORY_SEXUALLY_EXPLICIT",
    "HARM_CATEGORY_DANGEROUS_CONTENT",
    "HARM_CATEGORY_CIVIC_INTEGRITY",
    "HARM_CATEGORY_JAILBREAK",
    "HARM_CATEGORY_IMAGE_HATE",
    "HARM_CATEGORY_IMAGE_DANGEROUS_CONTENT",
    "HARM_CATEGORY_IMAGE_HARASSMENT",
    "HARM_CATEGORY_IMAGE_SEXUALLY_EXPLICIT",
]
HarmBlockThreshold = Literal["OFF", "BLOCK_NONE", "BLOCK_ONLY_HIGH", "BLOCK_MEDIUM_AND_ABOVE", "BLOCK_LOW_AND_ABOVE"]
# A judge must read the harmful content it judges: Gemini's adjustable filters are off for the four categories
# the Gemini API documents for generateContent (civic integrity is deprecated). `OFF` is documented by the Gemini
# API and by Vertex AI alike; the non-adjustable protections (PROHIBITED_CONTENT, SPII, ...) still apply.
DEFAULT_SAFETY_SETTINGS: dict[HarmCategory, HarmBlockThreshold] = {
    "HARM_CATEGORY_HARASSMENT": "OFF",
    "HARM_CATEGORY_HATE_SPEECH": "OFF",
    "HARM_CATEGORY_SEXUALLY_EXPLICIT": "OFF",
    "HARM_CATEGORY_DANGEROUS_CONTENT": "OFF",
}


class RetrySettings(BaseModel):
    """The client's own retries (`types.HttpRetryOptions`): exponential back-off with jitter; each attempt takes
    a rate token of the engine's limiters like the first one."""

    model_config = ConfigDict(extra="forbid")

    attempts: Annotated[int, Field(ge=1, le=10)] = 4  # the first try included
    initial_delay: Annotated[float, Field(gt=0)] = 1.0  # seconds
    max_delay: Annotated[float, Field(gt=0)] = 30.0  # seconds
    exp_base: Annotated[float, Field(ge=1)] = 2.0
    jitter: Annotated[float, Field(ge=0)] = 1.0  # seconds of random delay added to each wait
    http_status_codes: list[int] = Field(default_factory=lambda: list(DEFAULT_RETRY_STATUS_CODES))


class JudgeSettings(BaseModel):
    """Connection, limits and prompt rules shared by every judge (each judge may lower its own limits).

    `api_key` (Gemini API) or `vertex_project` (Vertex AI, application default credentials) enables the
    judges; with neither, every judgement is a `judge_unavailable` skip. Zero means "no limit" for
    `requests_per_minute` and `daily_token_budget`. `safety_settings` go with every request (category →
    threshold; empty: none, Gemini's defaults apply).
    """

    model_config = ConfigDict(extra="forbid")

    api_key: str | None = Field(default=None, repr=False)
    vertex_project: str | None = None
    vertex_location: str = "us-central1"
    model: str = DEFAULT_MODEL
    base_url: str | None = None  # a gateway or proxy in front of the API (or a local fake in tests)
    api_version: str | None = None  # None: the client's default (v1 for the Gemini API, v1beta1 on Vertex AI)
    request_timeout: Annotated[float, Field(gt=0)] = 30.0  # seconds, one HTTP attempt
    judgement_timeout: Annotated[float, Field(gt=0)] = 120.0  # seconds, one judgement with every retry and sample
    retry: RetrySettings = Field(default_factory=RetrySettings)
    max_concurrency: Annotated[int, Field(ge=1)] = 4  # requests in flight, all judges together
    requests_per_minute: Annotated[int, Field(ge=0)] = 60  # all judges together; 0 = unlimited
    daily_token_budget: Annotated[int, Field(ge=0)] = 0  # all judges together, per UTC day; 0 = unlimited
    cache_size: Annotated[int, Field(ge=0)] = 1024  # judgements kept by prompt content hash; 0 = no cache
    redact: bool = True  # mask secrets and PII (the pii_leak patterns) before a prompt leaves the process
    max_pending: Annotated[int, Field(ge=1)] = 1000  # judgements waiting in the daemon; beyond: judge_unavailable
    safety_settings: dict[HarmCategory, HarmBlockThreshold] = Field(
        default_factory=lambda: dict(DEFAULT_SAFETY_SETTINGS)
    )

    @property
    def enabled(self) -> bool:
        return bool(self.api_key or self.vertex_project)


__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_RETRY_STATUS_CODES",
    "DEFAULT_SAFETY_SETTINGS",
    "HarmBlockThreshold",
    "HarmCategory",
    "JudgeSettings",
    "RetrySettings",
]
