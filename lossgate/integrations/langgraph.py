"""A LangGraph store whose items are lossgate memory: :class:`LossgateStore`.

A namespace is ``(tenant, subject, *rest)``: its first label is the lossgate tenant, its
second the subject, the rest (any depth, possibly none) and the key name the item within
that subject. ``LossgateStore(memory, tenant_id="acme")`` serves that one tenant and refuses
a namespace naming another. An item is an event of the subject's raw layer:

* ``put`` appends one event (kind ``document``, the store's ``actor`` and ``trust``), its
  payload ``{"langgraph": {"namespace": rest, "key": key, "value": value}}``, its text the
  words search reads (every top-level field as ``field: value``, or the fields ``index``
  names; none with ``index=False``; up to 65,536 characters). Earlier versions of the item stay in the raw layer, as
  every appended event does; ``get`` returns the newest valid one (``created_at`` the oldest
  valid version's ``recorded_at``, ``updated_at`` the newest's).
* ``delete`` (a put of ``None``) deletes every version of the item with
  :meth:`~lossgate.Memory.delete_event`: text and payload purged, summaries built on them
  stale, recall records that returned them redacted.
* ``search(namespace, query=...)`` ranks through :meth:`~lossgate.Memory.recall` of the
  subject (so it names the tenant and the subject; each such search is a recall, recorded as
  every recall is) and returns the items whose newest version recall found, in its order,
  with no score. Without a query, the items under the prefix, newest first, across the
  tenant's subjects if the prefix names none. ``filter`` matches values as LangGraph's own
  stores do (equality, nested objects, ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``,
  ``$lte``).
* ``list_namespaces`` lists the namespaces holding items of a tenant (named by the prefix,
  or the store's), with LangGraph's prefix, suffix, ``*``, ``max_depth``, ``limit`` and
  ``offset``.

Within a batch, reads see the store as it was before the batch, and its puts (the last one
per item) commit in one transaction. ``abatch`` runs ``batch`` in a worker thread. TTLs are
not supported (lossgate's retention policies expire events instead). Bad input (a namespace
too short, an id lossgate refuses, a value that is not JSON) raises
:class:`~lossgate.errors.InvalidInput`.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from lossgate.api.memory import Memory
from lossgate.errors import InvalidInput
from lossgate.integrations import require
from lossgate.integrations.tagged import TaggedEvents, marked, searchable
from lossgate.model.records import Event, NewEvent, Trust

require("langgraph.store.base", extra="langgraph", framework="LangGraph")

from langgraph.store.base import (  # noqa: E402 - after the check that names the extra
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
    validate_op_namespace,
)

__all__ = ["LossgateStore", "TAG"]

TAG = "langgraph"  # the payload key of the store's events
# A query's search reads this many of recall's hits at first, at least, and at most this
# many when the first reading held too few items under the prefix and filter.
FIRST_HITS = 20
MOST_HITS = 2_000
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


@dataclass(frozen=True)
class _Versions:
    """The stored versions of one item: its valid events, oldest first, and every event
    holding its content (valid or revoked), which a delete erases."""

    valid: tuple[Event, ...]
    held: tuple[str, ...]


class LossgateStore(BaseStore):
    """A LangGraph ``BaseStore`` over ``memory`` (see the module docstring for the mapping).

    ``tenant_id`` limits the store to one tenant; ``actor`` and ``trust`` are those of the
    events it appends (who wrote the item: by default the agent, ``tool`` trust, as
    :meth:`~lossgate.Memory.add` gives a model's words: a fact drawn from an item can forbid an
    action, never authorize one), and the store's items are the events of that kind, actor
    and trust holding its payload (another writer's event posing as an item is none);
    ``index`` the fields whose text search reads (LangGraph's paths, ``"$"`` or ``None``
    for every field), unless a put names its own."""

    supports_ttl = False

    def __init__(
        self,
        memory: Memory,
        *,
        tenant_id: str | None = None,
        actor: str = "agent",
        trust: Trust = "tool",
        index: Sequence[str] | None = None,
    ) -> None:
        self.memory = memory
        self.tenant_id = tenant_id
        self.actor = actor
        self.trust: Trust = trust
        self.index = None if index is None else list(index)
        self._lock = threading.Lock()
        self._subjects: dict[tuple[str, str], TaggedEvents] = {}

    # -- LangGraph's two entry points -----------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        results: list[Result] = [None] * len(ops)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for i, op in enumerate(ops):
            validate_op_namespace(op)  # LangGraph's own label rules: its InvalidNamespaceError
            if isinstance(op, GetOp):
                results[i] = self._get(op)
            elif isinstance(op, SearchOp):
                results[i] = self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list_namespaces(op)
            elif isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = op
            else:
                raise InvalidInput(f"LossgateStore cannot run {type(op).__name__}")
        if puts:
            self._put(list(puts.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- the mapping ----------------------------------------------------------------------
    def _tenant(self, label: str | None, *, wildcard: bool = False) -> str:
        """The tenant a namespace's first label names; none, or a ``*`` where ``wildcard``
        (list_namespaces' paths), names the store's."""
        if label is None or (wildcard and label == "*"):
            if self.tenant_id is None:
                raise InvalidInput(
                    "name the tenant: a namespace is (tenant, subject, ...), or open the store with tenant_id=..."
                )
            return self.tenant_id
        if self.tenant_id is not None and label != self.tenant_id:
            raise InvalidInput(f"this store serves tenant {self.tenant_id!r}, not {label!r}")
        return label

    def _split(self, namespace: tuple[str, ...]) -> tuple[str, str, tuple[str, ...]]:
        if len(namespace) < 2:
            raise InvalidInput(f"a namespace is (tenant, subject, ...): {namespace!r} has {len(namespace)} label(s)")
        return self._tenant(namespace[0]), namespace[1], tuple(namespace[2:])

    def _items(self, tenant_id: str, subject_id: str) -> dict[tuple[tuple[str, ...], str], _Versions]:
        """The subject's items, each with its stored versions."""
        with self._lock:
            events = self._subjects.get((tenant_id, subject_id))
            if events is None:
                events = self._subjects[(tenant_id, subject_id)] = TaggedEvents(
                    self.memory,
                    tenant_id,
                    subject_id,
                    TAG,
                    keep=_well_formed,
                    writes=lambda _: ("document", self.actor, self.trust),
                )
        valid: dict[tuple[tuple[str, ...], str], list[Event]] = {}
        held: dict[tuple[tuple[str, ...], str], list[str]] = {}
        for event in events.read():
            item = marked(event, TAG)
            assert item is not None  # kept by TaggedEvents only when it is
            where = (tuple(item["namespace"]), item["key"])
            held.setdefault(where, []).append(event.event_id)
            if event.state == "valid":
                valid.setdefault(where, []).append(event)
        return {where: _Versions(tuple(valid.get(where, ())), tuple(ids)) for where, ids in held.items()}

    def _subjects_of(self, tenant_id: str, subject: str | None, *, wildcard: bool = False) -> list[str]:
        """The subject a prefix names, or every subject of the tenant when it names none (or a
        ``*`` where ``wildcard``)."""
        if subject is None or (wildcard and subject == "*"):
            return self.memory.admin.subjects(tenant_id)
        return [subject]

    # -- reads ----------------------------------------------------------------------------
    def _get(self, op: GetOp) -> Item | None:
        tenant_id, subject_id, rest = self._split(tuple(op.namespace))
        versions = self._items(tenant_id, subject_id).get((rest, op.key))
        return _item(tenant_id, subject_id, rest, op.key, versions) if versions and versions.valid else None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if op.limit < 0 or op.offset < 0:
            raise InvalidInput(f"limit and offset are at least 0 (got {op.limit}, {op.offset})")
        _check_filter(op.filter)
        tenant_id = self._tenant(prefix[0] if prefix else None)
        rest = prefix[2:]
        wanted = op.offset + op.limit
        if op.query is not None and op.query.strip():
            if len(prefix) < 2:
                raise InvalidInput(
                    "a search with a query names the tenant and the subject "
                    "(namespace_prefix=(tenant, subject, ...)): recall ranks one subject's memory"
                )
            found = self._ranked(tenant_id, prefix[1], rest, op.query, op.filter, wanted)
        else:
            found = []
            for subject_id in self._subjects_of(tenant_id, prefix[1] if len(prefix) > 1 else None):
                for (ns, key), versions in self._items(tenant_id, subject_id).items():
                    if versions.valid and ns[: len(rest)] == rest and _matches(_value(versions), op.filter):
                        found.append(_item(tenant_id, subject_id, ns, key, versions))
            found.sort(key=lambda item: item.updated_at, reverse=True)
        return [_searched(item) for item in found[op.offset : wanted]]

    def _ranked(
        self,
        tenant_id: str,
        subject_id: str,
        rest: tuple[str, ...],
        query: str,
        filter: dict[str, Any] | None,
        wanted: int,
    ) -> list[Item]:
        """The items under ``rest`` whose newest version a recall of ``query`` returned, in
        recall's order, as many as ``wanted`` if that many match."""
        hits = max(FIRST_HITS, 4 * wanted)
        while True:
            items = self._items(tenant_id, subject_id)
            newest = {
                versions.valid[-1].event_id: (where, versions) for where, versions in items.items() if versions.valid
            }
            result = self.memory.recall(tenant_id, subject_id, query=query, k=hits, context=False)
            returned = {e.event_id for e in result.events}
            found: list[Item] = []
            for event_id in result.record.candidate_ids:  # in relevance order
                if event_id not in returned or event_id not in newest:
                    continue
                (ns, key), versions = newest[event_id]
                if ns[: len(rest)] == rest and _matches(_value(versions), filter):
                    found.append(_item(tenant_id, subject_id, ns, key, versions))
            if len(found) >= wanted or len(returned) < hits or hits >= MOST_HITS:
                return found
            hits = min(MOST_HITS, hits * 4)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        prefix = next((c.path for c in conditions if c.match_type == "prefix"), ())
        tenant_id = self._tenant(prefix[0] if prefix else None, wildcard=True)
        subjects = self._subjects_of(tenant_id, prefix[1] if len(prefix) > 1 else None, wildcard=True)
        namespaces = {
            (tenant_id, subject_id, *ns)
            for subject_id in subjects
            for (ns, _), versions in self._items(tenant_id, subject_id).items()
            if versions.valid
        }
        kept = [ns for ns in namespaces if all(_namespace_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            kept = list({ns[: op.max_depth] for ns in kept})
        return sorted(kept)[op.offset : op.offset + op.limit]

    # -- writes ---------------------------------------------------------------------------
    def _put(self, ops: list[PutOp]) -> None:
        appended: list[NewEvent] = []
        erased: list[tuple[str, str, str]] = []
        for op in ops:
            tenant_id, subject_id, rest = self._split(tuple(op.namespace))
            if op.value is None:
                versions = self._items(tenant_id, subject_id).get((rest, op.key))
                erased += [(tenant_id, subject_id, event_id) for event_id in (versions.held if versions else ())]
                continue
            if not isinstance(op.value, Mapping):
                raise InvalidInput(f"an item's value is a mapping, not {type(op.value).__name__}")
            if op.ttl is not None:
                raise InvalidInput("LossgateStore keeps no TTL (a tenant's retention policy expires events)")
            value = dict(op.value)
            text = _text(value, self.index if op.index is None else op.index)
            appended.append(
                NewEvent(
                    tenant_id=tenant_id,
                    subject_id=subject_id,
                    event_id=f"lg-{uuid.uuid4().hex}",
                    kind="document",
                    actor=self.actor,
                    trust=self.trust,
                    text=searchable(text),
                    payload={TAG: {"namespace": list(rest), "key": op.key, "value": value}},
                )
            )
        if not appended and not erased:
            return
        with self.memory.transaction() as ledger:
            if appended:
                ledger.append(appended)
            for tenant_id, subject_id, event_id in erased:
                ledger.delete_event(tenant_id, subject_id, event_id, reason="LangGraph store: item deleted")


def _well_formed(item: dict[str, Any]) -> bool:
    namespace, key = item.get("namespace"), item.get("key")
    return (
        isinstance(namespace, list)
        and all(isinstance(label, str) for label in namespace)
        and isinstance(key, str)
        and isinstance(item.get("value"), dict)
    )


def _value(versions: _Versions) -> dict[str, Any]:
    item = marked(versions.valid[-1], TAG)
    assert item is not None
    return dict(item["value"])


def _item(tenant_id: str, subject_id: str, rest: tuple[str, ...], key: str, versions: _Versions) -> Item:
    created: datetime = versions.valid[0].recorded_at
    return Item(
        value=_value(versions),
        key=key,
        namespace=(tenant_id, subject_id, *rest),
        created_at=created,
        updated_at=versions.valid[-1].recorded_at,
    )


def _searched(item: Item) -> SearchItem:
    return SearchItem(
        namespace=item.namespace, key=item.key, value=item.value, created_at=item.created_at, updated_at=item.updated_at
    )


def _text(value: dict[str, Any], index: Sequence[str] | Literal[False] | None) -> str:
    """The words search reads of an item: nothing with ``index=False``; the text at each of
    ``index``'s paths; else each top-level field as ``field: value``."""
    if index is False:
        return ""
    if index is None or list(index) == ["$"]:
        return "\n".join(f"{field}: {v if isinstance(v, str) else _json(v)}" for field, v in value.items())
    return "\n".join(text for path in index for text in get_text_at_path(value, path))


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"an item's value must be JSON: {exc}") from exc


def _check_filter(filter: dict[str, Any] | None) -> None:
    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                if isinstance(key, str) and key.startswith("$") and key not in OPERATORS:
                    raise InvalidInput(f"filter operator {key!r} is not one of {', '.join(OPERATORS)}")
                walk(child)

    if filter is not None and not isinstance(filter, dict):
        raise InvalidInput(f"a filter is an object, not {type(filter).__name__}")
    walk(filter)


def _matches(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    return not filter or all(_compare(value.get(field), wanted) for field, wanted in filter.items())


def _compare(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: an object of ``$`` operators compares, another object
    matches field by field, a list element by element, anything else by equality."""
    if isinstance(wanted, dict):
        if any(key.startswith("$") for key in wanted):
            return all(_operator(value, key, operand) for key, operand in wanted.items())
        return isinstance(value, dict) and all(_compare(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(wanted)
            and all(_compare(a, b) for a, b in zip(value, wanted, strict=False))
        )
    return bool(value == wanted)


def _operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (value, operand))
    if not numbers and not (isinstance(value, str) and isinstance(operand, str)):
        return False  # an order between a number and a text, or a missing field: no match
    if operator == "$gt":
        return bool(value > operand)
    if operator == "$gte":
        return bool(value >= operand)
    if operator == "$lt":
        return bool(value < operand)
    return bool(value <= operand)


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)
