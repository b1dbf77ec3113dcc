"""Ranking bounded by the answer, not by how common a word is.

A full-text index ranks a query's matches (FTS5's bm25) by reading every match of every word: a word that is in every
event (``inv`` of each invoice reference, ``refund`` in a refunds desk's history) makes a
search cost the whole history. So a search first reads, for each term, the positions of
the subject's newest matches, at most :data:`TERM_CAP` and one more (a bounded read: the
index's order on SQLite; a walk of the newest rows, or the index for a rare term, on
PostgreSQL). Then

* when no term has more matches than that, SQLite ranks them in FTS5 (it reads at most
  :data:`TERM_CAP` matches a term);
* otherwise the matches read are ranked here (:func:`bounded_order`): an event scores the
  inverse document frequency of every term it was read for, BM25's, so an event holding a
  rare term outranks one holding only common ones, and holding more of them ranks higher;
  ties go to the newest. A rare term's matches are all read; a common term counts only in
  its newest :data:`TERM_CAP` matches (its document frequency estimated from how far back
  they reach).

PostgreSQL's ``ts_rank`` knows no document frequency, so PostgreSQL ranks every search here,
by BM25 as FTS5's ``bm25()`` computes it (:func:`bm25_order`): from each term's matches read
as above, with the term's frequency in each and each event's length, the subject's event
count for ``N`` and the mean length of the events read for the average. Both engines then
rank a query's events alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "MAX_SEARCH_TERMS",
    "TERM_CAP",
    "bm25_order",
    "bounded_order",
    "cap_for",
    "idf",
    "is_bounded",
    "term_weight",
]

# The matches of one term a search reads at most. A history under this size is ranked by
# the store alone, whatever the words.
TERM_CAP = 1000
# The distinct terms of a query a search reads, in the order it names them: a question has
# a handful; a 4,096-character query may have eight hundred, each a read of the index.
MAX_SEARCH_TERMS = 64
# A query of more than this many terms shares TERM_CAP times this among them.
_SHARED_BY = 8


def cap_for(terms: int, cap: int = TERM_CAP) -> int:
    """The matches a search reads of each of ``terms`` terms: ``cap``, or for a long query
    a share of ``_SHARED_BY`` times ``cap`` (at least a sixteenth of ``cap``)."""
    return cap if terms <= _SHARED_BY else max(cap // 16, 1, cap * _SHARED_BY // terms)


def is_bounded(matches: Sequence[Sequence[int]], cap: int = TERM_CAP) -> bool:
    """Whether some term has more than ``cap`` matches (read: ``cap`` and one more), which
    the store's own ranking would read all of."""
    return any(len(m) > cap for m in matches)


# BM25's parameters, FTS5's defaults.
K1 = 1.2
B = 0.75


def idf(total: float, df: float) -> float:
    """BM25's inverse document frequency as FTS5's ``bm25()`` computes it: ``log((N - df +
    0.5) / (df + 0.5))``, or 1e-6 when that is not positive."""
    ratio = (total - df + 0.5) / (df + 0.5)
    return math.log(ratio) if ratio > 1 else 1e-6


def term_weight(tf: float, length: float, mean: float) -> float:
    """A term's BM25 weight in one document (column) before its idf: its frequency ``tf``
    against the document's ``length`` and the ``mean`` length (k1 1.2, b 0.75)."""
    return tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / max(mean, 1e-9)))


def _df(read: Sequence[int], more: bool, newest: int, total: int) -> float:
    """A term's document frequency from the positions of its newest matches read: their
    number, or when there were more (``more``), their share of the newest positions,
    extrapolated to the subject."""
    if not more:
        return len(read)
    reach = max(1, newest - min(read) + 1)
    return min(total, len(read) * total / reach)


def bm25_order(stats: Sequence[Sequence[tuple[int, float, int]]], newest: int, cap: int = TERM_CAP) -> list[int]:
    """The positions of the events matched, best first by BM25 (FTS5's: ``idf = log((N - df +
    0.5) / (df + 0.5))``, at least 1e-6; k1 1.2, b 0.75), ties to the newest. ``stats``: one
    list per term, newest first, of ``(seq, tf, length)`` for each match read (at most ``cap``
    and one more); ``newest``: the subject's highest position (about its event count)."""
    total = max(newest, 1)
    read = [list(found[:cap]) for found in stats]
    lengths = {seq: max(length, 1) for found in read for seq, _, length in found}
    if not lengths:
        return []
    mean = sum(lengths.values()) / len(lengths)
    score: dict[int, float] = {}
    for found, rows in zip(stats, read, strict=False):
        if not rows:
            continue
        df = _df([seq for seq, _, _ in rows], len(found) > cap, newest, total)
        weight = idf(total, df)
        for seq, tf, _ in rows:
            score[seq] = score.get(seq, 0.0) + weight * term_weight(max(tf, 1), lengths[seq], mean)
    return sorted(score, key=lambda seq: (-score[seq], -seq))


def bounded_order(matches: Sequence[Sequence[int]], newest: int, cap: int = TERM_CAP) -> list[int]:
    """The positions (seqs) of ``matches`` (one list per term, newest first, as read: at
    most ``cap`` and one more) best first; ``newest`` is the subject's highest position
    (about its event count)."""
    total = max(newest, 1)
    score: dict[int, float] = {}
    for found in matches:
        read = list(found[:cap])
        if not read:
            continue
        df = _df(read, len(found) > cap, newest, total)  # a common term's extrapolated
        idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
        for seq in set(read):
            score[seq] = score.get(seq, 0.0) + idf
    return sorted(score, key=lambda seq: (-score[seq], -seq))
