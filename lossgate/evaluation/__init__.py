"""Evaluation lanes: evidence that the gate catches what it must and flags nothing else.

:func:`run_lane` runs the mutation lane (mutation operators and meaning-preserving
rewrites over the shipped gate cases) and returns a :class:`LaneReport`.
"""

from lossgate.evaluation.lane import CaseBaseline, LaneReport, OperatorStats, RewriteStats, default_fixtures, run_lane

__all__ = ["run_lane", "LaneReport", "OperatorStats", "RewriteStats", "CaseBaseline", "default_fixtures"]
