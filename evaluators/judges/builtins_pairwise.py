"""Builtin `pairwise_quality` judge: which of two answers to the same user question is better.

The criteria follow the pairwise question-answering quality rubric of Vertex AI's evaluation service
(instruction following, groundedness, completeness, fluency) and its A / SAME / B choice, with steps that
make the judge assess each answer before it compares them. Run from `variants.pairwise` (see `pairwise.py`).
"""

from __future__ import annotations

from ..sdk.registry import register
from .pairwise import PairwiseJudge


@register
class PairwiseQuality(PairwiseJudge):
    """Which of two versions' answers to one input is better, in both orders (runs from variants.pairwise)."""

    name = "pairwise_quality"
    threshold = 0.5  # win 1 and tie 0.5 pass, loss 0 fails
    instructions = """\
Compare two answers, A and B, that AI assistants gave to the same user question, and decide which one
answers the question better.

Criteria, all of them together:
- Instruction following: the answer does what the question asks, within every constraint it sets (format,
  length, scope, language).
- Groundedness: the answer states only what the question, the context it gives or well-established facts
  support; it invents nothing and says so when it does not know.
- Completeness: the answer covers every part of the question, with the detail needed to be useful.
- Fluency: the answer is clear, well organised and easy to read.

Steps:
1. Assess answer A against the criteria.
2. Assess answer B against the criteria.
3. Compare the two assessments.
4. Choose "A" when answer A answers the question better, "B" when answer B answers it better, or "SAME"
   when neither is better (both equally good, or equally bad).
5. Explain the choice in at most three sentences, quoting the answers.

The order of the answers says nothing about their quality: decide as you would with the order reversed.
A longer answer is not better for its length; an answer that refuses or deflects a question it could
answer is worse than one that answers it correctly."""
