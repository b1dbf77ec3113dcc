"""The retired values a summary line is checked against are looked up by the line's words
and atoms: the markers due are exactly those a check of every retired value finds; and the
tokens of many values, read in one extraction, are those each value's own gives."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from lossgate.gate.sources import token_of, value_atoms, value_forms
from lossgate.gate.superseded import Retired, _Candidates, _chain_end, _forget_tokens, _tokens_all

_WORD = st.sampled_from(["utc-05:00", "gate", "b12", "(x)", "-", "café", "west_wing", "Ünter", "$5", "5", "a.b"])
_PHRASE = st.lists(_WORD, min_size=1, max_size=3).map(" ".join)
_TOKEN = st.tuples(st.sampled_from(["money", "number", "date"]), st.sampled_from(["5", "12", "2026-03-04", "usd 5"]))


@st.composite
def _retired(draw):
    values = []
    for i in range(draw(st.integers(0, 12))):
        if draw(st.booleans()):
            values.append(
                Retired(
                    fact_id=f"f{i}",
                    predicate="p",
                    phrase=draw(_PHRASE).casefold(),
                    tokens=frozenset(),
                    marker=f"[m{i}]",
                )
            )
        else:
            values.append(
                Retired(
                    fact_id=f"f{i}",
                    predicate="p",
                    phrase=None,
                    tokens=frozenset(draw(st.lists(_TOKEN, min_size=1, max_size=2))),
                    marker=f"[m{i}]",
                )
            )
    return tuple(values)


@settings(max_examples=300)
@given(
    retired=_retired(),
    words=st.lists(st.one_of(_WORD, st.text(max_size=6)), max_size=8),
    glue=st.sampled_from([" ", "", "  ", "\t", ", "]),
    line_tokens=st.lists(_TOKEN, max_size=3),
)
def test_the_lookup_finds_every_retired_value_a_line_states(retired, words, glue, line_tokens):
    line = glue.join(words)
    tokens = frozenset(line_tokens)
    every = {r.marker for r in retired if r.stated_in(line, tokens)}
    looked_up = {r.marker for r in _Candidates(retired).of(line, tokens) if r.stated_in(line, tokens)}
    assert looked_up == every


_VALUE = st.one_of(
    st.tuples(
        st.just("money"),
        st.builds(
            lambda a, c: {"amount": f"{a}.00", "currency": c},
            st.integers(0, 10**6),
            st.sampled_from(["USD", "EUR", "JPY"]),
        ),
    ),
    st.tuples(st.just("int"), st.integers(-(10**6), 10**6)),
    st.tuples(st.just("decimal"), st.decimals(-1000, 1000, places=2).map(str)),
    st.tuples(st.just("date"), st.dates().map(lambda d: d.isoformat())),
    st.tuples(st.just("duration"), st.sampled_from(["PT2H", "P3D", "PT45M", "P1W"])),
    st.tuples(st.just("string"), st.sampled_from(["INV-5 ref", "call at 5pm", "", "A-12/3", "no digits"])),
)


@settings(max_examples=100)
@given(values=st.lists(_VALUE, max_size=20))
def test_the_tokens_of_many_values_read_at_once_are_those_read_one_by_one(values):
    _forget_tokens()
    together = _tokens_all(values)
    one_by_one = [
        frozenset(token_of(a) for a in value_atoms(value_forms(t, v)) if a.kind not in ("negation", "party"))
        for t, v in values
    ]
    assert together == one_by_one
    assert _tokens_all(values) == one_by_one  # and again, remembered


@settings(max_examples=200)
@given(links=st.lists(st.one_of(st.none(), st.integers(0, 14)), min_size=1, max_size=15), order=st.randoms())
def test_a_chain_end_remembered_is_the_end_walked_from_each_fact(links, order):
    facts = {
        f"f{i}": SimpleNamespace(fact_id=f"f{i}", superseded_by=None if to is None else f"f{to}")
        for i, to in enumerate(links)
    }
    del facts[f"f{len(links) - 1}"]  # one id the chains name is not there (another subject's, say)

    def walked(fact):
        current, seen = fact, {fact.fact_id}
        while current.superseded_by and current.superseded_by in facts and current.superseded_by not in seen:
            current = facts[current.superseded_by]
            seen.add(current.fact_id)
        return current

    ends: dict = {}
    ids = list(facts)
    order.shuffle(ids)
    for fact_id in ids:
        assert _chain_end(facts[fact_id], facts, ends) is walked(facts[fact_id])
