"""Fusing a word ranking with a vector ranking: a confident vector hit comes in early."""

from __future__ import annotations

import pytest

from lossgate.semantic.ranking import fuse, hybrid

WORDS = [f"w{i}" for i in range(1, 21)]


def test_vector_hits_below_confidence_only_reorder_and_follow_the_word_hits():
    vectors = [("w5", 0.40), ("v1", 0.44), ("w1", 0.30)]
    got = hybrid(WORDS, vectors, weight=0.5, confident=0.45, lead=2)
    assert got == fuse(WORDS, ["w5", "v1", "w1"], weights=(1.0, 0.5))
    assert got[:2] == ["w1", "w5"]  # both rankings agree: they rise
    assert got.index("v1") == len(WORDS)  # no word matched it: after every word hit


def test_a_confident_vector_hit_no_word_matched_enters_at_twice_its_vector_rank():
    vectors = [("v1", 0.71), ("w3", 0.60), ("v2", 0.52), ("v3", 0.30)]
    got = hybrid(WORDS, vectors, weight=0.5, confident=0.45, lead=2)
    assert got.index("v1") == 2 and got.index("v2") == 6
    assert got.index("v3") == len(got) - 1  # not confident: last
    assert sorted(got) == sorted({*WORDS, "v1", "v2", "v3"})  # nothing lost, nothing twice


def test_a_confident_hit_past_the_end_is_appended_and_no_vectors_change_nothing():
    assert hybrid(["w1"], [("x", 0.2), ("y", 0.2), ("v", 0.9)], confident=0.45, lead=2) == ["w1", "x", "y", "v"]
    assert hybrid(WORDS, []) == WORDS
    assert hybrid([], [("v1", 0.9), ("v2", 0.1)]) == ["v1", "v2"]


def test_feedback_moves_the_query_toward_the_first_hits_that_have_vectors():
    import numpy as np

    from lossgate.semantic.ranking import VectorSet, feedback

    unit = np.eye(4, dtype="<f4")
    vectors = VectorSet([(name, unit[i].tobytes()) for i, name in enumerate(["a", "b", "c", "d"])])
    query = unit[0]
    moved = feedback(vectors, query, ["fresh", "b", "c", "d"], hits=2, weight=0.5)
    assert moved is not None
    assert float(np.linalg.norm(moved)) == pytest.approx(1.0)
    # toward b and c alike (the first two with a vector), not d
    assert moved[1] == pytest.approx(moved[2]) and moved[1] > 0 and moved[3] == 0
    assert moved[0] == pytest.approx(1 / np.sqrt(1 + 2 * 0.25**2))
    assert feedback(vectors, query, ["fresh", "unknown"]) is None
    assert feedback(vectors, query, ["b"], hits=0) is None
