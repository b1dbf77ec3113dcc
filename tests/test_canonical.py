"""Canonical JSON and content hashing (RFC 8785)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lossgate.errors import InvalidInput
from lossgate.model.canonical import canonical_json, content_hash, reference_canonical_json

SAFE = 2**53 - 1
scalars = (
    st.none() | st.booleans() | st.integers(-SAFE, SAFE) | st.text() | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=25,
)


@pytest.mark.slow
@settings(max_examples=400)
@given(json_values)
def test_fast_path_is_byte_identical_to_the_reference(value):
    try:
        expected = reference_canonical_json(value)
    except InvalidInput:
        with pytest.raises(InvalidInput):
            canonical_json(value)
        return
    assert canonical_json(value) == expected


@given(st.dictionaries(st.text(max_size=8), scalars, min_size=2, max_size=8), st.randoms())
def test_key_order_and_whitespace_never_change_the_hash(value, rnd):
    items = list(value.items())
    rnd.shuffle(items)
    reordered = dict(items)
    respaced = json.loads(json.dumps(reordered, indent=rnd.randint(0, 4), separators=(" ,  ", " : ")))
    assert content_hash(reordered) == content_hash(value) == content_hash(respaced)


@given(
    st.dictionaries(st.text(max_size=8), st.integers(-SAFE, SAFE - 1) | st.text(), min_size=1, max_size=6), st.data()
)
def test_any_value_change_changes_the_hash(value, data):
    key = data.draw(st.sampled_from(sorted(value)))
    changed = dict(value)
    old = value[key]
    changed[key] = old + 1 if isinstance(old, int) else old + "x"
    assert content_hash(changed) != content_hash(value)


def test_known_vectors():
    # RFC 8785 section 3.2.2-style checks: sorted keys, no whitespace, ES6 numbers, raw UTF-8.
    assert canonical_json({"b": 1, "a": [True, None, "é"]}) == '{"a":[true,null,"é"],"b":1}'.encode()
    assert canonical_json(1.0) == b"1" and canonical_json(1e21) == b"1e+21"
    assert canonical_json({"\U0001f600": 1, "\ufb01": 2}) == reference_canonical_json({"\U0001f600": 1, "\ufb01": 2})


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 2**60, {1: "non-string key"}])
def test_values_json_cannot_represent_are_rejected(bad):
    with pytest.raises(InvalidInput):
        canonical_json(bad)


def test_hash_is_stable_across_processes():
    value = {"tenant_id": "t", "text": "I am allergic to peanuts", "n": [1, 2, 3]}
    code = "import sys, json; from lossgate.model.canonical import content_hash; print(content_hash(json.loads(sys.argv[1])))"
    out = subprocess.run([sys.executable, "-c", code, json.dumps(value)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == content_hash(value)


# NUL and lone surrogates are refused in event text (records check it: lossgate.model.limits)
_plain_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
_no_nul = st.text(_plain_chars)


@pytest.mark.slow
@settings(max_examples=200)
@given(
    st.text(_plain_chars, max_size=200),
    _no_nul,  # an actor is 200 at most
    st.dictionaries(st.text(max_size=6), json_values, max_size=4),
)
def test_event_hash_equals_the_reference_hash(actor, text, payload):
    import hashlib

    from lossgate.model.records import NewEvent

    ev = NewEvent(tenant_id="t", subject_id="s", event_id="e", actor=actor, text=text, payload=payload)
    try:
        expected = "sha256:" + hashlib.sha256(reference_canonical_json(ev.hash_content())).hexdigest()
    except InvalidInput:
        with pytest.raises(InvalidInput):
            ev.content_hash()
        return
    assert ev.content_hash() == expected


@pytest.mark.parametrize(
    "number", [0.15, 1.0, -1.0, 0.0, -0.0, 1e-6, 1e-7, 2.5e-5, 1e20, 1e21, 5e-324, 1.7976931348623157e308, 0.1 + 0.2]
)
def test_a_float_is_written_as_the_reference_writes_it_wherever_it_stands(number):
    for value in (number, [number], {"a": [1, "x", {"b": number}]}, [number, number, -number]):
        assert canonical_json(value) == reference_canonical_json(value)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_float_json_cannot_hold_is_rejected_inside_a_value(bad):
    with pytest.raises(InvalidInput):
        canonical_json({"ratio": [0.15, bad]})


def test_a_value_with_a_float_both_write_alike_takes_the_fast_path(monkeypatch):
    # a part's fingerprint: a digest ratio beside the trust of every event of the period
    value = {"digest": [200, 0.15], "trust": [[f"e{i}", "user"] for i in range(500)]}
    expected = reference_canonical_json(value)
    import lossgate.model.canonical as canonical

    def refused(value):
        raise AssertionError("the reference implementation was asked for a value orjson writes alike")

    canonical_json(0.15)  # the float compared with the reference once, on its own
    monkeypatch.setattr(canonical, "reference_canonical_json", refused)
    assert canonical_json(value) == expected
