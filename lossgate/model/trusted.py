"""Records built without validation, from values lossgate itself validated.

A consolidation of a long history builds a record per input several times over (an
:class:`~lossgate.model.derived_records.InputRef` per event, a lineage edge per input, a
gate finding per atom a digest leaves out): 100,000 to 300,000 records at 50,000 events,
about a second in pydantic's validation. Their values are fields of records already
validated (an event's id, seq and hash) or constants of the code (a finding's code and
severity), so validating them again can refuse nothing.

:func:`trusted` builds the very record validation would: equal, the same ``model_dump``
and JSON in the same key order, the same ``repr`` and hash, frozen, with the same set
fields. ``tests/test_trusted_records.py`` compares the two for every record built here.
The store builds the rows it reads back the same way (:mod:`lossgate.store.rows`: it wrote
them from validated records; ``tests/conformance/test_trusted_rows.py`` compares rows of every
shape on both stores). pydantic's ``model_construct`` does the same but walks every field for
defaults, which costs more than validating.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["trusted"]

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_set = object.__setattr__


def trusted(cls: type[M], given: frozenset[str], values: dict[str, Any]) -> M:
    """A ``cls`` holding ``values``, unvalidated.

    ``values`` must hold every field of ``cls`` in the order ``cls`` declares them, each of
    the type validation would give it (a tuple, not a list; a ``str`` for a ``Literal``);
    ``given``, the fields a validating call would have been passed (the others at their
    defaults, which must be immutable: pydantic copies no default here)."""
    obj = _new(cls)
    _set(obj, "__dict__", values)
    _set(obj, "__pydantic_fields_set__", set(given))
    _set(obj, "__pydantic_extra__", None)
    _set(obj, "__pydantic_private__", None)
    return obj
