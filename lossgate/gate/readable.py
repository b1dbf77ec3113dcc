"""A model's narrative as an agent reads it, so that the gate reads the same.

A reader, person or model, reads ``ｐｅａｎｕｔｓ`` (fullwidth), ``p\u200beanuts`` (a zero-width
space), ``pe\u0301anuts`` (a combining accent) and ``pеanuts`` (a Cyrillic ``е``) as "peanuts".
A gate that reads code points would not, and a sentence on the ledger's topic would be
published as prose. So lossgate publishes a narrative line in its compatibility form with
no invisible formatting (:func:`readable`), and reads its words once more with the marks
folded and the letters of other scripts that look Latin read as the Latin ones
(:func:`plain`): a word that touches a topic either way touches it.
"""

from __future__ import annotations

import unicodedata

__all__ = ["plain", "readable"]

# Cyrillic and Greek letters drawn as a Latin one (Unicode's confusables for these scripts).
_LOOKALIKE = str.maketrans(
    "аеорсухіјѕԁһԛԝӏүѵАВЕКМНОРСТХІЈЅҮԚԜαορινυκτχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdhqwlyvABEKMHOPCTXIJSYQWaopivuktxABEZHIKMNOPTYX",
)


def readable(line: str) -> str:
    """``line`` as lossgate publishes a narrative line: in Unicode's compatibility form (NFKC:
    fullwidth and styled letters as plain ones), without format characters (zero-width
    spaces and joiners, direction overrides)."""
    if line.isascii():
        return line
    return unicodedata.normalize("NFKC", "".join(ch for ch in line if unicodedata.category(ch) != "Cf"))


def plain(text: str) -> str:
    """``text`` with its combining marks dropped and its Latin look-alikes read as Latin
    (``text`` itself when it has neither): the words a reader sees."""
    if text.isascii():
        return text
    folded = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", folded).translate(_LOOKALIKE)
