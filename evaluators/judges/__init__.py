"""LLM-as-judge evaluators: the LLMJudge base, prompt data blocks, `@llm_judge`, and the builtin judges.

The Gemini client (`evaluators.judges.client`) and the engine that sends judgements under limits
(`evaluators.judges.engine`) are imported from their modules, so that loading the evaluator catalog does not
import google-genai.
"""

from .base import DATA_RULE, JudgeCall, JudgeRequest, JudgeVerdict, LLMJudge
from .decorator import FunctionJudge, llm_judge
from .pairwise import PairwiseJudge, PairwiseReply, combine, judge_pair
from .prepare import PreparedJudgement, prepare
from .prompt import (
    ToolEvidence,
    clip,
    compose,
    conversation_block,
    data_block,
    documents_block,
    escape_data,
    instructions_block,
    question,
    tool_calls_block,
)
from .session_judging import judge_session, place_turn, prepare_session
from .settings import DEFAULT_MODEL, JudgeSettings, RetrySettings
from .transcript import transcript, transcript_block

__all__ = [
    "DATA_RULE",
    "DEFAULT_MODEL",
    "FunctionJudge",
    "JudgeCall",
    "JudgeRequest",
    "JudgeSettings",
    "JudgeVerdict",
    "LLMJudge",
    "PairwiseJudge",
    "PairwiseReply",
    "PreparedJudgement",
    "RetrySettings",
    "ToolEvidence",
    "clip",
    "combine",
    "compose",
    "conversation_block",
    "data_block",
    "documents_block",
    "escape_data",
    "instructions_block",
    "judge_pair",
    "judge_session",
    "llm_judge",
    "place_turn",
    "prepare",
    "prepare_session",
    "question",
    "tool_calls_block",
    "transcript",
    "transcript_block",
]
