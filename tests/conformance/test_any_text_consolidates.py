"""Any text an entry point accepts can be consolidated: the default compressor's summary of
it passes the gate and publishes, flat and by periods.

The deterministic compressor quotes each event as a line (``- actor: text``); the gate
reads such a quote as the event's own text, as it reads the sources, so no spelling of a
text (an amount the parser overflows, a phone number its spacing makes, a party its
line's lead makes) can keep a subject in raw fallback. Texts are drawn from fragments
that sit at the edges of what the atom extractor reads, mixed with arbitrary Unicode.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lossgate import InvalidInput, NewEvent
from lossgate.consolidate.hierarchy import HierarchyConfig
from lossgate.consolidate.pipeline import ConsolidationConfig

pytestmark = pytest.mark.slow  # a property that consolidates every example

EDGY = [
    "tomorrow",
    "2 weeks ago",
    "$1e999",
    "1e-400",
    "31/12/9999",
    "9999-12-31",
    "0001-01-01",
    "12/31/0000",
    "in 999 months",
    "99999999999999999999999 USD",
    "-0",
    "not",
    "never",
    "INV-",
    "@",
    "v1.2.3",
    "10:99",
    "24:00",
    "T25:61",
    "March 32",
    "Feb 29, 2023",
    "0000-00-00",
    "1e308%",
    "€",
    "\u202e",
    "¹²³",
    "٣",
    "１２",
    "next Monday at 25pm",
    "EOD UTC+99",
    "GMT-14:59",
    "P1D",
    "∞",
    "NaN",
    "0x1F",
    "1,000,000,000,000,000.5",
    "+00  000000",
    "- user:",
    "\n",
    "Do not",
    "isn't",
    "No.",
    "A-12/3",
    "bob@example.com",
]
texts = st.lists(st.one_of(st.sampled_from(EDGY), st.text(max_size=12)), min_size=1, max_size=8).map(" ".join)
CONFIGS = {
    "flat": ConsolidationConfig(hierarchy=HierarchyConfig(mode="never")),
    "by-day": ConsolidationConfig(hierarchy=HierarchyConfig(mode="always", split_by="day")),
}


@settings(
    max_examples=60,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    said=st.lists(texts, min_size=1, max_size=4),
    when=st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    shape=st.sampled_from(sorted(CONFIGS)),
)
def test_the_default_summary_of_any_accepted_text_publishes(memory, said, when, shape):
    subject = f"s-{abs(hash((tuple(said), when, shape))) % 10**12}"
    events = []
    for i, text in enumerate(said):
        try:
            events.append(
                NewEvent(
                    tenant_id="acme",
                    subject_id=subject,
                    event_id=f"{subject}-{i}",
                    text=text,
                    occurred_at=when.replace(tzinfo=UTC),
                )
            )
        except InvalidInput:
            continue  # refused at the entry point: nothing to consolidate
    if not events:
        return
    memory.append(events)
    attempt = memory.consolidate("acme", subject, config=CONFIGS[shape])
    assert attempt.status == "published", (said, attempt.violations, attempt.error)
