"""The words of a question that are worth searching for.

A question is natural language: "When did Caroline go to the support group?"
Searched word for word, "when", "did", "the" and "to" match nearly every event,
and ranking can only bury the few that matter under the many that match. The
terms of a query are its words, lower-cased, less the English function words
and question words below; a query of nothing else has no terms and matches
nothing (recall then returns no hits, never "everything that says 'the'").
"""

from __future__ import annotations

import re

__all__ = ["STOP_WORDS", "SEARCH_SEPARATORS", "query_terms", "searchable", "is_phrase"]

# The punctuation that glues words into one token for PostgreSQL's text-search parser (an
# e-mail address, a host, a URL or file path, a signed or hyphenated number, a version):
# what the store indexes has them replaced by spaces, so that the words of a query, split at
# punctuation, find their parts (``bob`` in ``bob@example.com``, ``2041`` in ``INV-2041``),
# as SQLite's tokenizer, which splits at every punctuation mark, finds them. ASCII only, so
# that the replacement means the same under every locale the database may run in.
SEARCH_SEPARATORS = "@./-:_+~#&=?"
_SEPARATE = str.maketrans(SEARCH_SEPARATORS, " " * len(SEARCH_SEPARATORS))

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
# An identifier: word pieces glued by separators, with a digit or an "@" in it (INV-5,
# bob@example.com, A-12/3, v2.1). It is one term, matched by the stores as the sequence of its
# pieces (a phrase), never as its pieces apart: "inv" alone is in every invoice.
_IDENTIFIER = re.compile(r"[^\W_]+(?:[@./\-:_+~#&=?][^\W_]+)+")

STOP_WORDS = frozenset(
    """
a about above after again against all also am an and any are aren't as at be because been before being below
between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each either
else ever few for from further get gets got had hadn't has hasn't have haven't having he he'd he'll he's her here
here's hers herself him himself his how how's however i i'd i'll i'm i've if in into is isn't it it's its itself
just let's like may me might more most much must mustn't my myself neither no nor not now of off on once one only
or other ought our ours ourselves out over own per rather same shall shan't she she'd she'll she's should
shouldn't so some such than that that's the their theirs them themselves then there there's these they they'd
they'll they're they've this those through thus to too under until up upon us very was wasn't we we'd we'll we're
we've were weren't what what's whatever when when's whenever where where's whereas wherever whether which while
who who's whoever whom whose why why's will with won't would wouldn't yet you you'd you'll you're you've your
yours yourself yourselves
kind sort thing things way ways
""".split()
)


def query_terms(query: str | None) -> list[str]:
    """The distinct content words of ``query``, lower-cased, in order of first use; an
    identifier (``INV-5``, ``bob@example.com``) is one term, separators and all."""
    found: list[tuple[int, str]] = []
    # "İ" lower-cases to "i" and a combining dot, which is no word character: "İstanbul" would
    # be searched as "stanbul"; both indexes fold it to "i"
    text = (query or "").lower().replace("’", "'").replace("i\u0307", "i")
    for ident in _IDENTIFIER.finditer(text):
        if any(c.isdigit() or c == "@" for c in ident.group()):
            found.append((ident.start(), ident.group()))
            text = text[: ident.start()] + " " * len(ident.group()) + text[ident.end() :]
    for match in _WORD.finditer(text):
        word = match.group()
        if word.endswith("'s") and word not in STOP_WORDS:
            word = word[:-2]  # "Melanie's dog": the text may say "Melanie" alone
        if word not in STOP_WORDS and not (len(word) == 1 and not word.isdigit()):
            found.append((match.start(), word))
    seen: dict[str, None] = {}
    for _, term in sorted(found):
        seen.setdefault(term, None)
    return list(seen)


def is_phrase(term: str) -> bool:
    """Whether a query term is an identifier of several pieces (matched as a phrase)."""
    return any(c in SEARCH_SEPARATORS for c in term)


def searchable(text: str) -> str:
    """``text`` as the store indexes it: :data:`SEARCH_SEPARATORS` replaced by spaces."""
    return text.translate(_SEPARATE)
