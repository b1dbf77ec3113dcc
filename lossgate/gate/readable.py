"""What the gate can read of a model's narrative, so that what it publishes is what it read.

A reader, person or model, reads ``ｐｅａｎｕｔｓ`` (fullwidth), ``p\u200beanuts`` (a zero-width
space), ``pe\u0301anuts`` (a combining accent), ``pеanuts`` (a Cyrillic ``е``) or ``ᴘᴇᴀɴᴜᴛꜱ``
(small capitals) as "peanuts"; a gate that reads code points does not, and no list of such
disguises is ever complete. So lossgate publishes a narrative sentence only when it is
written in what the gate reads (:func:`unreadable`): Latin letters, accented or not, digits,
spaces and common punctuation, currency and arrow signs, with no markup that hides text from
a reader (a strike-through, an HTML comment or tag). Anything else is left out of the
narrative: a sentence in another script, or with an emoji, too, since the gate's reading of
topics is English. Accented letters are read without their accents (:func:`plain`).
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["breaks", "plain", "unreadable"]

# A character the gate does not read: any but printable ASCII; Latin-1's and Latin Extended-A's
# letters and signs (not the soft hyphen, which hides); dashes, quotes, bullets and the ellipsis;
# per mille, primes and angle quotes; currency signs; arrows; four comparison signs and the
# minus; dingbats (✓, ✗).
_UNREAD = re.compile(
    "[^\x20-\x7e\u00a0-\u00ac\u00ae-\u017f\u2010-\u2027\u2030-\u205e\u20a0-\u20cf"
    "\u2190-\u21ff\u2212\u2248\u2260\u2264\u2265\u2700-\u27bf]"
)
# Markup that shows a reader less than it says: a strike-through, an HTML comment or tag.
_HIDES = re.compile(r"~~|<!--|-->|</?[A-Za-z][^>]*>")


def unreadable(text: str) -> str | None:
    """Why ``text`` is not written in what the gate reads (see the module docstring), or ``None``."""
    found = _UNREAD.search(text)
    if found is not None:
        return _why(found[0])
    if _HIDES.search(text):
        return "markup that hides text from a reader"
    return None


def breaks(line: str) -> str | None:
    """Why ``line`` holds a break or control character the gate does not read (a carriage
    return, a line or paragraph separator, a form feed), which a reader may show as a line
    of its own, or ``None``: such a line is read as no sentence of it can be."""
    for ch in _UNREAD.findall(line):
        if ch.isspace() or unicodedata.category(ch) == "Cc":
            return _why(ch)
    return None


def _why(ch: str) -> str:
    return f"a character the gate does not read (U+{ord(ch):04X})"


def plain(text: str) -> str:
    """``text`` with its accents dropped (``text`` itself when it has none): the words a reader sees."""
    if text.isascii():
        return text
    return unicodedata.normalize(
        "NFC", "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    )
