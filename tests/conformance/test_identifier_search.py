"""An identifier in a query (INV-5, bob@example.com, A-12/3) is matched as the sequence it is,
on every store: the events that contain it rank first, not those that share one of its
pieces ("inv", "5") with it."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lossgate import NewEvent
from lossgate.model.search_terms import query_terms

T = "acme"

_PREFIX = st.sampled_from(["INV", "PO", "TKT", "A", "SHP"])
_SEP = st.sampled_from(["-", "/", ".", ":"])


def test_query_terms_keep_an_identifier_whole() -> None:
    assert query_terms("What about INV-5 and the refund budget?") == ["inv-5", "refund", "budget"]
    assert query_terms("mail bob@example.com today") == ["mail", "bob@example.com", "today"]
    assert query_terms("shelf A-12/3") == ["shelf", "a-12/3"]
    assert query_terms("a well-known x-ray") == ["well", "known", "ray"]  # no digit, no @: words


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prefix=_PREFIX, sep=_SEP, numbers=st.lists(st.integers(0, 60), min_size=3, max_size=12), pick=st.integers(0, 11))
def test_an_identifier_query_returns_the_events_that_contain_it_first(memory, prefix, sep, numbers, pick) -> None:
    subject = f"s-{uuid.uuid4().hex[:8]}"
    ids = [f"{prefix}{sep}{n}" for n in numbers]
    wanted = ids[pick % len(ids)]
    events = [
        NewEvent(
            tenant_id=T,
            subject_id=subject,
            event_id=f"{subject}-e{i}",
            text=f"{prefix.lower()} note {i}: see {ident} and item {numbers[(i + 1) % len(numbers)]}",
        )
        for i, ident in enumerate(ids)
    ]
    events += [
        NewEvent(
            tenant_id=T, subject_id=subject, event_id=f"{subject}-x{i}", text=f"{prefix} {n} {prefix} {n} {prefix}"
        )
        for i, n in enumerate(numbers)
    ]  # the pieces, apart and often
    memory.append(events)
    holding = {e.event_id for e in events if wanted in e.text.split()}
    # asked for as many hits as there are events holding it, recall returns those
    found = [
        e.event_id
        for e in memory.recall(T, subject, query=f"what about {wanted}?", k=len(holding), context=False).events
    ]
    assert set(found) == holding, (wanted, found)


def test_a_word_with_a_dotted_capital_i_is_found_as_written(memory) -> None:
    memory.append(
        [
            NewEvent(tenant_id="acme", subject_id="u-i", event_id="ist", text="We flew to İstanbul in May."),
            NewEvent(tenant_id="acme", subject_id="u-i", event_id="other", text="The stanbul note is unrelated."),
        ]
    )
    with memory.store.write() as tx:
        tx.refresh_search_index()
    with memory.store.read() as tx:
        assert tx.search_events("acme", "u-i", " ".join(query_terms("İstanbul")), limit=5) == ["ist"]
