"""Compiled regular expressions for numeric and identifier-like atoms.

Speed notes (the extractor must run at several MB/s in pure Python):

* every pattern *starts* with a character class or literal, so the engine can
  skip ahead in C; the "not inside a word" check is a look-behind placed
  after the first character (``[0-9](?<![\\w.][0-9])``), because a leading
  look-behind disables that skip;
* long alternations are compiled as tries (``trie``) so a failing position
  is rejected after a character or two;
* ``[0-9]`` rather than ``\\d``: exotic Unicode digits never reach ``int()``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .tables import CURRENCY_SYMBOLS, CURRENCY_WORDS, UNITS


def trie(words: Iterable[str], *, fold: bool = False, guard: str = "") -> str:
    """A regex alternation of ``words`` as a trie; a space matches any run of
    blanks. ``fold`` also admits the Capitalised and UPPER-CASE spellings.
    ``guard`` is a character class body: the match may not start right after
    one of its characters (checked after the first character, where it is
    cheap, instead of with a leading look-behind, which would stop the
    engine from skipping ahead in C)."""
    items = set(words)
    if fold:
        items |= {w.capitalize() for w in items} | {w.upper() for w in items}
    root: dict[str, dict] = {}  # type: ignore[type-arg]
    for w in items:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict, depth: int) -> str:  # type: ignore[type-arg]
        branches = []
        for ch in sorted(k for k in node if k):
            piece = r"[ \t]+" if ch == " " else re.escape(ch)
            if depth == 0 and guard:
                piece += f"(?<![{guard}]{re.escape(ch)})"
            branches.append(piece + build(node[ch], depth + 1))
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:
            return f"(?:{body})?"
        return body

    return build(root, 0)


#: ``guard`` value for "must start a word".
WORD_CHAR = r"\w"


def num(before: str) -> str:
    """A number whose first digit may not follow a character of ``before``:
    14,250.00 | 14250 | 0.5. Grouped as ``num``."""
    guard = rf"(?<![{before}][0-9])" if before else ""
    return (
        rf"(?P<num>[0-9]{guard}"
        r"(?:[0-9]{0,2}(?:,[0-9]{3})++(?:\.[0-9]++)?+|[0-9]*+(?:\.[0-9]++)?+))"
    )


_SIGN = "[-\u2212]"
_SCALE = (
    r"(?:(?:[kKmMbBtT]|mm|MM|mn|bn|BN|tn)(?![\w])"
    r"|[ \t]+(?:thousand|million|billion|trillion)(?![\w]))"
)
_SYMBOL_CHARS = "".join(sorted({s[-1] for s in CURRENCY_SYMBOLS}))

#: $14,250 | $-2,400 | €2.5m. Letter prefixes ("US$", "C$") and a leading
#: minus ("-$2,400") are read by the caller from the characters before.
MONEY_SYMBOL = re.compile(
    rf"(?P<sym>[{re.escape(_SYMBOL_CHARS)}])[ \t]?(?P<sign>{_SIGN})?{num('')}"
    rf"(?P<scale>{_SCALE})?(?![0-9])"
)
SYMBOL_PREFIXES = {s[:-1]: s for s in CURRENCY_SYMBOLS if len(s) > 1}

#: USD 14,250.00 | EUR2400 | USD -2,400 (the caller checks the code)
MONEY_CODE = re.compile(
    rf"(?P<code>[A-Z](?<![\w.][A-Z])[A-Z]{{2}})[ \t]?(?P<sign>{_SIGN})?{num('')}"
    rf"(?P<scale>{_SCALE})?(?![0-9])"
)

_unit_forms: dict[str, str] = {}
for _canon, _forms in UNITS.items():
    for _form in _forms:
        _unit_forms[_form.lower()] = _canon
#: unit surface form (lower case, single spaces) -> canonical unit
UNIT_OF: dict[str, str] = _unit_forms
_MULTI = trie((f for f in _unit_forms if len(f) > 1), fold=True)
_SINGLE = "".join(sorted(f for f in _unit_forms if len(f) == 1))
_UNIT = rf"(?P<unit>{_MULTI}|[{_SINGLE}])(?![\w])"
_CODE_ALT = trie(
    "USD EUR GBP JPY CNY INR CAD AUD NZD CHF SEK NOK DKK PLN CZK HUF MXN BRL "
    "ZAR SGD HKD KRW TRY ILS RUB AED SAR THB VND NGN IDR MYR PHP TWD".split()
)
_CUR_WORD = trie(CURRENCY_WORDS, fold=True)

#: Everything that starts with a digit and is not a date, time, identifier
#: or phone (those are claimed first): money with a trailing currency,
#: cents, percentages, quantities with a unit, and bare numbers. Which branch
#: matched is told by the named group that is set.
NUMERIC = re.compile(
    num(r"\w.,/:#") + r"(?:"
    rf"(?P<mscale>{_SCALE})?[ \t]?(?:(?P<code>{_CODE_ALT})|(?P<word>{_CUR_WORD}))(?![\w])"
    r"|[ \t]?(?P<cents>cents?|¢)(?![\w])"
    r"|[ \t]?(?P<pct>%|(?:percent|per[ \t]cent|pct|Percent|PERCENT)(?![\w]))"
    r"|(?:[ \t]*-[ \t]*|[ \t]+|)" + _UNIT + r"|(?P<bare>)(?![\w]|[.,:/][0-9])"
    r")"
)


# --- identifiers ---------------------------------------------------------

#: run only when "://" occurs; the caller checks the character before
URL = re.compile(r"(?:https?|ftp)://[^\s<>\"'`)\]}]++")
#: An e-mail address matched from its first character (the caller finds it
#: by walking back from each "@").
EMAIL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._%+-]*+@[A-Za-z0-9-]++(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w])")
EMAIL_LOCAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")
#: ='INV-9182' | : "CM-3392" -- the caller checks the key name before it.
QUOTED_VALUE = re.compile(r"[:=][ \t]*(?P<q>[\"'])(?P<val>[^\"'\s]{1,128})(?P=q)")
ID_KEY = re.compile(r"(?:[A-Za-z][A-Za-z0-9]*_)*(?:id|ID|uuid|ref)|[a-z]+(?:[A-Z][a-z0-9]*)*(?:Id|ID|Ref)")
#: the tail of a UUID; the caller checks the 8 hex digits before it
UUID_TAIL = re.compile(r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![\w-])")
HEX8 = re.compile(r"[0-9a-fA-F]{8}")
#: sha256:ab12... | md5-...
ALGO_HASH = re.compile(
    r"[smb](?<![\w][smb])(?:ha(?:1|224|256|384|512)|d5|lake(?:2b|3))[:-]"
    r"(?P<hex>[0-9a-fA-F]{7,128})(?![\w-])"
)
#: a digit next to a hex letter: where a bare hex digest (git SHA, hash)
#: can be; the caller widens it to the whole token. Anchoring on this rare
#: pair is far cheaper than scanning every word that starts with a-f.
HEX_SEED = re.compile(r"[0-9](?:(?=[a-fA-F])|(?<=[a-fA-F][0-9]))")
HEX_CHARS = frozenset("0123456789abcdefABCDEF")
#: the separator inside INV-9182 / cust_482; the caller walks back to the
#: start of the token and matches SEGMENTED there
SEPARATOR = re.compile(r"[-_](?<=[A-Za-z0-9][-_])(?=[A-Za-z0-9])")
SEGMENTED = re.compile(r"[A-Za-z][A-Za-z0-9]*+(?:[-_][A-Za-z0-9]++)++(?![\w@]|[-_.][A-Za-z0-9])")
ID_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
ID_BEFORE = frozenset("@./:#")
#: INV9182 | v1.2.3 | 10.0.0.1 | #4521 (first character outside the
#: alternatives so the engine can skip ahead in C)
COMPACT_ID = re.compile(
    r"[A-Z0-9v#](?<![\w@./:#&-][A-Z0-9v#])(?:"
    r"(?<=[A-Z])[A-Z]+[0-9]{2,}[A-Za-z0-9]*"
    r"|(?<=v)[0-9]+(?:\.[0-9]+)+(?:[-+][0-9A-Za-z.]*[0-9A-Za-z])?"
    r"|(?<=[0-9])[0-9]*(?:\.[0-9]+){2,}"
    r"|(?<=#)[0-9]{2,}"
    r")(?![\w@]|[-_.][A-Za-z0-9])"
)
#: "mid-2026" and friends: English prefixes, not identifiers.
ID_PREFIX_STOP = frozenset(
    "mid pre post top over under non anti late early sub ultra multi inter re co ex self half full bi tri semi".split()
)

# --- phones --------------------------------------------------------------

PHONE = re.compile(
    r"[+(2-9](?<![\w+/.(-][+(2-9])(?:"
    r"(?<=\+)(?P<intl>[0-9]{1,3}(?:[ \t.-]?(?:\([0-9]{1,4}\)|[0-9]{1,4}))(?:[ \t.-]?[0-9]{2,4}){1,4})"
    r"|(?<=\()(?P<paren>[2-9][0-9]{2}\)[ \t]?[0-9]{3}[ \t.-][0-9]{4})"
    r"|(?<=[2-9])(?P<nanp>[0-9]{2}[.-][0-9]{3}[.-][0-9]{4})"
    r")(?![\w]|[.-][0-9])"
)
