"""Negated statements, and the affirmative statements used to spot flips.

The text (with every span already claimed by another atom blanked out) is cut
into clauses at punctuation, at clause-joining words ("and", "but",
"because" ...) and at claimed spans. In each clause:

* If it holds a negation cue (not, n't, never, no, without, cannot, nobody,
  nothing, none, neither, nor), the statement is negated. Its key is
  ``not|<head>|<rest...>``: the content stems after the cue, up to four, the
  first one (usually the verb) as head and the rest sorted, so word order
  and determiners do not matter: "Do not contact the customer" and "Never
  contact the customer" both give ``not|contact|customer``. In a passive
  ("The customer must not be contacted") the subject's stems before the cue
  are added, so it gives the same key too. Entities are separate atoms and
  never part of the key: "not authorized by their CTO Marcus Chen" is
  ``not|authoriz|cto``.
* Otherwise its content stems (up to twelve, sorted) make an affirmation
  ``is|...``; the diff uses these only to tell "negation dropped" from
  "negation flipped".

Double negation is not cancelled: "not unauthorized" is
``not|unauthoriz``, because "not unhappy" does not mean "happy". A cue
followed by a comparison ("no later than", "no more than") is a bound, not a
negation, and is skipped; so are "not only" and "whether or not".
"""

from __future__ import annotations

import re

from .model import AFFIRMED, NEGATED
from .tables import BE_FORMS, CLAUSE_BREAKS, NEGATION_CUES, STOPWORDS

#: A word (Unicode letters, inner apostrophes) or a clause-ending mark.
_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*|\x00+|[.;:!?()\[\]{}\"“”,\n]")
_BOUNDS = frozenset('.;:!?()[]{}"“”,\n\x00')
_COMPARATIVES = frozenset("later earlier more less fewer longer sooner greater".split())
MAX_NEGATED = 4
MAX_AFFIRMED = 12

_SUFFIXES = (  # (suffix, replacement, minimum word length), first match wins
    ("ization", "iz", 9), ("isation", "iz", 9), ("ational", "ate", 9),
    ("ation", "", 8), ("ment", "", 7), ("ies", "y", 5), ("ing", "", 6),
    ("ed", "", 5), ("ly", "", 6), ("es", "e", 5), ("s", "", 4),
)


def stem(word: str) -> str:
    """A deliberately small suffix stripper (not Porter): consistent, not
    pretty. "contacted", "contacts", "contacting" -> "contact";
    "authorize", "authorized", "authorization" -> "authoriz"."""
    w = word.replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
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


def _is_cue(word: str) -> bool:
    return word in NEGATION_CUES or word.endswith(("n't", "n’t"))


class _Clause:
    """Accumulates the words of one clause and emits its statement atom."""

    __slots__ = ("words", "cue", "stems")

    def __init__(self) -> None:
        self.words: list[tuple[str, int, int]] = []  # (lower word, start, end)
        self.cue = -1
        self.stems: dict[str, str] = {}  # per-extraction memo, not global

    def _stem(self, w: str) -> str:
        s = self.stems.get(w)
        if s is None:
            s = self.stems[w] = stem(w)
        return s

    def _real_cue(self, i: int) -> bool:
        words = self.words
        nxt = words[i + 1][0] if i + 1 < len(words) else ""
        w = words[i][0]
        if w == "not" and nxt == "only":
            return False
        if w == "no" and nxt in _COMPARATIVES:
            return False
        if w == "not" and i >= 2 and words[i - 1][0] == "or" and words[i - 2][0] == "whether":
            return False
        return True

    def flush(self, text: str, out: list[tuple[str, str, int, int]], affirm: bool) -> None:
        words = self.words
        if not words:
            return
        cue = -1
        if self.cue >= 0:  # first cue seen while reading; confirm it is real
            for i in range(self.cue, len(words)):
                if _is_cue(words[i][0]) and self._real_cue(i):
                    cue = i
                    break
        if cue >= 0:
            self._negated(cue, text, out)
        elif affirm:
            self._affirmed(text, out)
        words.clear()
        self.cue = -1

    def _negated(self, cue: int, text: str, out: list[tuple[str, str, int, int]]) -> None:
        words = self.words
        content: list[tuple[str, int, int]] = []
        after = [w for w in words[cue + 1:] if not _is_cue(w[0])]
        for w, s, e in after:
            if w not in STOPWORDS:
                content.append((self._stem(w), s, e))
                if len(content) == MAX_NEGATED:
                    break
        if not content:
            return
        start = words[cue][1]
        stems = [c[0] for c in content]
        # passive: "<subject> must not be contacted" -> add the subject
        if after and after[0][0] in BE_FORMS:
            subject = [w for w in words[:cue] if w[0] not in STOPWORDS][-2:]
            if subject:
                stems += [self._stem(w) for w, _, _ in subject]
                start = subject[0][1]
        head, rest = stems[0], sorted(set(stems[1:]) - {stems[0]})
        end = content[-1][2]
        out.append(("negation", NEGATED + "|".join([head, *rest]), start, end))

    def _affirmed(self, text: str, out: list[tuple[str, str, int, int]]) -> None:
        content = [(w, s, e) for w, s, e in self.words if w not in STOPWORDS][:MAX_AFFIRMED]
        if not content:
            return
        stems = sorted({self._stem(w) for w, _, _ in content})
        out.append(("negation", AFFIRMED + "|".join(stems), content[0][1], content[-1][2]))


def statements(masked: str, *, affirm: bool = True) -> list[tuple[str, str, int, int]]:
    """Statement atoms of ``masked`` as (kind, key, start, end) tuples.

    ``masked`` is the text with claimed spans replaced by NUL characters of
    the same length, so offsets are those of the original text.
    """
    out: list[tuple[str, str, int, int]] = []
    clause = _Clause()
    words = clause.words
    for m in _TOKEN.finditer(masked):
        tok = m.group()
        if tok[0] in _BOUNDS:
            clause.flush(masked, out, affirm)
            continue
        low = tok.lower()
        if low in CLAUSE_BREAKS:
            clause.flush(masked, out, affirm)
            continue
        if clause.cue < 0 and _is_cue(low):
            clause.cue = len(words)
        words.append((low, m.start(), m.end()))
    clause.flush(masked, out, affirm)
    return out
