"""The gate cases lossgate ships (``lossgate/fixtures/gate/cases``), loaded once, by id:
what the mutation lane runs over, and what the ledger-prose tests read narratives against."""

from __future__ import annotations

from lossgate.evaluation.lane import default_fixtures, load_cases

CASES = {c.case_id: c for c in load_cases(default_fixtures())}
