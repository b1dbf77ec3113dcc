"""Negated statements, and the affirmative statements used to spot flips.

The text (with every span already claimed by another atom blanked out) is cut
into clauses at punctuation and at claimed spans. In each clause:

* If it holds a negation cue (not, n't, never, no, without, cannot, nobody,
  nothing, none, neither, nor, nowhere), the part of the clause around the
  cue, up to the next clause-joining word ("and", "but", "because" ...), is
  a negated statement. Its key is ``not|<head>|<rest...>``: the content
  stems after the cue, up to four, the first one (usually the verb) as head
  and the rest sorted, so word order and determiners do not matter: "Do not
  contact the customer" and "Never contact the customer" both give
  ``not|contact|customer``. In a passive ("The customer must not be
  contacted") the subject's stems before the cue are added, so it gives the
  same key too. Entities are separate atoms and never part of the key: "not
  authorized by their CTO Marcus Chen" is ``not|authoriz|cto``.
* Otherwise the clause is an affirmation, key ``is|<its words>`` (lower
  case, as written). Affirmations are not facts; the diff only uses them to
  tell "negation dropped" from "negation flipped", and stems their words
  when, and only when, it needs them (``content_stems``). Keeping them raw
  keeps extraction fast: most clauses are affirmations.

Double negation is not cancelled: "not unauthorized" is
``not|unauthoriz``, because "not unhappy" does not mean "happy". A cue
followed by a comparison ("no later than", "no more than") is a bound, not a
negation, and is skipped; so are "not only" and "whether or not".
"""

from __future__ import annotations

import re

from .atom import AFFIRMED, NEGATED, AtomKind
from .tables import BE_FORMS, CLAUSE_BREAKS, NEGATION_CUES, STOPWORDS

_Found = tuple[AtomKind, str, int, int]

MAX_NEGATED = 4
_COMPARATIVES = frozenset("later earlier more less fewer longer sooner greater".split())
_NT = ("n't", "n’t")

#: A clause: a run of text between sentence punctuation or claimed (NUL)
#: spans. Commas, brackets and quotes do not end it here; a clause with a
#: negation cue is split further at them (``_with_cue``).
_CLAUSE = re.compile(r"[^.;:!?\n\x00]++")
#: A negation cue anywhere in the text, found in one pass so that clauses
#: without one (most) never need to be looked at word by word.
_CUE = re.compile(
    r"[nNwWcC](?:(?<![\w][nNwWcC])(?i:(?<=n)(?:o(?:t|ne|body|thing|where|r)?|ever|either)"
    r"|(?<=w)ithout|(?<=c)annot)|(?<=[nN])['’][tT])(?![\w])"
)
#: Words and inner clause marks of a clause with a cue.
_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*|[,()\[\]{}\"“”]")
_MARKS = frozenset(',()[]{}"“”')
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
# Characters trimmed from the ends of an affirmation's span.
_EDGES = " \t\r\f\v-–—*_/\\&+=<>|`~#%^'’@$,()[]{}\"“”"

_SUFFIXES = (  # (suffix, replacement, minimum word length), first match wins
    ("ization", "iz", 9),
    ("isation", "iz", 9),
    ("ational", "ate", 9),
    ("ation", "", 8),
    ("ment", "", 7),
    ("ies", "y", 5),
    ("ing", "", 6),
    ("ed", "", 5),
    ("ly", "", 6),
    ("es", "e", 5),
    ("s", "", 4),
)


def stem(word: str) -> str:
    """A deliberately small suffix stripper (not Porter): consistent, not
    pretty. "contacted", "contacts", "contacting" -> "contact";
    "authorize", "authorized", "authorization" -> "authoriz"."""
    w = word.replace("’", "'").strip("'").removesuffix("'s")
    for suffix, repl, minimum in _SUFFIXES:
        if len(w) >= minimum and w.endswith(suffix):
            if suffix == "s" and w[-2] in "su'":
                continue  # "process", "status"
            w = w[: -len(suffix)] + repl
            break
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiousz":
        w = w[:-1]  # "stopped" -> "stopp" -> "stop", "called" -> "cal"
    return w


def content_words(words: str) -> list[str]:
    """The content words of a piece of text (lower case, stop words out), unstemmed: what
    :func:`content_stems` stems, for a caller that stems the words of many texts once each."""
    return [w for w in _WORD.findall(words.lower()) if w not in STOPWORDS and w not in CLAUSE_BREAKS]


def content_stems(words: str) -> frozenset[str]:
    """The stems of the content words of a piece of text (stop words out),
    as the negation keys use them. Used by the diff on affirmations."""
    return frozenset(stem(w) for w in content_words(words))


class _Stems(dict[str, str]):
    """Memo of ``stem`` for one extraction (never shared between calls)."""

    def __missing__(self, word: str) -> str:
        s = self[word] = stem(word)
        return s


def _is_cue(words: list[str], i: int) -> bool:
    """Whether the cue word ``words[i]`` negates ("no later than" does not)."""
    w = words[i]
    nxt = words[i + 1] if i + 1 < len(words) else ""
    if w == "not" and nxt == "only":
        return False
    if w == "no" and nxt in _COMPARATIVES:
        return False
    return not (w == "not" and i >= 2 and words[i - 1] == "or" and words[i - 2] == "whether")


def _negation(words: list[str], cue: int, stems: _Stems) -> tuple[str, int, int] | None:
    """(key, first word index, last word index) of the statement negated by
    ``words[cue]``, or None if nothing follows the cue."""
    after = [i for i in range(cue + 1, len(words)) if not (words[i] in NEGATION_CUES or words[i].endswith(_NT))]
    content = [i for i in after if words[i] not in STOPWORDS][:MAX_NEGATED]
    if not content:
        return None
    first = cue
    keyed = [stems[words[i]] for i in content]
    if words[after[0]] in BE_FORMS:  # passive: "<subject> must not be contacted"
        subject = [i for i in range(cue) if words[i] not in STOPWORDS][-2:]
        if subject:
            keyed += [stems[words[i]] for i in subject]
            first = subject[0]
    head, rest = keyed[0], sorted(set(keyed[1:]) - {keyed[0]})
    return NEGATED + "|".join([head, *rest]), first, content[-1]


def _with_cue(text: str, start: int, end: int, affirm: bool, stems: _Stems, out: list[_Found]) -> None:
    """A clause that holds a cue: split it at commas, brackets, quotes and
    clause-joining words; emit a negation for each part with a real cue and
    an affirmation for each other part."""
    clause = text[start:end]
    low = clause.lower()
    words: list[str] = _TOKEN.findall(low) if len(low) == len(clause) else []
    offsets: list[int] = []  # start of each token in the clause, computed once needed
    if not words:  # a character whose lower case has another length (or no words)
        matches = list(_TOKEN.finditer(text, start, end))
        words = [m.group().lower() for m in matches]
        offsets = [m.start() - start for m in matches]

    def span(i: int, j: int) -> tuple[int, int]:
        """Text offsets from the start of token i to the end of token j."""
        if not offsets:  # walk the tokens with find: they are in order
            pos, find = 0, low.find
            for w in words:
                pos = find(w, pos)
                offsets.append(pos)
                pos += len(w)
        return start + offsets[i], start + offsets[j] + len(words[j])

    breaks = [i for i, w in enumerate(words) if w in _MARKS or w in CLAUSE_BREAKS]
    cues = [i for i, w in enumerate(words) if w in NEGATION_CUES or w.endswith(_NT)]
    first = 0
    for stop in (*breaks, len(words)):
        if first < stop:
            part = words[first:stop]
            cue = next((i - first for i in cues if first <= i < stop and _is_cue(part, i - first)), -1)
            if cue >= 0:
                found = _negation(part, cue, stems)
                if found is not None:
                    key, a, b = found
                    out.append(("negation", key, *span(first + a, first + b)))
            elif affirm and not STOPWORDS.issuperset(part):
                out.append(("negation", AFFIRMED + " ".join(part), *span(first, stop - 1)))
        first = stop + 1


def statements(masked: str, *, affirm: bool = True) -> list[_Found]:
    """Statement atoms of ``masked`` as (kind, key, start, end) tuples.

    ``masked`` is the text with claimed spans replaced by NUL characters of
    the same length, so offsets are those of the original text. Clauses
    without a cue (most) take a fast path of C-level string methods only.
    """
    out: list[_Found] = []
    stems = _Stems()
    stop = STOPWORDS
    cues = [m.start() for m in _CUE.finditer(masked)]
    cues.append(len(masked))  # sentinel
    ci = 0
    for cm in _CLAUSE.finditer(masked):
        start, end = cm.span()
        while cues[ci] < start:
            ci += 1
        if cues[ci] < end:
            _with_cue(masked, start, end, affirm, stems, out)
            continue
        if not affirm:
            continue
        clause = cm.group()
        words = clause.lower().split()
        if not words or stop.issuperset(words):
            continue
        core = clause.strip(_EDGES)
        if any(ch.isalpha() for ch in core):  # usually true at the first character
            s = start + clause.find(core)
            out.append(("negation", AFFIRMED + " ".join(words), s, s + len(core)))
    return out
