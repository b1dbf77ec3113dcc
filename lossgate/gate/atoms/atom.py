"""Value types of the prose fact diff: atoms, changes and the diff itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

AtomKind = Literal[
    "money",
    "quantity",
    "percent",
    "date",
    "datetime",
    "time",
    "identifier",
    "email",
    "phone",
    "negation",
    "party",
]

#: Every atom kind, in declaration order.
ATOM_KINDS: tuple[AtomKind, ...] = get_args(AtomKind)

ChangeReason = Literal[
    "number_changed",
    "currency_changed",
    "unit_changed",
    "date_shifted",
    "time_changed",
    "polarity_flipped",
    "negation_changed",
    "identifier_changed",
    "email_changed",
    "phone_changed",
    "party_changed",
]

#: Every reason an :class:`AtomChange` can carry.
CHANGE_REASONS: tuple[ChangeReason, ...] = get_args(ChangeReason)

#: Key prefix of a negated statement ("not|contact|customer").
NEGATED = "not|"
#: Key prefix of an affirmative clause ("is|contact the customer"). These are
#: kind "negation" because they carry polarity, but they are not facts: they
#: exist only so the diff can tell a dropped negation from a flipped one.
AFFIRMED = "is|"


@dataclass(frozen=True, slots=True)
class Atom:
    """One loss-intolerant fact found in a text.

    ``key`` is the canonical value compared by the diff; ``text`` is the
    surface form and ``start``/``end`` its offsets in the text it came from.
    """

    kind: AtomKind
    key: str
    text: str
    start: int
    end: int


def is_affirmation(atom: Atom) -> bool:
    """Return True for an affirmative-statement helper atom (key ``is|...``).

    Affirmations are only used to detect polarity flips; callers that list
    "the facts of a text" should skip them.
    """
    return atom.kind == "negation" and atom.key.startswith(AFFIRMED)


@dataclass(frozen=True, slots=True)
class AtomChange:
    """A summary atom that is a near miss of a source atom, and why."""

    source: Atom
    summary: Atom
    reason: ChangeReason


@dataclass(frozen=True, slots=True)
class AtomDiff:
    """The result of :func:`diff_atoms`.

    ``missing``: source atoms the summary lost; ``changed``: source atoms the
    summary altered; ``added``: summary atoms the source never had.
    """

    missing: tuple[Atom, ...] = ()
    changed: tuple[AtomChange, ...] = ()
    added: tuple[Atom, ...] = ()

    @property
    def empty(self) -> bool:
        """True when nothing was lost, changed or invented."""
        return not (self.missing or self.changed or self.added)
