"""LLM-as-judge evaluators: the LLMJudge base, the Gemini client and engine, and the builtin judges."""

from .base import DATA_RULE, JudgeRequest, JudgeVerdict, LLMJudge
from .prepare import PreparedJudgement, prepare
from .settings import DEFAULT_MODEL, JudgeSettings, RetrySettings

__all__ = [
    "DATA_RULE",
    "DEFAULT_MODEL",
    "JudgeRequest",
    "JudgeSettings",
    "JudgeVerdict",
    "LLMJudge",
    "PreparedJudgement",
    "RetrySettings",
    "prepare",
]
