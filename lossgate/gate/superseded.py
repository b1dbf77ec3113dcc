"""A superseded value is never shown as current: lossgate marks every line that states one.

When ``timezone: UTC-05:00`` is superseded by ``UTC+01:00``, the conversation still holds
"As I said, schedule calls in UTC-05:00 please.", and a summary that quotes it would say
the old value as if it held. No compressor is trusted to notice: after every compressor
(and when a hierarchy's root is put together) lossgate appends to each line of the summary
that states the value of a superseded or revoked fact of the subject a marker with what
holds now::

    - user: As I said, schedule calls in UTC-05:00 please. [superseded 2026-03-04: timezone is now UTC+01:00]
    - user: Use the old card. [revoked 2026-03-05: payment.card has no current value]

A line that states one side of an open conflict carries the other side the same way
(``[in conflict 2026-03-14: timezone is also UTC+02:00]``): no line settles a conflict.
The gate then refuses a summary with a line that states such a value without its marker
(``superseded_unmarked``), or with a marker that is not the one lossgate would write for
this ledger (``marker_forged``: a model cannot hide a value behind a marker of its own).
The prose diff reads lines without their markers (:func:`strip_markers`): a marker is
lossgate's, like a fact line.

**What states a value.** A string, enum or entity id: the value's own words, as a phrase
(case and spacing aside). A number, amount, date, time or duration: its atoms (the prose
diff's reading: "$50", "USD 50" and "50.00 USD" state the same amount). A bool states no
value in words (the fence reads those). A value that an active fact of the subject also
states is no superseded value. Header, fact, conflict and title lines are lossgate's own
and are never marked.
"""

from __future__ import annotations

import functools
import re
import threading
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import accumulate

import orjson
from pydantic import BaseModel

from lossgate.gate.atoms import extract_atoms
from lossgate.gate.outcome import Violation
from lossgate.gate.sources import _JOIN, token_of, value_forms
from lossgate.model.records import Conflict, Fact
from lossgate.model.wording import (
    CONVERSATION_TITLE,
    NARRATIVE_TITLE,
    PERIOD_LINE,
    PERIODS_TITLE,
    one_line,
    value_text,
)
from lossgate.runtime.caches import holds_text

__all__ = ["Retired", "retired_values", "value_terms", "text_terms", "mark", "strip_markers", "check_markers"]

_PHRASE_TYPES = ("string", "enum", "entity_id")
_TITLES = frozenset({CONVERSATION_TITLE, NARRATIVE_TITLE, PERIODS_TITLE})
# One or more markers at the end of a line, as :func:`mark` writes them.
_MARKERS = re.compile(r"(?: \[(?:superseded|revoked|in conflict) [0-9]{4}-[0-9]{2}-[0-9]{2}: [^\[\]]*\])+$")
_ONE_MARKER = re.compile(r" \[(?:superseded|revoked|in conflict) [0-9]{4}-[0-9]{2}-[0-9]{2}: [^\[\]]*\]")


@dataclass(frozen=True)
class Retired:
    """A value of the subject's that no longer holds, and the marker a line stating it carries."""

    fact_id: str
    predicate: str
    phrase: str | None  # the casefolded words of a string value, matched as a phrase
    tokens: frozenset[tuple[str, str]]  # the atoms of any other value, as the prose diff keys them
    marker: str
    # A side of an open conflict: the other side's value; a line that states both settles nothing.
    other: Retired | None = None

    def stated_in(self, line: str, tokens: frozenset[tuple[str, str]]) -> bool:
        said = _has_phrase(line, self.phrase) if self.phrase is not None else bool(self.tokens & tokens)
        return said and not (self.other is not None and self.other.stated_in(line, tokens))


def _has_phrase(line: str, phrase: str) -> bool:
    text = " ".join(line.casefold().split())
    start = text.find(phrase)
    while start >= 0:
        end = start + len(phrase)
        if (start == 0 or not text[start - 1].isalnum()) and (end == len(text) or not text[end].isalnum()):
            return True
        start = text.find(phrase, start + 1)
    return False


# The value tokens of each value met, by (type, canonical JSON): a long history retires many
# values, and every job reads them all again. A value is content: emptied with the caches of
# text (lossgate.runtime.caches).
_TOKENS: dict[tuple[str, bytes], frozenset[tuple[str, str]]] = {}
_TOKENS_LOCK = threading.Lock()
_TOKENS_SIZE = 16_384


@holds_text
def _forget_tokens() -> None:
    with _TOKENS_LOCK:
        _TOKENS.clear()


def _tokens(value_type: str, value: object) -> frozenset[tuple[str, str]]:
    return _tokens_all([(value_type, value)])[0]


def _plain(value: object) -> object:
    """A typed value's JSON form, for a key (a ``Money``, a ``Decimal``)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(type(value).__name__)


def _tokens_all(values: Sequence[tuple[str, object]]) -> list[frozenset[tuple[str, str]]]:
    """The value tokens of each ``(type, value)``: those not met before read in one
    extraction of all their rendered forms, joined by the clause break no atom spans (one
    extraction per value costs several times the extraction itself)."""
    keys: list[tuple[str, bytes] | None] = []
    for value_type, value in values:
        try:
            keys.append((value_type, orjson.dumps(value, default=_plain, option=orjson.OPT_SORT_KEYS)))
        except TypeError:  # no JSON form: read every time
            keys.append(None)
    with _TOKENS_LOCK:
        out: list[frozenset[tuple[str, str]] | None] = [None if k is None else _TOKENS.get(k) for k in keys]
    missing = [i for i, tokens in enumerate(out) if tokens is None]
    pieces: list[str] = []
    owners: list[int] = []
    for i in missing:
        for form in value_forms(*values[i]):
            if form:
                pieces.append(form)
                owners.append(i)
    found: dict[int, set[tuple[str, str]]] = {i: set() for i in missing}
    if pieces:
        starts = list(accumulate((len(p) + len(_JOIN) for p in pieces[:-1]), initial=0))
        for atom in extract_atoms(_JOIN.join(pieces), affirmations=False):
            if atom.kind not in ("negation", "party"):
                found[owners[bisect_right(starts, atom.start) - 1]].add(token_of(atom))
    with _TOKENS_LOCK:
        for i in missing:
            out[i] = tokens = frozenset(found[i])
            key = keys[i]
            if key is not None:
                if len(_TOKENS) >= _TOKENS_SIZE:
                    _TOKENS.clear()
                _TOKENS[key] = tokens
    return [t if t is not None else frozenset() for t in out]


def retired_values(facts: Iterable[Fact], conflicts: Iterable[Conflict] = ()) -> tuple[Retired, ...]:
    """What :func:`mark` marks, from the subject's facts (every status): the values of its
    superseded and revoked facts that no active fact states, each with the marker that says
    what holds now (the active fact at the end of its supersession chain, if any); and each
    side of an open conflict, with the other side (one side is never settled by a line)."""
    by_id = {f.fact_id: f for f in facts}
    sides = _conflict_sides(by_id, conflicts)
    active = [f for f in by_id.values() if f.status == "active" and f.value is not None]
    valued = [f for f in by_id.values() if f.value is not None and f.value_type != "bool"]
    tokens_of = dict(
        zip((f.fact_id for f in valued), _tokens_all([(f.value_type, f.value) for f in valued]), strict=False)
    )
    active_tokens = (
        frozenset().union(*(tokens_of.get(f.fact_id, frozenset()) for f in active)) if active else frozenset()
    )
    active_phrases = {" ".join(value_text(f).casefold().split()) for f in active if f.value_type in _PHRASE_TYPES}
    ends: dict[str, Fact] = {}
    out = []
    for f in sorted(by_id.values(), key=lambda f: f.seq):
        if f.status not in ("superseded", "revoked") or f.value is None or f.value_type == "bool":
            continue
        phrase = " ".join(value_text(f).casefold().split()) if f.value_type in _PHRASE_TYPES else None
        tokens = frozenset() if phrase is not None else tokens_of[f.fact_id] - active_tokens
        if (phrase is not None and (not phrase or phrase in active_phrases)) or (phrase is None and not tokens):
            continue  # nothing to say, or a current fact says the same
        out.append(
            Retired(
                fact_id=f.fact_id, predicate=f.predicate, phrase=phrase, tokens=tokens, marker=_marker(f, by_id, ends)
            )
        )
    return tuple(out) + sides


def value_terms(fact: Fact) -> tuple[str, ...]:
    """What a line must hold to state ``fact``'s value, were it retired: the first word of a
    phrase (``@word``; ``@`` alone for a phrase of no word, which any line may state), or each
    of the value's atoms (``kind=key``), as :class:`_Candidates` looks them up. Nothing for a
    value no line states in words (a bool, none). The ledger keeps these with a retired fact
    (:meth:`~lossgate.store.protocol.LedgerWriteTx.update_fact`) so that a job looks up the
    retired values its lines may state by :func:`text_terms` instead of reading them all."""
    if fact.value is None or fact.value_type == "bool":
        return ()
    if fact.value_type in _PHRASE_TYPES:
        phrase = " ".join(value_text(fact).casefold().split())
        if not phrase:
            return ()
        first = _WORDS.search(phrase)
        return ("@" + (first.group() if first else ""),)
    return tuple(sorted(f"{kind}={key}" for kind, key in _tokens(fact.value_type, fact.value)))


def text_terms(
    texts: Iterable[str],
    *,
    words: Iterable[str] = (),
    tokens: Iterable[tuple[str, str]] = (),
) -> frozenset[str]:
    """The terms (:func:`value_terms`) that lines hold: the words and value atoms of the lines
    of ``texts``, read as :func:`mark` reads a summary's lines (one extraction of them
    joined); the words of ``words``, whose atoms come as ``tokens`` (read already); and
    ``@``, the term of a phrase any line may state."""
    text = "\n".join(texts)
    found = {"@" + w for w in _WORDS.findall(text.casefold())}
    for said in words:
        found.update("@" + w for w in _WORDS.findall(said.casefold()))
    atoms = {token_of(a) for a in extract_atoms(text, affirmations=False)} if text else set()
    return frozenset(found | {"=".join(t) for t in (*atoms, *tokens)} | {"@"})


def _conflict_sides(by_id: dict[str, Fact], conflicts: Iterable[Conflict]) -> tuple[Retired, ...]:
    """``[in conflict 2026-03-14: timezone is also UTC+02:00]`` for each side of each open
    conflict whose two sides are active and differ in what a line can state."""
    out = []
    for c in conflicts:
        pair = [by_id.get(i) for i in c.fact_ids]
        if c.status != "unresolved" or any(f is None or f.status != "active" or f.value is None for f in pair):
            continue
        for side, other in ((pair[0], pair[1]), (pair[1], pair[0])):
            assert side is not None and other is not None
            if side.value_type == "bool":
                continue
            phrase = " ".join(value_text(side).casefold().split()) if side.value_type in _PHRASE_TYPES else None
            tokens = (
                frozenset()
                if phrase is not None
                else _tokens(side.value_type, side.value) - _tokens(other.value_type, other.value)
            )
            if (phrase is not None and not phrase) or (phrase is None and not tokens):
                continue
            also = f"{'NOT ' if other.polarity == 'negative' else ''}{one_line(value_text(other))}"
            other_phrase = " ".join(value_text(other).casefold().split()) if other.value_type in _PHRASE_TYPES else None
            counterpart = Retired(
                fact_id=c.conflict_id,
                predicate=other.predicate,
                phrase=other_phrase,
                tokens=frozenset() if other_phrase is not None else _tokens(other.value_type, other.value),
                marker="",
            )
            out.append(
                Retired(
                    fact_id=c.conflict_id,
                    predicate=side.predicate,
                    phrase=phrase,
                    tokens=tokens,
                    marker=f"[in conflict {c.detected_at.date().isoformat()}: {side.predicate} is also {also}]",
                    other=counterpart,
                )
            )
    return tuple(out)


def _chain_end(fact: Fact, by_id: dict[str, Fact], ends: dict[str, Fact]) -> Fact:
    """The fact at the end of ``fact``'s supersession chain (within ``by_id``). ``ends``
    remembers the end of every fact walked through: a history of one value superseded a
    thousand times walks its chain once, not once for each of its facts."""
    path, current, seen = [], fact, {fact.fact_id}
    while current.fact_id not in ends and current.superseded_by and current.superseded_by in by_id:
        if current.superseded_by in seen:  # a cycle (no ledger writes one): walked as it is, not remembered
            return current
        path.append(current.fact_id)
        current = by_id[current.superseded_by]
        seen.add(current.fact_id)
    end = ends.get(current.fact_id, current)
    for fact_id in path:
        ends[fact_id] = end
    return end


def _marker(fact: Fact, by_id: dict[str, Fact], ends: dict[str, Fact] | None = None) -> str:
    """``[superseded 2026-03-04: timezone is now UTC+01:00]`` or ``[revoked ...: ... has no
    current value]``: the date it stopped holding and what holds now."""
    current = _chain_end(fact, by_id, {} if ends is None else ends)
    nxt = by_id.get(fact.superseded_by or "")
    if fact.status == "superseded" and nxt is not None:
        when = (nxt.valid_from or nxt.recorded_at).date().isoformat()
        now = (
            f"{fact.predicate} is now {'NOT ' if current.polarity == 'negative' else ''}{one_line(value_text(current))}"
            if current.status == "active" and current.value is not None
            else f"{fact.predicate} has no current value"
        )
        return f"[superseded {when}: {now}]"
    when = fact.recorded_at.date().isoformat()
    return f"[revoked {when}: {fact.predicate} has no current value]"


def _lossgates_own(line: str, own: frozenset[str]) -> bool:
    return not line.strip() or line in own or line in _TITLES or PERIOD_LINE.fullmatch(line) is not None


def _tokens_by_line(lines: list[str], retired: tuple[Retired, ...]) -> list[frozenset[tuple[str, str]]]:
    """The value tokens each of ``lines`` states, read in one pass over them all (only when a
    retired value is matched by its atoms)."""
    if not any(r.phrase is None for r in retired):
        return [frozenset()] * len(lines)
    return list(_line_tokens("\n".join(lines)))


@functools.lru_cache(maxsize=32)
def _line_tokens(text: str) -> tuple[frozenset[tuple[str, str]], ...]:
    # A job marks and checks the same summary several times (after its compressor, in its
    # gate, as a root): its atoms are read once. A summary is content: emptied with the
    # other caches of text.
    lines = text.split("\n")
    starts, at = [], 0
    for line in lines:
        starts.append(at)
        at += len(line) + 1
    found: list[set[tuple[str, str]]] = [set() for _ in lines]
    i = 0
    for a in extract_atoms(text, affirmations=False):
        while i + 1 < len(starts) and starts[i + 1] <= a.start:
            i += 1
        found[i].add(token_of(a))
    return tuple(frozenset(t) for t in found)


holds_text(_line_tokens.cache_clear)


class _Candidates:
    """The retired values a line may state, looked up by what it holds: a value matched by
    its atoms under each of its tokens, one matched as a phrase under the phrase's first
    word (a line that states the phrase holds that word, whole). A summary's lines are
    checked against the few values that share a word or an atom with them, not against
    every value a long history retired."""

    def __init__(self, retired: tuple[Retired, ...]) -> None:
        self.by_token: dict[tuple[str, str], list[Retired]] = {}
        self.by_word: dict[str, list[Retired]] = {}
        self.always: list[Retired] = []  # a phrase with no word (punctuation alone)
        for r in retired:
            if r.phrase is None:
                for token in r.tokens:
                    self.by_token.setdefault(token, []).append(r)
                continue
            first = _WORDS.search(r.phrase)
            if first is None:
                self.always.append(r)
            else:
                self.by_word.setdefault(first.group(), []).append(r)

    def of(self, line: str, tokens: frozenset[tuple[str, str]]) -> list[Retired]:
        found = list(self.always)
        for token in tokens:
            found += self.by_token.get(token, ())
        if self.by_word:
            for word in set(_WORDS.findall(" ".join(line.casefold().split()))):
                found += self.by_word.get(word, ())
        return found


_WORDS = re.compile(r"[^\W_]+")  # runs of str.isalnum characters: what _has_phrase's boundaries cut at


def _read(summary: str, retired: tuple[Retired, ...], own: frozenset[str]) -> list[tuple[str, str, set[str], set[str]]]:
    """Each line of ``summary``: as written, without its markers, the markers it carries, and
    the markers it should carry (none for lossgate's own lines)."""
    lines = summary.split("\n")
    bare = [line if _lossgates_own(line, own) else _MARKERS.sub("", line) for line in lines]
    tokens = _tokens_by_line(bare, retired)
    candidates = _Candidates(retired)
    out: list[tuple[str, str, set[str], set[str]]] = []
    for line, plain, said in zip(lines, bare, tokens, strict=False):
        if _lossgates_own(line, own):
            out.append((line, line, set(), set()))
            continue
        tail = _MARKERS.search(line)
        carried = {m.strip() for m in _ONE_MARKER.findall(tail.group())} if tail else set()
        out.append((line, plain, carried, {r.marker for r in candidates.of(plain, said) if r.stated_in(plain, said)}))
    return out


def mark(summary: str, retired: tuple[Retired, ...], own: frozenset[str] = frozenset()) -> str:
    """``summary`` with each line that states a retired value ending in its marker (any
    marker a line carried before is written again from ``retired``: what holds now may have
    moved). ``own``: lossgate's structured lines (header, fact and conflict lines), never marked."""
    if not retired and "[" not in summary:
        return summary
    order = {r.marker: i for i, r in enumerate(retired)}
    return "\n".join(
        plain + "".join(" " + m for m in sorted(due, key=order.__getitem__))
        for _, plain, _, due in _read(summary, retired, own)
    )


def has_marker(line: str) -> bool:
    """Whether ``line`` ends in one of lossgate's markers (whether it is the one :func:`mark`
    writes there is :func:`check_markers`' business)."""
    return _MARKERS.search(line) is not None


def strip_markers(summary: str) -> str:
    """``summary`` with the markers at the ends of its lines removed (what the prose diff reads)."""
    if "[" not in summary:
        return summary
    return "\n".join(_MARKERS.sub("", line) for line in summary.split("\n"))


def check_markers(summary: str, retired: tuple[Retired, ...], own: frozenset[str] = frozenset()) -> list[Violation]:
    """``superseded_unmarked`` for each line that states a retired value without its marker,
    ``marker_forged`` for each marker that is not the one :func:`mark` writes (both critical)."""
    if not retired and "[" not in summary:
        return []
    by_marker = {r.marker: r for r in retired}
    out: list[Violation] = []
    for line, plain, carried, due in _read(summary, retired, own):
        for forged in sorted(carried - due):
            out.append(
                Violation(
                    code="marker_forged",
                    subject="summary",
                    severity="critical",
                    detail=f"{forged!r} is no marker lossgate writes on this line: {line[:200]!r}",
                )
            )
        for marker in sorted(due - carried):
            r = by_marker[marker]
            out.append(
                Violation(
                    code="superseded_unmarked",
                    subject=r.fact_id,
                    severity="critical",
                    detail=f"states {r.predicate}'s superseded value without {marker!r}: {plain[:200]!r}",
                )
            )
    return out
