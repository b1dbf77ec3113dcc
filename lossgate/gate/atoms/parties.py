"""Named parties: people and organisations.

A party is a run of two or more capitalised name tokens ("Marcus Chen",
"Bank of America"), a capitalised name followed by a company suffix
("Acme Corp", "IBM Corp."), or one name token after a title ("Dr. Smith",
"CTO Chen"). Titles are not part of the name. Runs are split at capitalised
words that are not names (sentence starters, calendar words, roles, see
``tables.PARTY_STOPWORDS``), so a sentence-initial "The" or "Customer" never
makes a party.

Key: the name tokens joined by single spaces, company suffixes in canonical
spelling ("Acme Corporation" -> "Acme Corp"), possessive 's and trailing
punctuation stripped. Case is kept: names are proper nouns.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .tables import COMPANY_SUFFIXES, PARTY_STOPWORDS, TITLES

_TOKEN_TAIL = r"[A-Za-z]*+(?:['’&-][A-Za-z]++)*+\.?+"
_TOKEN = "[A-Z]" + _TOKEN_TAIL
_CONNECT = r"(?:of|de|da|del|der|den|van|von|la|le|du|&)"
#: Two or more capitalised tokens on one line, lower-case particles allowed
#: between them. Single capitalised words are rejected by the regex itself,
#: so ordinary sentence starts cost nothing beyond the scan. Possessive
#: quantifiers (Python 3.11) stop the engine from backtracking through every
#: shorter prefix of a capitalised word that is not followed by another.
PARTY = re.compile(rf"[A-Z](?<![\w'’.&-][A-Z]){_TOKEN_TAIL}(?:[ \t]++(?:{_CONNECT}[ \t]++)?{_TOKEN})++")
_PIECE = re.compile(rf"{_TOKEN}|{_CONNECT}")
_CONNECTORS = frozenset("of de da del der den van von la le du &".split())


def _bare(tok: str) -> str:
    """Token without trailing period or possessive."""
    tok = tok.rstrip(".")
    for tail in ("'s", "’s"):
        if tok.endswith(tail):
            return tok[: -len(tail)]
    return tok


def _is_allcaps(word: str) -> bool:
    return len(word) > 1 and word.isupper()


def parties(text: str, start: int, end: int) -> Iterator[tuple[str, int, int]]:
    """Yield (key, start, end) for each party inside ``text[start:end]``.

    ``start:end`` is one PARTY regex match, possibly clipped; the run is
    split at stop words, titles and sentence-ending periods.
    """
    run: list[tuple[str, int, int]] = []  # (bare token, start, end)
    titled = False

    def flush() -> Iterator[tuple[str, int, int]]:
        nonlocal titled
        # drop connectors and unsuffixed all-caps tokens at the edges
        while run and (run[-1][0] in _CONNECTORS):
            run.pop()
        while run and (run[0][0] in _CONNECTORS):
            run.pop(0)
        names = [t for t in run if t[0] not in _CONNECTORS]
        has_suffix = len(names) > 1 and names[-1][0] in COMPANY_SUFFIXES
        core = names[:-1] if has_suffix else names
        ok = len(core) >= 2 or (len(core) == 1 and (has_suffix or titled))
        # an all-caps word is a name only in front of a company suffix
        if ok and not has_suffix and any(_is_allcaps(t[0]) for t in core):
            ok = False
        if ok:
            words = [t[0] for t in run]
            if has_suffix:
                words[-1] = COMPANY_SUFFIXES[words[-1]]
            yield " ".join(words), run[0][1], run[-1][2]
        run.clear()
        titled = False

    for m in _PIECE.finditer(text, start, end):
        raw = m.group()
        tok = _bare(raw)
        if tok in TITLES:
            yield from flush()
            titled = True
            continue
        if tok in PARTY_STOPWORDS or raw.rstrip(".") in PARTY_STOPWORDS:
            yield from flush()
            continue
        run.append((tok, m.start(), m.start() + len(tok)))
        # "Corp." ends a run; so does a sentence-final period after a name,
        # but not an initial like "J." inside "John J. Smith".
        if raw.endswith(".") and len(tok) > 1:
            yield from flush()
    yield from flush()
