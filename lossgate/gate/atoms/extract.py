"""The extractor: run the pattern passes in priority order over one text.

Spans never overlap. Each pass may only take characters no earlier pass has
claimed, so the digits of a date, an amount, an identifier, a time or a phone
number are never counted again as a bare number. Priority, highest first:
URLs (kept as identifiers), e-mail addresses, quoted tool-call ids, UUIDs
and digests, dates and times, phone numbers, identifier shapes, money,
percentages, quantities with units, bare numbers, parties, statements.
"""

from __future__ import annotations

import re
from datetime import datetime

from . import patterns as P
from .atom import Atom, AtomKind
from .claims import Claims, masked
from .extract_dates import temporal_pass
from .numbers import canonical_number, scale_of
from .parties import PARTY, parties
from .statements import statements
from .tables import CURRENCY_CODES, CURRENCY_SYMBOLS, CURRENCY_WORDS, MONTHS

_URL_TAIL = ".,;:!?'\""
_WS = re.compile(r"[ \t]+")


def _identifiers(text: str, low: str, c: Claims) -> None:
    """URLs, e-mail addresses, quoted tool-call ids, UUIDs and hex digests."""
    if "://" in text:
        for m in P.URL.finditer(text):
            if c.word_start(m.start()):
                url = m.group().rstrip(_URL_TAIL)
                c.take("identifier", url, m.start(), m.start() + len(url))
    at = text.find("@")
    while at >= 0:  # walk back from each "@" to the start of the address
        start = at
        while start > 0 and text[start - 1] in P.EMAIL_LOCAL_CHARS:
            start -= 1
        while start < at and not text[start].isalnum():
            start += 1
        address = P.EMAIL.match(text, start)
        if address is not None and address.end() > at:
            c.take("email", address.group().lower(), start, address.end())
            at = text.find("@", address.end())
        else:
            at = text.find("@", at + 1)
    for m in P.QUOTED_VALUE.finditer(text):
        name_end = m.start() - (1 if m.start() and text[m.start() - 1] in "\"'" else 0)
        name_end = len(text[:name_end].rstrip(" \t"))
        name_start = name_end
        while name_start > 0 and (text[name_start - 1].isalnum() or text[name_start - 1] == "_"):
            name_start -= 1
        val = m["val"]
        if P.ID_KEY.fullmatch(text, name_start, name_end) and any(ch.isalnum() for ch in val):
            c.take("identifier", val, m.start("val"), m.end("val"))
    for m in P.UUID_TAIL.finditer(text):
        start = m.start() - 8
        if (
            start >= 0
            and P.HEX8.fullmatch(text, start, m.start())
            and c.word_start(start)
            and (start == 0 or text[start - 1] != "-")
        ):
            c.take("identifier", text[start : m.end()].lower(), start, m.end())
    for m in P.ALGO_HASH.finditer(text) if ("sha" in low or "md5" in low or "blake" in low) else ():
        algo, _, _ = m.group().partition(m["hex"])
        c.take("identifier", algo.lower() + m["hex"].lower(), m.start(), m.end())
    resume = 0
    hexchars = P.HEX_CHARS
    for m in P.HEX_SEED.finditer(text):
        if m.start() < resume:
            continue
        start, end = m.start(), m.end()
        while start > 0 and text[start - 1] in hexchars:
            start -= 1
        while end < len(text) and text[end] in hexchars:
            end += 1
        resume = end
        hx = text[start:end]
        if (
            7 <= len(hx) <= 128
            and sum(ch.isdigit() for ch in hx) >= 2
            and c.word_start(start)
            and (start == 0 or text[start - 1] not in ":-")
            and (end == len(text) or not (text[end].isalnum() or text[end] in "_-"))
        ):
            c.take("identifier", hx.lower(), start, end)


def _shaped_ids(text: str, c: Claims) -> None:
    """INV-9182, cust_482 (found from their joiner), INV9182, v1.2.3, #4521."""
    resume = 0
    for m in P.SEPARATOR.finditer(text):
        if m.start() < resume:
            continue  # a later separator of a token already looked at
        start = m.start()
        while start > 0 and text[start - 1] in P.ID_TOKEN_CHARS:
            start -= 1
        token = P.SEGMENTED.match(text, start)
        if token is None:
            resume = m.end()
            continue
        resume = token.end()
        if start > 0 and (text[start - 1] in P.ID_BEFORE or text[start - 1].isalnum()):
            continue
        c.take("identifier", _segmented_key(token.group()), start, token.end())
    for m in P.COMPACT_ID.finditer(text):
        ident = m.group()
        if ident[:3] in CURRENCY_CODES and ident[3:].replace(".", "").replace(",", "").isdigit():
            continue  # "USD14250" is money
        c.take("identifier", ident, m.start(), m.end())


_DIGIT = re.compile(r"[0-9]")
_JOINER = re.compile(r"[-_]")


def _segmented_key(ident: str) -> str | None:
    """The key of a joined token if it is an identifier, else None."""
    if _DIGIT.search(ident) is None:
        return None  # hyphenated English: "follow-up", "e-mail"
    parts = _JOINER.split(ident)
    first = parts[0].lower()
    if first in P.ID_PREFIX_STOP or first in MONTHS:
        return None  # "mid-2026", "Mar-25"
    if sum(p.isalpha() for p in parts) > 2 or len(parts) > 5:
        return None  # "disputed_line_item_3" is a phrase in snake case
    return ident


def _phones(text: str, c: Claims) -> None:
    """+country numbers with 8 to 15 digits; North American numbers get +1."""
    for m in P.PHONE.finditer(text):
        digits = "".join(ch for ch in m.group() if ch.isdigit())
        if m["intl"]:
            if 8 <= len(digits) <= 15:
                c.take("phone", "+" + digits, m.start(), m.end())
        else:
            c.take("phone", "+1" + digits, m.start(), m.end())


def _money(text: str, c: Claims) -> None:
    """Amounts led by a currency symbol or code (trailing currencies are in
    the numeric pass)."""
    for m in P.MONEY_SYMBOL.finditer(text):
        start, sym = m.start(), m["sym"]
        for plen in (3, 2, 1):  # "US$", "CA$", "C$" ...
            prefix = text[max(0, start - plen) : start]
            if len(prefix) == plen and prefix in P.SYMBOL_PREFIXES and c.word_start(start - plen):
                start, sym = start - plen, P.SYMBOL_PREFIXES[prefix]
                break
        if not c.word_start(start) or (start and text[start - 1] == "."):
            continue
        neg, start = c.signed(start)
        neg = neg != bool(m["sign"])
        amount = canonical_number(m["num"], negative=neg, scale=scale_of(m["scale"]))
        c.take("money", f"{CURRENCY_SYMBOLS[sym]} {amount}", start, m.end())
    for m in P.MONEY_CODE.finditer(text):
        if m["code"] not in CURRENCY_CODES:
            continue
        neg, start = c.signed(m.start())
        neg = neg != bool(m["sign"])
        amount = canonical_number(m["num"], negative=neg, scale=scale_of(m["scale"]))
        c.take("money", f"{m['code']} {amount}", start, m.end())


def _numbers(text: str, c: Claims) -> None:
    """Everything else that starts with a digit: money with a trailing
    currency, cents, percentages, quantities with a unit, bare numbers."""
    for m in P.NUMERIC.finditer(text):
        neg, start = c.signed(m.start())
        raw = m["num"]
        if m["bare"] is not None:
            c.take("quantity", canonical_number(raw, negative=neg), start, m.end())
        elif m["unit"] is not None:
            unit = P.UNIT_OF.get(_WS.sub(" ", m["unit"].lower()))
            c.take("quantity", unit and f"{canonical_number(raw, negative=neg)} {unit}", start, m.end())
        elif m["pct"] is not None:
            c.take("percent", canonical_number(raw, negative=neg) + "%", start, m.end())
        elif m["cents"] is not None:
            c.take("money", "USD " + canonical_number(raw, negative=neg, scale_exp=-2), start, m.end())
        else:
            code = m["code"] or CURRENCY_WORDS[_WS.sub(" ", m["word"].lower())]
            amount = canonical_number(raw, negative=neg, scale=scale_of(m["mscale"]))
            c.take("money", f"{code} {amount}", start, m.end())


def _heading(text: str, start: int, end: int) -> bool:
    """True if ``start:end`` lies on a title-case heading line ("The Failure
    Mode That Looks Like Success"), whose capitals say nothing about names:
    four or more words, no closing full stop, every word of four or more
    letters capitalised."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line = text[line_start : len(text) if line_end < 0 else line_end].strip()
    words = line.split()
    if len(words) < 4 or line[-1] in ".!?":
        return False
    return all(w[0].isupper() for w in words if len(w) >= 4 and w[0].isalpha())


def _parties(text: str, c: Claims) -> None:
    """Named people and organisations outside title-case headings."""
    for m in PARTY.finditer(text):
        if _heading(text, m.start(), m.end()):
            continue
        for start, end in c.free_runs(m.start(), m.end()):
            for key, s, e in parties(text, start, end):
                c.take("party", key, s, e)


def extract_atoms(
    text: str,
    *,
    reference_time: datetime | None = None,
    affirmations: bool = True,
) -> list[Atom]:
    """Return the atoms of ``text``, ordered by start offset.

    Deterministic and pure: the same text and reference time always give the
    same list, and no two atoms overlap. Relative dates ("tomorrow", "next
    Monday", "in 3 days", "by EOD") resolve against ``reference_time`` when it
    is given; without it they keep a literal relative form (``rel:+1d``,
    ``rel:next-mon``, ``rel:+0dTeod``), so two texts that both say "tomorrow"
    still agree. A date written without a year takes the year of
    ``reference_time``, else its key is ``--MM-DD``.

    ``affirmations=False`` leaves out the affirmative-statement helper atoms
    (kind "negation", key ``is|...``) that :func:`diff_atoms` uses to report
    a flipped negation as ``polarity_flipped`` instead of ``missing``.
    """
    c = Claims(text)
    low = " " + text.lower()  # only for cheap "is this word anywhere?" checks
    _identifiers(text, low, c)
    temporal_pass(text, c, reference_time)
    _phones(text, c)
    _shaped_ids(text, c)
    _money(text, c)
    _numbers(text, c)
    _parties(text, c)
    found = c.found
    found.extend(statements(masked(text, c.mask), affirm=affirmations))
    found.sort(key=lambda f: (f[2], f[3]))
    return [_atom(k, key, text[s:e], s, e) for k, key, s, e in found]


_new = object.__new__
_SETTERS = tuple(Atom.__dict__[f].__set__ for f in ("kind", "key", "text", "start", "end"))


def _atom(kind: AtomKind, key: str, text: str, start: int, end: int) -> Atom:
    """``Atom(kind, key, text, start, end)`` without the frozen-dataclass
    ``__init__``, which costs twice as much through ``object.__setattr__``;
    extraction builds thousands of atoms per 100 kB, so it shows."""
    atom = _new(Atom)
    set_kind, set_key, set_text, set_start, set_end = _SETTERS
    set_kind(atom, kind)
    set_key(atom, key)
    set_text(atom, text)
    set_start(atom, start)
    set_end(atom, end)
    return atom
