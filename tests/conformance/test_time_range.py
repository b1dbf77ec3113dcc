"""One range of instants, enforced at every entry point, and consolidation at both of its ends.

lossgate keeps an instant whose UTC form lies from 0001-01-01T00:00:00Z to
9999-12-31T23:59:59.999999Z (:mod:`lossgate.model.instants`). Anything outside is refused,
naming the field, before anything is written; anything inside consolidates and publishes,
flat or by periods, whatever relative words ("tomorrow", "last Friday") its events use.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from lossgate import InvalidInput, NewEvent, NewFact
from lossgate.cli import app
from lossgate.consolidate.hierarchy import HierarchyConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.model.instants import EARLIEST, LATEST, after, before, instant_problem, shift_date
from tests.support import REGISTRY_PATH

T = "acme"
# UTC 10000-01-01 and 0000-12-31: no UTC form in the calendar
OUTSIDE = [datetime.fromisoformat("9999-12-31T23:59:59-05:00"), datetime.fromisoformat("0001-01-01T00:00:00+05:00")]
EDGES = [
    LATEST,
    EARLIEST,
    datetime.fromisoformat("9999-12-31T23:59:59+14:00"),
    datetime.fromisoformat("0001-01-01T00:00:00-12:00"),
]
RELATIVE = [
    "tomorrow",
    "the day after tomorrow",
    "yesterday",
    "next Monday",
    "last Friday",
    "this Sunday",
    "in 3 days",
    "2 weeks ago",
    "in 2 months",
    "6 months ago",
    "in 999 weeks",
    "today at 10:30",
]
FLAT = ConsolidationConfig(hierarchy=HierarchyConfig(mode="never"))
BY_DAY = ConsolidationConfig(hierarchy=HierarchyConfig(mode="always", split_by="day"))


def event(subject: str, event_id: str, at: datetime, text: str = "hello") -> NewEvent:
    return NewEvent(tenant_id=T, subject_id=subject, event_id=event_id, text=text, occurred_at=at)


@pytest.mark.parametrize("at", OUTSIDE, ids=str)
def test_an_instant_without_a_utc_form_is_refused_by_every_record_naming_the_field(memory, at):
    with pytest.raises(InvalidInput, match="(?s)occurred_at.*outside the instants lossgate keeps"):
        event("u1", "e1", at)
    with pytest.raises(InvalidInput, match="valid_from"):
        NewFact(tenant_id=T, subject_id="u1", predicate="timezone", value="UTC", source_event_ids=["e1"], valid_from=at)
    memory.append([event("u1", "e1", LATEST)])
    with pytest.raises(InvalidInput, match="outside the instants"):  # a datetime fact value
        memory.assert_fact(
            NewFact(
                tenant_id=T,
                subject_id="u1",
                predicate="meeting.starts_at",
                value=at.isoformat(),
                source_event_ids=["e1"],
            )
        )
    with pytest.raises(InvalidInput, match="now"):
        memory.admin.demote(T, "u1", now=at)
    assert memory.facts(T, "u1") == [] and memory.admin.clock(T, "u1").high_water == 1


@pytest.mark.parametrize("written", [1700000000, 0, -62135596800, 1.5e9])
def test_a_time_written_as_a_number_is_refused(memory, written):
    with pytest.raises(InvalidInput, match="(?s)occurred_at.*not a number"):
        NewEvent(tenant_id=T, subject_id="u1", text="hi", occurred_at=written)
    with pytest.raises(InvalidInput, match="(?s)valid_from.*not a number"):
        NewFact(
            tenant_id=T, subject_id="u1", predicate="timezone", value="UTC", source_event_ids=["e1"], valid_from=written
        )


@pytest.mark.parametrize(
    "written",
    [
        "9999-12-31T23:59:59.999999-00:00:00.000001",
        "2026-03-14T10:00:00+01:00:30",
        "2024-01-01T00:00:00.1234567891+00:00",
    ],
)
def test_an_offset_finer_than_minutes_or_a_fraction_finer_than_microseconds_is_refused(memory, written):
    with pytest.raises(InvalidInput, match="occurred_at"):
        NewEvent(tenant_id=T, subject_id="u1", text="hi", occurred_at=written)
    memory.append([event("u1", "e1", LATEST)])
    with pytest.raises(InvalidInput, match="meeting.starts_at|minutes|microsecond"):
        memory.assert_fact(
            NewFact(tenant_id=T, subject_id="u1", predicate="meeting.starts_at", value=written, source_event_ids=["e1"])
        )
    with pytest.raises(InvalidInput, match="now"):
        memory.admin.demote(T, now=datetime(2026, 3, 14, tzinfo=timezone(timedelta(seconds=30))))
    assert memory.facts(T, "u1") == []


def test_a_clock_without_an_offset_is_refused(memory):
    with pytest.raises(InvalidInput, match="now must carry a UTC offset"):
        memory.admin.demote(T, now=datetime(2026, 3, 14))


def test_ingest_and_demote_refuse_an_instant_outside_the_range_with_exit_2(store_url, tmp_path):
    cli = CliRunner()
    assert cli.invoke(app, ["--db", store_url, "init", "--predicates", str(REGISTRY_PATH)]).exit_code == 0
    lines = tmp_path / "events.jsonl"
    lines.write_text(
        json.dumps(
            {
                "type": "event",
                "tenant_id": T,
                "subject_id": "u1",
                "event_id": "e1",
                "text": "hi",
                "occurred_at": OUTSIDE[0].isoformat(),
            }
        )
        + "\n"
    )

    ingested = cli.invoke(app, ["--db", store_url, "ingest", str(lines)])
    assert ingested.exit_code == 2 and "outside the instants lossgate keeps" in ingested.output
    assert len(ingested.stderr.splitlines()) == 1
    for now in (
        "2026-03-14T10:00:00",
        OUTSIDE[1].isoformat(),
        "9999-12-31T23:59:59.999999-00:00:00.000001",
        "2026-03-14T10:00:00.1234567+00:00",
    ):
        demoted = cli.invoke(app, ["--db", store_url, "demote", "-t", T, "--now", now])
        assert demoted.exit_code == 2 and "--now" in demoted.output, demoted.output
    events = cli.invoke(app, ["--db", store_url, "events", "-t", T, "-s", "u1", "--json"])
    assert events.exit_code == 0 and events.stdout.strip() in ("", "[]")


@pytest.mark.parametrize("config", [FLAT, BY_DAY], ids=["flat", "by-day"])
def test_every_relative_word_at_both_ends_of_the_range_publishes(memory, config):
    for n, at in enumerate(EDGES):
        subject = f"edge-{n}"
        memory.append(
            [
                event(subject, f"{subject}-{i}", at, f"Call me {word} about INV-{i}, not before.")
                for i, word in enumerate(RELATIVE)
            ]
        )
        attempt = memory.consolidate(T, subject, config=config)
        assert attempt.status == "published", (at, attempt.violations, attempt.error)
        assert memory.recall(T, subject).mode == "summary"


def test_tiers_move_at_both_ends_of_the_range(memory):
    memory.append([event("u1", "e1", LATEST, "note")])
    memory.consolidate(T, "u1")
    for now in (EARLIEST, LATEST, datetime.fromisoformat("0001-01-01T00:00:00-12:00")):
        (done,) = memory.admin.demote(T, "u1", now=now)
        assert done.subject_id == "u1"
    assert memory.events(T, "u1")[0].tier in ("warm", "cold")


def test_date_arithmetic_saturates_at_the_ends():
    assert before(EARLIEST, timedelta(days=90)) == EARLIEST and after(LATEST, timedelta(days=1)) == LATEST
    assert before(LATEST, timedelta(days=-1)) == LATEST and after(EARLIEST, timedelta(days=-1)) == EARLIEST
    assert shift_date(LATEST.date(), 1) is None and shift_date(EARLIEST.date(), -1) is None
    assert shift_date(EARLIEST.date(), 1) == EARLIEST.date() + timedelta(days=1)
    assert instant_problem(LATEST) is None and instant_problem(EARLIEST) is None
    assert all(instant_problem(at) for at in OUTSIDE)


# -- drawn across the whole range ------------------------------------------------------------
offsets = st.integers(min_value=-14 * 60, max_value=14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
near_an_end = st.one_of(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(1, 1, 9)),
    st.datetimes(min_value=datetime(9999, 12, 23), max_value=datetime(9999, 12, 31, 23, 59, 59)),
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
)


@st.composite
def instants(draw):
    """Local times near either end (or anywhere) with offsets that may push them off the
    calendar in UTC: what the records accept must consolidate, what they refuse must say so."""
    return draw(near_an_end).replace(tzinfo=draw(offsets))


@pytest.mark.slow
@settings(
    max_examples=25,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    times=st.lists(instants(), min_size=1, max_size=4),
    words=st.lists(st.sampled_from(RELATIVE), min_size=1, max_size=4),
    by_day=st.booleans(),
)
def test_any_accepted_instant_with_any_relative_words_consolidates(memory, times, words, by_day):
    subject = f"p-{abs(hash((tuple(times), tuple(words), by_day))) % 10**12}"
    accepted = []
    for i, at in enumerate(times):
        try:
            accepted.append(event(subject, f"{subject}-{i}", at, f"Ship it {words[i % len(words)]}, not later."))
        except InvalidInput as exc:
            assert instant_problem(at) is not None and "occurred_at" in str(exc)
        else:
            assert instant_problem(at) is None
    if not accepted:
        return
    memory.append(accepted)
    attempt = memory.consolidate(T, subject, config=BY_DAY if by_day else FLAT)
    assert attempt.status == "published", (times, words, attempt.violations, attempt.error)
