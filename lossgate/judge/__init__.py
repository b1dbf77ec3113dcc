"""A model as the gate's second judge.

The deterministic gate (:mod:`lossgate.gate`) is exact about claims and atoms and, with
the critical-topic fence, about what a narrative may say on critical topics in the
sources' own words. A model judge reads the narrative for meaning: it extracts the
statements the narrative makes about the subject's facts (:class:`ModelJudge`), and
:func:`judge_violations` diffs them against the ledger deterministically. The judge is
configured apart from the compressor (its own URL, model and key) so that their failures
do not correlate; an unreachable, slow, refusing or malformed judge fails the attempt:
nothing is published on a narrative a configured judge has not read.
"""

from lossgate.judge.compare import judge_violations
from lossgate.judge.model_judge import JUDGE_PROMPT_VERSION, JudgeConfig, JudgeError, ModelJudge, Statement

__all__ = ["JUDGE_PROMPT_VERSION", "JudgeConfig", "JudgeError", "ModelJudge", "Statement", "judge_violations"]
