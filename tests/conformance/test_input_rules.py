"""One rule for ids, numbers, JSON and durations, on every store (lossgate.model.limits, lossgate.model.values).

* An id (tenant, subject, event, fact) holds no whitespace, control, format or separator
  character (Unicode Z, Cc, Cf) and no lone surrogate: the records, the Python API's
  ``tenant_id`` and ``subject_id`` arguments and the JSON Lines ingest refuse it the same
  way, before anything is written, and ids are kept exactly as given (nothing normalizes
  them). An id that names a stored record is looked up as given, so an event stored by an
  earlier version with a space in its id can still be read, cited, revoked and erased.
* JSON from outside (an ingest line, ``--value``) may not give a key twice in one object
  nor hold a number a double cannot hold (``1e-400`` would be 0, ``1e999`` infinity).
* A duration reads one way: ISO 8601 with whole numbers (a fraction only of seconds, to the
  microsecond) and a sign only in front; its stored form means what was written.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lossgate import InvalidInput, NewEvent, NewFact, NotFound, ValueTypeError
from lossgate.api.ingest import IngestError, describe_validation_error, ingest_lines
from lossgate.errors import InvalidRecord
from lossgate.model.limits import MAX_ID_CHARS, UnreadableJson, id_problem, read_json
from lossgate.model.registry import load_registry
from lossgate.model.values import ValueMismatch, coerce_value, encode_value
from tests.support import REGISTRY_PATH
from tests.support.cli import one_line_error

T, S = "acme", "user-17"
AT = datetime(2026, 3, 14, 14, 32, tzinfo=timezone(timedelta(hours=-5)))
FORBIDDEN_CATEGORIES = ("Zs", "Zl", "Zp", "Cc", "Cf")

# One of each kind a hostile caller reaches for, named for the test ids.
BAD_CHARS = {
    "space": " ",
    "tab": "\t",
    "newline": "\n",
    "carriage return": "\r",
    "unit separator": "\x1f",
    "next line": "\x85",
    "nbsp": "\u00a0",
    "ideographic space": "\u3000",
    "line separator": "\u2028",
    "paragraph separator": "\u2029",
    "zero width space": "\u200b",
    "zero width joiner": "\u200d",
    "word joiner": "\u2060",
    "rtl override": "\u202e",
    "rtl mark": "\u200f",
    "arabic letter mark": "\u061c",
    "bom": "\ufeff",
    "soft hyphen": "\u00ad",
    "nul": "\x00",
    "surrogate": "\ud800",
}


def event_fields(**kw) -> dict:
    return {"tenant_id": T, "subject_id": S, "event_id": "e9", "text": "hello", "occurred_at": AT, **kw}


def fact_fields(**kw) -> dict:
    return {
        "tenant_id": T,
        "subject_id": S,
        "fact_id": "f9",
        "predicate": "timezone",
        "value": "UTC+01:00",
        "source_event_ids": ["e1"],
        **kw,
    }


def state(memory, tenant: str = T) -> tuple:
    """Everything a write could have touched for the tenant."""
    subjects = memory.admin.subjects(tenant)
    return (
        subjects,
        [
            (
                memory.admin.clock(tenant, s),
                memory.events(tenant, s),
                memory.facts(tenant, s, statuses=None),
                memory.admin.log(tenant, s),
                memory.admin.recalls(tenant, s),
                memory.admin.jobs(tenant, s),
            )
            for s in subjects
        ],
    )


@pytest.fixture
def seeded(memory):
    """One event and one fact on it."""
    memory.append([NewEvent(**event_fields(event_id="e1", text="My timezone is UTC+01:00."))])
    memory.assert_fact(NewFact(**fact_fields(fact_id="f1")))
    return memory


def printable(message: str, bad: str) -> None:
    """A refusal's message is one line that shows the character by its code point, never raw
    (a message has spaces of its own)."""
    assert (bad == " " or bad not in message) and "\n" not in message, message


# -- the rule itself, drawn from the forbidden categories --------------------------------


@given(
    st.text(
        alphabet=st.characters(categories=["L", "N", "P", "S"], exclude_characters="/"),
        min_size=1,
        max_size=MAX_ID_CHARS,
    )
)
def test_an_id_of_letters_digits_punctuation_and_symbols_is_an_id(ident):
    assert id_problem(ident) is None


@given(
    st.text(alphabet=st.characters(categories=["L", "N"]), max_size=20),
    st.text(alphabet=st.characters(categories=["L", "N"]), max_size=20),
)
def test_a_slash_anywhere_breaks_the_rule(before, after):
    assert "'/'" in (id_problem(f"{before}/{after}") or "")


@given(
    prefix=st.text(alphabet=st.characters(categories=["L", "N"]), max_size=20),
    bad=st.characters(categories=FORBIDDEN_CATEGORIES) | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    suffix=st.text(alphabet=st.characters(categories=["L", "N"]), max_size=20),
)
def test_a_forbidden_character_anywhere_breaks_the_rule_in_every_record(prefix, bad, suffix):
    assert unicodedata.category(bad) in (*FORBIDDEN_CATEGORIES, "Cs")
    ident = prefix + bad + suffix
    problem = id_problem(ident)
    assert problem is not None and f"position {len(prefix)}" in problem
    printable(problem, bad)
    for field in ("tenant_id", "subject_id", "event_id"):
        with pytest.raises(InvalidRecord) as caught:
            NewEvent(**event_fields(**{field: ident}))
        printable(describe_validation_error(caught.value), bad)  # what the CLI and the service show
    for field in ("tenant_id", "subject_id", "fact_id"):
        with pytest.raises(InvalidRecord):
            NewFact(**fact_fields(**{field: ident}))


# -- the Python API ----------------------------------------------------------------------


@pytest.mark.parametrize("bad", BAD_CHARS.values(), ids=BAD_CHARS.keys())
def test_a_bad_id_in_a_record_or_an_argument_is_refused_and_writes_nothing(seeded, bad):
    before = state(seeded)
    for fields in ({"tenant_id": f"{T}{bad}"}, {"subject_id": f"u{bad}1"}, {"event_id": f"{bad}e8"}):
        with pytest.raises(InvalidRecord) as caught:
            seeded.append([NewEvent(**event_fields(event_id="e7")), NewEvent(**event_fields(**fields))])
        printable(describe_validation_error(caught.value), bad)
    with pytest.raises(InvalidInput):
        seeded.assert_fact(NewFact(**fact_fields(fact_id=f"f{bad}2")))
    for call in (
        lambda: seeded.recall(T, f"{S}{bad}", query="timezone"),
        lambda: seeded.request_consolidation(f"{T}{bad}", S),
        lambda: seeded.events(T, f"{bad}{S}"),
        lambda: seeded.delete_event(T, f"{S}{bad}", "e1"),
    ):
        with pytest.raises(InvalidInput) as caught:
            call()
        printable(str(caught.value), bad)
    assert state(seeded) == before


@pytest.mark.parametrize("bad", ["\u200b", "\u202e", " ", "\n"], ids=["zero width", "rtl", "space", "newline"])
def test_an_event_or_fact_id_that_was_never_stored_is_not_found_and_shown_escaped(seeded, bad):
    before = state(seeded)
    for call in (
        lambda: seeded.delete_event(T, S, f"e1{bad}"),
        lambda: seeded.revoke_event(T, S, f"e1{bad}"),
        lambda: seeded.delete_fact(T, S, f"f1{bad}"),
        lambda: seeded.fact(T, S, f"f1{bad}"),
        lambda: seeded.assert_fact(NewFact(**fact_fields(fact_id="f3", source_event_ids=[f"e1{bad}"]))),
    ):
        with pytest.raises(NotFound) as caught:
            call()
        printable(str(caught.value), bad)
    assert state(seeded) == before


def test_an_id_an_earlier_version_stored_stays_readable_citable_and_erasable(memory):
    # Stored as earlier versions let it through (the record is built past its validation).
    legacy = NewEvent(**event_fields(event_id="e1")).model_copy(update={"event_id": "msg 41"})
    memory.append([legacy])
    assert [e.event_id for e in memory.events(T, S)] == ["msg 41"]
    with pytest.raises(InvalidRecord):  # a new event may not take such an id ...
        NewEvent(**event_fields(event_id="msg 42"))
    fact = memory.assert_fact(NewFact(**fact_fields(source_event_ids=["msg 41"])))  # ... but it can be cited
    assert fact.source_event_ids == ("msg 41",)
    assert memory.revoke_event(T, S, "msg 41").state == "revoked"
    ingest_lines(
        memory,
        [
            json.dumps(
                {"type": "delete_event", "tenant_id": T, "subject_id": S, "event_id": "msg 41", "reason": "erasure"}
            )
        ],
    )
    assert memory.events(T, S, states=None)[0].state == "deleted"


def test_ids_are_kept_exactly_as_given(memory):
    # "café" composed and decomposed look alike and are two subjects: nothing normalizes them.
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    for number, subject in enumerate((composed, decomposed, "Cafe", "cafe")):
        memory.append([NewEvent(**event_fields(subject_id=subject, event_id=f"e-{number}"))])
    assert sorted(memory.admin.subjects(T)) == sorted([composed, decomposed, "Cafe", "cafe"])
    assert [e.subject_id for e in memory.events(T, decomposed)] == [decomposed]


# -- numbers -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan], ids=["inf", "-inf", "nan"])
def test_a_python_float_json_has_no_number_for_is_refused(memory, value):
    with pytest.raises(InvalidRecord):
        NewEvent(**event_fields(payload={"x": [value]}))
    assert memory.admin.subjects(T) == []


@given(st.decimals(allow_nan=False, allow_infinity=False))
def test_read_json_keeps_every_number_a_double_can_hold_and_refuses_the_others(number):
    literal = str(number)  # "1E-400", "0.001", "-0", "12": all JSON numbers
    as_float = float(number)
    integer = re.fullmatch(r"-?[0-9]+", literal) is not None  # read as a Python int, exactly
    fits = integer or (math.isfinite(as_float) and (as_float != 0 or number.is_zero()))
    try:
        read = read_json('{"x": [' + literal + "]}")
    except UnreadableJson as exc:
        assert not fits and exc.kind == "number_out_of_range" and exc.loc == ("x", 0)
    else:
        assert fits and Decimal(read["x"][0]) == number


# -- the JSON Lines ingest and the CLI ---------------------------------------------------


def event_line(**kw) -> str:
    return json.dumps({"type": "event", **event_fields(occurred_at=AT.isoformat()), **kw})


def fact_line(**kw) -> str:
    return json.dumps({"type": "fact", **fact_fields(), **kw})


@pytest.mark.parametrize("bad", BAD_CHARS.values(), ids=BAD_CHARS.keys())
@pytest.mark.parametrize("field", ["tenant_id", "subject_id", "event_id"])
def test_ingest_refuses_a_bad_id_naming_its_line(memory, field, bad):
    good = event_line(event_id="e1")
    with pytest.raises(IngestError) as caught:
        ingest_lines(memory, [good, event_line(**{field: f"x{bad}1"})])
    assert caught.value.line == 2 and f"'{field}'" in str(caught.value)
    printable(str(caught.value), bad)
    assert memory.admin.subjects(T) == []


def test_a_zero_width_tenant_never_becomes_a_second_tenant(memory):
    ingest_lines(memory, [event_line(event_id="e1")])
    with pytest.raises(IngestError, match=r"U\+200B ZERO WIDTH SPACE"):
        ingest_lines(memory, [event_line(tenant_id=f"{T}\u200b", event_id="e2")])
    assert [e.event_id for e in memory.events(T, S)] == ["e1"]


UNREADABLE = {
    "duplicate key": (
        event_line().replace('"type": "event"', '"type": "event", "text": "twice"'),
        "duplicate key 'text' in the top-level object",
    ),
    "duplicate key in a payload": (
        event_line(payload={"a": {"k": 1}}).replace('{"k": 1}', '{"k": 1, "k": 2}'),
        "duplicate key 'k' in the object at payload.a",
    ),
    "1e-400 in a payload": (
        event_line(payload={"x": [0]}).replace("[0]", "[1, 1e-400]"),
        "the number 1e-400 at payload.x.1 would read as 0",
    ),
    "-1e-400 in a payload": (
        event_line(payload={"x": 0}).replace('"x": 0', '"x": -1e-400'),
        "the number -1e-400 at payload.x would read as 0",
    ),
    "1e999 in a payload": (
        event_line(payload={"x": 0}).replace('"x": 0', '"x": 1e999'),
        "the number 1e999 at payload.x would read as infinity",
    ),
    "1e-400 as a fact value": (
        fact_line(predicate="invoice.total", value=0).replace('"value": 0', '"value": 1e-400'),
        "the number 1e-400 at value would read as 0",
    ),
}


@pytest.mark.parametrize("text, problem", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_ingest_refuses_json_that_would_not_read_back_as_written(memory, text, problem):
    with pytest.raises(IngestError) as caught:
        ingest_lines(memory, [event_line(event_id="e1"), text])
    assert caught.value.line == 2 and problem in str(caught.value), caught.value
    assert memory.admin.subjects(T) == []


def test_a_zero_written_small_is_still_zero(memory):
    ingest_lines(memory, [event_line(payload={"x": 0}).replace('"x": 0', '"x": 0e-999')])
    assert memory.events(T, S)[0].payload == {"x": 0.0}


def _nothing_written(store_url: str) -> None:
    import lossgate

    with lossgate.open(store_url) as memory:
        assert memory.admin.subjects(T) == [] and memory.admin.registry == load_registry(REGISTRY_PATH)


@pytest.mark.parametrize(
    "bad",
    [f"{T}\u202e", f"{T}\u200b", f"{T}\ufeff", f"{T}\u2028"],
    ids=["rtl override", "zero width", "bom", "line separator"],
)
def test_cli_ingest_of_a_bad_tenant_exits_2_with_one_escaped_line(cli, tmp_path: Path, store_url: str, bad: str):
    path = tmp_path / "bad.jsonl"
    path.write_text(
        event_line(event_id="e1") + "\n" + event_line(tenant_id=bad, event_id="e2") + "\n", encoding="utf-8"
    )
    message = one_line_error(cli("ingest", "--quiet", str(path)), f"{path}:2:", "field 'tenant_id'")
    printable(message, bad[-1])
    _nothing_written(store_url)


@pytest.mark.parametrize("text, problem", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_cli_ingest_of_unreadable_json_exits_2(cli, tmp_path: Path, store_url: str, text: str, problem: str):
    path = tmp_path / "bad.jsonl"
    path.write_text(event_line(event_id="e1") + "\n" + text + "\n", encoding="utf-8")
    one_line_error(cli("ingest", "--quiet", str(path)), f"{path}:2:", problem)
    _nothing_written(store_url)


def test_cli_supersede_refuses_a_value_with_a_key_given_twice(cli, store_url: str, tmp_path: Path):
    path = tmp_path / "seed.jsonl"
    path.write_text(
        event_line(event_id="e1")
        + "\n"
        + fact_line(fact_id="limit-1", predicate="refund.limit", value={"amount": "50", "currency": "USD"})
        + "\n",
        encoding="utf-8",
    )
    assert cli("ingest", "--quiet", str(path)).exit_code == 0
    value = '{"amount": "50", "amount": "5000", "currency": "USD"}'
    one_line_error(
        cli("supersede", "limit-1", "--tenant", T, "--subject", S, "--value", value, "--source", "e1"),
        "duplicate key 'amount'",
    )
    import lossgate

    with lossgate.open(store_url) as memory:
        assert [(f.fact_id, f.status) for f in memory.facts(T, S, statuses=None)] == [("limit-1", "active")]


# -- durations ---------------------------------------------------------------------------

DURATIONS_READ = {
    "P7D": "P7D",
    "PT1H30M": "PT1H30M",
    "-P1D": "-P1D",
    "-P1DT2H": "-P1DT2H",
    "PT0.25S": "PT0.25S",
    "PT1.123456S": "PT1.123456S",
    "P1W": "P7D",
    "P1W2D": "P9D",
    "PT36H": "P1DT12H",
    "PT90M": "PT1H30M",
    "PT0S": "PT0S",
    "-PT0S": "PT0S",
    "P0D": "PT0S",
}
DURATIONS_REFUSED = [
    "P-1D",
    "PT-1H",
    "+P1D",
    "P1.5D",
    "PT1.5H",
    "PT1.5M",
    "P1.0D",
    "PT0.0000001S",
    "PT.5S",
    "P1Y",
    "P1M",
    "P1Y2M",
    "P",
    "PT",
    "-P",
    "P1DT",
    "P1D\n",
    " P1D",
    "p1d",
    "P\u0663D",
    "P1,5D",
    "P1000000000D",
    "7 days",
    "",
]


@pytest.mark.parametrize("written, stored", DURATIONS_READ.items(), ids=DURATIONS_READ.keys())
def test_a_duration_is_stored_as_written_or_in_its_canonical_form(seeded, written, stored):
    fact = seeded.assert_fact(NewFact(**fact_fields(fact_id="wait", predicate="response.max_wait", value=written)))
    assert fact.encoded_value() == stored
    assert seeded.fact(T, S, "wait").encoded_value() == stored
    assert coerce_value("duration", stored) == coerce_value("duration", written)  # the same length of time


@pytest.mark.parametrize("written", DURATIONS_REFUSED, ids=[repr(d) for d in DURATIONS_REFUSED])
def test_a_duration_that_would_be_re_read_is_refused(seeded, written):
    before = state(seeded)
    with pytest.raises(ValueTypeError):
        seeded.assert_fact(NewFact(**fact_fields(fact_id="wait", predicate="response.max_wait", value=written)))
    with pytest.raises(IngestError, match="line 1:"):
        ingest_lines(seeded, [fact_line(fact_id="wait", predicate="response.max_wait", value=written)])
    assert state(seeded) == before


@given(st.timedeltas(min_value=timedelta(days=-99_999), max_value=timedelta(days=99_999)))
def test_every_stored_duration_reads_back_to_itself(td):
    stored = encode_value("duration", td)
    assert coerce_value("duration", stored) == td
    assert encode_value("duration", coerce_value("duration", stored)) == stored


# Durations of lossgate's shape, finer fractions and empty parts included (within timedelta's range).
SHAPE = re.compile(
    r"(-?)P(?:([0-9]{1,6})W)?(?:([0-9]{1,6})D)?"
    r"(T(?:([0-9]{1,6})H)?(?:([0-9]{1,6})M)?(?:([0-9]{1,6}(?:\.[0-9]{1,9})?)S)?)?"
)


@given(st.from_regex(SHAPE, fullmatch=True))
def test_a_duration_is_read_only_when_it_means_what_it_says(text):
    sign, weeks, days, clock, hours, minutes, seconds = SHAPE.fullmatch(text).groups()  # type: ignore[union-attr]
    means_one_thing = (
        any((weeks, days, hours, minutes, seconds)) and clock != "T" and len((seconds or "").partition(".")[2]) <= 6
    )
    try:
        td = coerce_value("duration", text)
    except ValueMismatch:
        assert not means_one_thing, text
        return
    assert means_one_thing, text
    micros = (
        (int(weeks or 0) * 7 + int(days or 0)) * 86_400 + int(hours or 0) * 3_600 + int(minutes or 0) * 60
    ) * 10**6 + int(Decimal(seconds or 0) * 10**6)
    assert td == timedelta(microseconds=-micros if sign else micros)
    stored = encode_value("duration", td)
    assert (
        coerce_value("duration", stored) == td and encode_value("duration", coerce_value("duration", stored)) == stored
    )
