"""Number normalisation shared by money, percent and quantity atoms.

Keys are built from strings, not floats, so ``14250.00`` and ``14,250`` give
the same key and no value is ever rounded.
"""

from __future__ import annotations

from decimal import Context, Decimal, InvalidOperation

from .tables import NUMBER_WORDS, SCALES, UNIT_FACTORS

# A private context wide enough for any amount a regex can match; the global
# decimal context is left alone (no shared mutable state).
_CTX = Context(prec=200)

_MINUS = "-\u2212\u2013"  # ASCII hyphen-minus, Unicode minus, en dash


def canonical_number(raw: str, *, negative: bool = False, scale: int = 1, scale_exp: int = 0) -> str:
    """Return the canonical decimal string of ``raw``.

    Thousands separators go, trailing fractional zeros go (``14250.00`` ->
    ``14250``), leading zeros go, ``-0`` is ``0``; ``scale`` multiplies
    exactly (``14.25`` with scale 1000 -> ``14250``). Number words
    (``seven``) are accepted too. ``scale_exp`` shifts the decimal point
    (-2 turns cents into units).
    """
    if raw.isdigit() and scale == 1 and not scale_exp:  # the common case
        out = raw.lstrip("0") or "0"
        return "-" + out if negative and out != "0" else out
    s = raw.replace(",", "").replace("_", "")
    if s and s[0] in _MINUS:
        negative, s = not negative, s[1:]
    if s.lower() in NUMBER_WORDS:
        s = str(NUMBER_WORDS[s.lower()])
    if scale != 1 or scale_exp:
        try:
            s = format(_CTX.multiply(Decimal(s), Decimal(scale)).scaleb(scale_exp, _CTX), "f")
        except InvalidOperation:  # unreachable for regex-matched input
            return raw
    whole, _, frac = s.partition(".")
    whole = whole.lstrip("0") or "0"
    frac = frac.rstrip("0")
    out = f"{whole}.{frac}" if frac else whole
    if negative and out != "0":
        out = "-" + out
    return out


def scale_of(word: str | None) -> int:
    """The multiplier named by a scale suffix ("k", "million"), else 1."""
    if not word:
        return 1
    return SCALES.get(word.strip().lower(), 1)


def is_negative_before(text: str, start: int) -> bool:
    """True when the character before ``start`` is a minus sign used as a sign.

    A hyphen after a letter or digit is a joiner or a range ("INV-9182",
    "10-20"), not a sign.
    """
    if start <= 0 or text[start - 1] not in _MINUS:
        return False
    return start < 2 or not text[start - 2].isalnum()


def number_of(key: str) -> str | None:
    """The numeric part of a money, quantity or percent key, else None."""
    if key.endswith("%"):
        return key[:-1]
    head, _, tail = key.partition(" ")
    if head[:1].isdigit() or head[:1] == "-":
        return head
    if tail[:1].isdigit() or tail[:1] == "-":  # money: "USD 14250"
        return tail
    return None


def to_decimal(num: str) -> Decimal | None:
    """Parse a canonical number string; None if it is not one."""
    try:
        return _CTX.create_decimal(num)
    except (InvalidOperation, ValueError):
        return None


def base_quantity(key: str) -> tuple[str, Decimal] | None:
    """(dimension, value in base units) for convertible quantity keys.

    "2 week" and "14 day" both give ("time", 1209600). None for units that
    do not convert exactly (months, business days, words ...).
    """
    num, _, unit = key.partition(" ")
    factor = UNIT_FACTORS.get(unit)
    if factor is None:  # most keys: a bare number or a unit that does not convert
        return None
    value = to_decimal(num)
    if value is None:
        return None
    return factor[0], _CTX.multiply(value, factor[1]).normalize(_CTX)
