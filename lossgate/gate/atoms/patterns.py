"""Compiled regular expressions for numeric and identifier-like atoms.

All patterns are compiled once at import. Each starts with a negative
look-behind so the engine rejects a position inside a word at once; that
keeps every pass linear in the text length. ``[0-9]`` is used instead of
``\\d`` so exotic Unicode digits never reach ``int()``.
"""

from __future__ import annotations

import re

from .tables import (
    CURRENCY_CODES,
    CURRENCY_SYMBOLS,
    CURRENCY_WORDS,
    NUMBER_WORDS,
    SCALES,
    UNITS,
)


def _alt(words: object) -> str:
    """Regex alternation, longest first so "business days" beats "days"."""
    items = sorted(set(words), key=lambda w: (-len(w), w))  # type: ignore[arg-type]
    return "|".join(re.escape(w).replace(r"\ ", r"[ \t]+") for w in items)


# A number: 14,250.00 | 14250 | 0.5 | .5
NUM = r"(?:[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?|\.[0-9]+)"
_SIGN = "[-\u2212]"
_SCALE_ATTACHED = r"(?:[kKmMbBtT]|mm|MM|mn|bn|BN|tn)(?![\w])"
_SCALE_WORD = r"(?:thousand|million|billion|trillion)(?![\w])"
_SCALE = rf"(?:{_SCALE_ATTACHED}|[ \t]+{_SCALE_WORD})"
SCALE_WORDS = frozenset(SCALES)

_SYMBOLS = _alt(CURRENCY_SYMBOLS)
_CODES = _alt(CURRENCY_CODES)
_CUR_WORDS = _alt(CURRENCY_WORDS)

#: $14,250 | -$2,400 | $-2,400 | €2.5m | US$ 10
MONEY_SYMBOL = re.compile(
    rf"(?<![\w$€£¥.])(?P<sym>{_SYMBOLS})[ \t]?(?P<sign>{_SIGN})?(?P<num>{NUM})"
    rf"(?P<scale>{_SCALE})?(?![0-9])"
)
#: USD 14,250.00 | EUR2400 | USD -2,400
MONEY_CODE = re.compile(
    rf"(?<![\w.])(?P<code>{_CODES})[ \t]?(?P<sign>{_SIGN})?(?P<num>{NUM})"
    rf"(?P<scale>{_SCALE})?(?![0-9])"
)
#: 14,250 USD | 14250 dollars | 2.5 million euros
MONEY_SUFFIX = re.compile(
    rf"(?<![\w.,])(?P<num>{NUM})(?P<scale>{_SCALE})?[ \t]?"
    rf"(?:(?P<code>{_CODES})|(?P<word>(?i:{_CUR_WORDS})))(?![\w])"
)
#: 50 cents -> USD 0.5
MONEY_CENTS = re.compile(rf"(?<![\w.,])(?P<num>{NUM})[ \t]?(?:cents?|¢)(?![\w])")

#: 15% | 15 percent | 15.0 % | 15 per cent | 15 pct
PERCENT = re.compile(
    rf"(?<![\w.,])(?P<num>{NUM})[ \t]?(?:%|(?i:percent|per[ \t]cent|pct)(?![\w]))"
)

_unit_forms: dict[str, str] = {}
for _canon, _forms in UNITS.items():
    for _form in _forms:
        _unit_forms[_form.lower()] = _canon
#: surface form (lower case, single spaces) -> canonical unit
UNIT_OF: dict[str, str] = _unit_forms
_MULTI = _alt(f for f in _unit_forms if len(f) > 1)
_SINGLE = "".join(sorted(f for f in _unit_forms if len(f) == 1))
_NUMWORD = _alt(NUMBER_WORDS)

#: 7 business days | 200-word | 10ms | seven days
QUANTITY = re.compile(
    rf"(?<![\w.,])(?P<num>{NUM}|(?i:{_NUMWORD}))(?:[ \t]*-[ \t]*|[ \t]+|)"
    rf"(?P<unit>(?i:{_MULTI})|[{_SINGLE}])(?![\w])"
)

#: A bare number that is not part of a word, a version or a list like 1,2.
BARE_NUMBER = re.compile(rf"(?<![\w.,/:#])(?P<num>{NUM})(?![\w]|[.,:/][0-9])")

# --- identifiers ---------------------------------------------------------

URL = re.compile(r"(?<![\w@])(?:https?|ftp)://[^\s<>\"'`)\]}]+")
EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+"
    r"(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w])"
)
#: invoice_id='INV-9182' | "credit_memo_id": "CM-3392" | invoiceId=abc
QUOTED_ID = re.compile(
    r"(?<![\w])(?:(?:[A-Za-z][A-Za-z0-9]*_)*(?:id|ID|uuid|ref)|[a-z]+(?:[A-Z][a-z0-9]*)*(?:Id|ID|Ref))"
    r"[\"']?[ \t]*[:=][ \t]*(?P<q>[\"'])(?P<val>[^\"'\s]{1,128})(?P=q)"
)
UUID = re.compile(
    r"(?<![\w-])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
    r"[0-9a-fA-F]{12}(?![\w-])"
)
#: sha256:ab12... | md5-... | a bare hex digest of 7+ characters
HASH = re.compile(
    r"(?<![\w:-])(?:(?P<algo>sha1|sha224|sha256|sha384|sha512|md5|blake2b|blake3)[:-])?"
    r"(?P<hex>[0-9a-fA-F]{7,128})(?![\w-])"
)
#: INV-9182 | cust_482 | TKT-00123 | COVID-19 | INV9182 | v1.2.3 | #4521
SHAPED_ID = re.compile(
    r"(?<![\w@./:#-])(?:"
    r"(?P<seg>[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+)"
    r"|(?P<caps>[A-Z]{2,}[0-9]{2,}[A-Za-z0-9]*)"
    r"|(?P<ver>v[0-9]+(?:\.[0-9]+)+(?:[-+][0-9A-Za-z.]+)?)"
    r")(?![\w@]|[-_.][A-Za-z0-9])"
    r"|(?<![\w&#])(?P<hash>#[0-9]{2,})(?![\w])"
)
#: "mid-2026" and friends: English prefixes, not identifiers.
ID_PREFIX_STOP = frozenset(
    "mid pre post top over under non anti late early sub ultra multi inter "
    "re co ex self half full bi tri semi".split()
)

# --- phones --------------------------------------------------------------

PHONE = re.compile(
    r"(?<![\w+/.-])(?:"
    r"(?P<intl>\+[0-9]{1,3}(?:[ \t.-]?(?:\([0-9]{1,4}\)|[0-9]{1,4}))(?:[ \t.-]?[0-9]{2,4}){1,4})"
    r"|(?P<paren>\([2-9][0-9]{2}\)[ \t]?[0-9]{3}[ \t.-][0-9]{4})"
    r"|(?P<nanp>[2-9][0-9]{2}[.-][0-9]{3}[.-][0-9]{4})"
    r")(?![\w]|[.-][0-9])"
)
