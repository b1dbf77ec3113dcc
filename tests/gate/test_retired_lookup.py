"""The retired values a summary line is checked against are looked up by the line's words
and atoms: the markers due are exactly those a check of every retired value finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lossgate.gate.superseded import Retired, _Candidates

_WORD = st.sampled_from(["utc-05:00", "gate", "b12", "(x)", "-", "café", "west_wing", "Ünter", "$5", "5", "a.b"])
_PHRASE = st.lists(_WORD, min_size=1, max_size=3).map(" ".join)
_TOKEN = st.tuples(st.sampled_from(["money", "number", "date"]), st.sampled_from(["5", "12", "2026-03-04", "usd 5"]))


@st.composite
def _retired(draw):
    values = []
    for i in range(draw(st.integers(0, 12))):
        if draw(st.booleans()):
            values.append(Retired(fact_id=f"f{i}", predicate="p", phrase=draw(_PHRASE).casefold(), tokens=frozenset(),
                                  marker=f"[m{i}]"))
        else:
            values.append(Retired(fact_id=f"f{i}", predicate="p", phrase=None,
                                  tokens=frozenset(draw(st.lists(_TOKEN, min_size=1, max_size=2))), marker=f"[m{i}]"))
    return tuple(values)


@settings(max_examples=300, deadline=None)
@given(retired=_retired(), words=st.lists(st.one_of(_WORD, st.text(max_size=6)), max_size=8),
       glue=st.sampled_from([" ", "", "  ", "\t", ", "]), line_tokens=st.lists(_TOKEN, max_size=3))
def test_the_lookup_finds_every_retired_value_a_line_states(retired, words, glue, line_tokens):
    line = glue.join(words)
    tokens = frozenset(line_tokens)
    every = {r.marker for r in retired if r.stated_in(line, tokens)}
    looked_up = {r.marker for r in _Candidates(retired).of(line, tokens) if r.stated_in(line, tokens)}
    assert looked_up == every

