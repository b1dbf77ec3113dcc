"""Splitting a history into the parts of a hierarchical consolidation (lossgate.consolidate.parts)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from lossgate.consolidate.hierarchy import HierarchyConfig, digest_budget
from lossgate.consolidate.parts import period_key, split
from lossgate.errors import InvalidInput
from lossgate.model.records import Event

AT = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def words(text: str) -> int:  # a token counter: one token per word
    return len(text.split())


def event(seq: int, text: str = "one two three four", *, session=None, at=AT) -> Event:
    return Event(
        tenant_id="t",
        subject_id="s",
        event_id=f"e{seq}",
        seq=seq,
        kind="message",
        actor="user",
        trust="authenticated_user",
        text=text,
        payload=None if session is None else {"session": session},
        occurred_at=at,
        recorded_at=at,
        content_hash=f"sha256:{seq}",
    )


def test_period_keys():
    assert period_key(event(1, session=3), "session") == "session 3"
    assert period_key(event(1, session="12"), "session") == "session 12"
    assert period_key(event(1), "session") == "2023-05-08"  # no session: its day
    assert period_key(event(1, session=True), "session") == "2023-05-08"  # not a session name
    assert period_key(event(1, session={"a": 1}), "session") == "2023-05-08"
    assert period_key(event(1, session=3), "day") == "2023-05-08"
    assert period_key(event(1), "week") == "2023-W19"
    assert period_key(event(1), "month") == "2023-05"
    offset = timezone(timedelta(hours=-5))
    assert period_key(event(1, at=datetime(2023, 5, 8, 22, 0, tzinfo=offset)), "day") == "2023-05-08"  # its own offset


def test_a_session_named_by_text_groups_its_events_but_its_name_never_reaches_a_key():
    events = [event(1, session="HIV test results"), event(2, session="3 #2"), event(3, session="HIV test results")]
    parts = split(events, by="session", context_tokens=1000, count=words)
    assert [(p.key, [e.seq for e in p.events]) for p in parts] == [("session @1", [1, 3]), ("session @2", [2])]


def test_sessions_group_events_even_when_appended_out_of_order_and_parts_follow_time():
    events = [
        event(1, session=2, at=AT + timedelta(days=7)),
        event(2, session=1),
        event(3, session=2, at=AT + timedelta(days=7)),
    ]
    parts = split(events, by="session", context_tokens=1000, count=words)
    assert [(p.key, [e.seq for e in p.events]) for p in parts] == [("session 1", [2]), ("session 2", [1, 3])]
    assert parts[1].first_at == AT + timedelta(days=7)


def test_a_part_larger_than_the_context_is_cut_between_whole_events_never_inside_one():
    events = [event(i) for i in range(1, 61)]  # "- user: one two three four": 6 words, 7 with the newline
    parts = split(events, by="session", context_tokens=40, count=words)
    assert len(parts) >= 60 * 7 // 40 and all(sum(7 for _ in p.events) <= 40 for p in parts)
    assert [e.seq for p in parts for e in p.events] == list(range(1, 61))  # every event, once, in order
    assert parts[0].key == "2023-05-08" and all(p.key == f"2023-05-08 #{p.events[0].seq}" for p in parts[1:])
    huge = event(99, " ".join(["word"] * 500))
    (alone,) = split([huge], by="day", context_tokens=64, count=words)
    assert alone.events == (huge,)  # one event larger than the context is a part of its own, whole


def test_removing_or_appending_one_event_changes_only_the_chunks_around_it():
    events = [event(i) for i in range(1, 301)]
    before = split(events, by="day", context_tokens=60, count=words)
    for gone in (40, 150, 260):
        after = split([e for e in events if e.seq != gone], by="day", context_tokens=60, count=words)
        changed = set(after) ^ set(before)
        assert 1 <= len(changed) <= 4, (gone, len(before), len(changed))  # its chunk, the neighbour at most
    appended = split([*events, event(301)], by="day", context_tokens=60, count=words)
    assert appended[:-1] == before[:-1] or appended[:-2] == before[:-2]


@pytest.mark.parametrize(
    "bad",
    [
        {"mode": "sometimes"},
        {"split_by": "year"},
        {"context_tokens": 10},
        {"digest_tokens": 8},
        {"digest_ratio": 0},
        {"digest_ratio": 1.5},
    ],
)
def test_a_bad_hierarchy_config_is_refused_with_a_typed_error(bad):
    with pytest.raises(InvalidInput):
        HierarchyConfig(**bad)


def test_a_digest_keeps_a_share_of_its_period_within_bounds():
    settings = HierarchyConfig().settings(None, object())  # the defaults: a share, its cap and its floor
    assert (settings.split_by, settings.context_tokens, settings.digest_tokens) == ("session", 8000, 200)
    assert digest_budget(settings, 1000) == 150
    assert digest_budget(settings, 10_000) == 200
    assert digest_budget(settings, 10) == 32


def test_unset_settings_are_inherited_from_the_current_root_and_set_ones_win():
    previous = HierarchyConfig(split_by="day", context_tokens=300).settings(None, object())
    assert HierarchyConfig().settings(previous, object()) == previous
    assert HierarchyConfig(split_by="week").settings(previous, object()).model_dump() == {
        **previous.model_dump(),
        "split_by": "week",
    }

    class Declares:
        context_tokens = 4096

    assert HierarchyConfig().settings(None, Declares()).context_tokens == 4096
