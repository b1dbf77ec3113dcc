"""A tenant's consolidation configuration, rolled out safely: live,
shadow, and human review.

A tenant's :class:`Rollout` (kept in its settings record, with the history of changes):

* ``live``: the compressor (a spec: ``deterministic``, ``chat`` or ``module:Class``, see
  :func:`~lossgate.consolidate.factory.load_compressor`) that builds what is published.
  Unset, a job uses what its caller or worker was given. Switching it changes what the
  next job builds; publication is the same compare-and-swap.
* ``shadow``: a second compressor that, after every live job of the tenant, builds, gates
  and stores its own artifact from the same inputs, in the ``shadow`` state, and publishes
  it to the subject's *shadow alias* (:func:`~lossgate.publication.switch.shadow_switch`, fenced like
  the alias): never served by recall, never a live parent, never reused by live, its
  failures queue nothing. :func:`shadow_report` compares it with live: outcomes, fact
  sets, violations, tokens and time.
* ``shadow_gate``: how the shadow lane's gate decides. ``release`` (the default) is the
  live gate: a summary it refuses goes nowhere. ``exploratory`` blocks nothing: every
  violation is recorded on the attempt (and counted by the daily metrics) and the summary
  is still published to the shadow alias, so a new compressor or registry can be tried on
  real subjects and read whole, without any agent reading it.
* ``shadow_registry``: a predicate registry document the shadow lane builds and gates with
  instead of the loaded one (the registry being tried); checked when it is set.
* ``review``: every gated artifact waits in the ``review`` state until a person approves
  it (:func:`approve`: published through the same switch, which refuses it if anything
  moved since it was built) or refuses it (:func:`refuse`: ``refused``, kept, never
  published, never compressor input; a hierarchy's waiting parts are refused with it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from lossgate.errors import InvalidInput, NotFound
from lossgate.model.derived_records import Artifact, Attempt
from lossgate.model.registry import Registry, parse_registry
from lossgate.store.protocol import ReadTx, WriteTx

__all__ = [
    "Rollout",
    "rollout",
    "set_rollout",
    "review_required",
    "approve",
    "refuse",
    "ShadowRow",
    "shadow_report",
    "valid_spec",
]

_KEY = "rollout"
_FIELDS = ("live", "shadow", "review", "shadow_gate", "shadow_registry")


def valid_spec(spec: str) -> str:
    """``spec`` if it names a compressor the way the factory reads it, else InvalidInput
    (whether it loads is checked where it is loaded: a model's settings live in the
    environment of the process that runs it)."""
    module, colon, attr = spec.partition(":")
    if spec in ("deterministic", "chat") or (colon and module and attr and " " not in spec):
        return spec
    raise InvalidInput(f"compressor {spec!r}: expected deterministic, chat or MODULE:CLASS")


class Rollout(BaseModel):
    """A tenant's consolidation configuration (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    live: str | None = None
    shadow: str | None = None
    review: bool = False
    shadow_gate: Literal["release", "exploratory"] = "release"
    shadow_registry: dict[str, Any] | None = None

    @field_validator("live", "shadow")
    @classmethod
    def _spec(cls, value: str | None) -> str | None:
        return None if value is None else valid_spec(value)

    @field_validator("shadow_registry")
    @classmethod
    def _registry(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            parse_registry(value)  # a registry that cannot be read is refused now, not in a job
        return value

    @model_validator(mode="after")
    def _needs_shadow(self) -> Rollout:
        if self.shadow is None and (self.shadow_gate != "release" or self.shadow_registry is not None):
            raise ValueError("an exploratory gate or a shadow registry needs a shadow compressor")
        return self

    def registry(self) -> Registry | None:
        """The shadow lane's own registry, if it tries one."""
        return None if self.shadow_registry is None else parse_registry(self.shadow_registry)


def rollout(tx: ReadTx, tenant_id: str) -> Rollout:
    """The tenant's rollout (the defaults if it never set one)."""
    record = tx.tenant_settings(tenant_id).get(_KEY) or {}
    return Rollout.model_validate({k: record[k] for k in _FIELDS if k in record})


def review_required(tx: ReadTx, tenant_id: str) -> bool:
    return rollout(tx, tenant_id).review


def set_rollout(tx: WriteTx, tenant_id: str, new: Rollout, *, now: datetime) -> Rollout:
    """Store ``new`` as the tenant's rollout, keeping the history of earlier ones."""
    settings = tx.tenant_settings(tenant_id)
    old = settings.get(_KEY) or {}
    # what each earlier rollout was; a registry tried in shadow by its version
    earlier = {k: old[k] for k in (*_FIELDS, "at") if k in old and k != "shadow_registry"}
    if old.get("shadow_registry") is not None:
        earlier["shadow_registry_version"] = old["shadow_registry"].get("version")
    history = [*old.get("history", []), earlier] if old else []
    settings[_KEY] = {**new.model_dump(), "at": now.isoformat(), "history": history[-50:]}
    tx.save_tenant_settings(tenant_id, settings, at=now)
    return new


def _waiting(tx: WriteTx, tenant_id: str, subject_id: str, artifact_id: str) -> Artifact:
    art = tx.artifact(tenant_id, subject_id, artifact_id)
    if art is None:
        raise NotFound(f"artifact {artifact_id} does not exist for tenant {tenant_id!r}, subject {subject_id!r}")
    if art.state != "review":
        raise InvalidInput(f"artifact {artifact_id} is {art.state}, not waiting for review")
    return art


def approve(tx: WriteTx, tenant_id: str, subject_id: str, artifact_id: str, *, now: datetime) -> tuple[bool, str]:
    """Publish a waiting artifact through the switch. Returns (published, why not). One
    the switch refuses (an input, the epoch or the alias moved since it was built) can
    never win and is ``abandoned``, saying why."""
    from lossgate.lineage import queue
    from lossgate.publication.switch import switch

    art = _waiting(tx, tenant_id, subject_id, artifact_id)
    result = switch(tx, art, now=now, states=("review",))
    if not result.published:
        tx.set_artifact_state(
            tenant_id,
            subject_id,
            [artifact_id],
            "abandoned",
            from_states=["review"],
            reason=f"approved, but {result.reason}",
        )
        queue.switch_refused(tx, tenant_id, subject_id, result.reason, now=now)  # a rebuild, for the next review
    tx.add_log(
        tenant_id,
        subject_id,
        at=now,
        op="review",
        target_id=artifact_id,
        detail={"decision": "approved", "published": result.published, "reason": result.reason},
    )
    return result.published, result.reason


def refuse(tx: WriteTx, tenant_id: str, subject_id: str, artifact_id: str, *, reason: str, now: datetime) -> None:
    """Refuse a waiting artifact (and a hierarchy's parts waiting with it): kept, never
    published, never compressor input."""
    art = _waiting(tx, tenant_id, subject_id, artifact_id)
    why = f"refused in review: {reason}" if reason else "refused in review"
    tx.set_artifact_state(tenant_id, subject_id, [artifact_id], "refused", from_states=["review"], reason=why)
    if art.manifest.children:
        # its own parts, not those another waiting summary also stands on
        others = {
            c
            for a in tx.artifacts(tenant_id, subject_id, states=["review"])
            if a.artifact_id != artifact_id
            for c in a.manifest.children
        }
        mine = sorted(set(art.manifest.children) - others)
        if mine:
            tx.set_artifact_state(
                tenant_id,
                subject_id,
                mine,
                "refused",
                from_states=["candidate"],
                reason=f"part of {artifact_id}, {why}",
            )
    tx.add_log(
        tenant_id,
        subject_id,
        at=now,
        op="review",
        target_id=artifact_id,
        detail={"decision": "refused", "reason": reason},
    )


@dataclass(frozen=True)
class ShadowRow:
    """One subject's latest shadow attempt beside its latest live one."""

    subject_id: str
    live_compressor: str
    shadow_compressor: str
    live_status: str
    shadow_status: str
    live_outcome: str | None
    shadow_outcome: str | None
    only_live: tuple[str, ...]  # fact ids claimed by live only
    only_shadow: tuple[str, ...]
    # fact ids both claim, the shadow with another value, polarity, qualifiers or modality
    changed: tuple[str, ...]
    live_tokens: int | None
    shadow_tokens: int | None
    live_compress_s: float | None
    shadow_compress_s: float | None
    shadow_violations: int = 0  # what the latest shadow attempt's gate found (an exploratory one publishes anyway)
    shadow_alias: str | None = None  # the artifact on the subject's shadow alias
    shadow_alias_state: str | None = None

    def record(self) -> dict[str, Any]:
        return dict(self.__dict__)


def shadow_report(tx: ReadTx, tenant_id: str, count: Any) -> list[ShadowRow]:
    """For each subject of the tenant with a shadow attempt: its latest shadow attempt and
    its latest live one, side by side (the facts only one claims, and those both claim that
    the shadow states otherwise), and what the shadow alias holds (``count`` counts a
    summary's tokens)."""
    rows: list[ShadowRow] = []
    for subject_id in tx.subjects(tenant_id):
        attempts = tx.attempts(tenant_id, subject_id)
        shadow = next((a for a in reversed(attempts) if a.lane == "shadow"), None)
        if shadow is None:
            continue
        live = next((a for a in reversed(attempts) if a.lane == "live"), None)
        arts = {a.attempt_id: _artifact(tx, tenant_id, subject_id, a) for a in (live, shadow) if a is not None}
        live_art, shadow_art = (arts.get(a.attempt_id) if a else None for a in (live, shadow))
        on_alias = tx.alias(tenant_id, subject_id, lane="shadow").artifact_id
        head = tx.artifact_gate(tenant_id, subject_id, on_alias) if on_alias else None
        live_said = _claimed(live_art)
        shadow_said = _claimed(shadow_art)
        live_claims, shadow_claims = set(live_said), set(shadow_said)
        rows.append(
            ShadowRow(
                subject_id=subject_id,
                live_compressor=live.compressor if live else "-",
                shadow_compressor=shadow.compressor,
                live_status=live.status if live else "-",
                shadow_status=shadow.status,
                live_outcome=live.gate_outcome if live else None,
                shadow_outcome=shadow.gate_outcome,
                only_live=tuple(sorted(live_claims - shadow_claims)),
                only_shadow=tuple(sorted(shadow_claims - live_claims)),
                changed=tuple(sorted(f for f in live_claims & shadow_claims if live_said[f] != shadow_said[f])),
                live_tokens=count(live_art.body.summary) if live_art else None,
                shadow_tokens=count(shadow_art.body.summary) if shadow_art else None,
                live_compress_s=live.timings.get("compress_s") if live else None,
                shadow_compress_s=shadow.timings.get("compress_s"),
                shadow_violations=len(shadow.violations),
                shadow_alias=on_alias,
                shadow_alias_state=head[0] if head else None,
            )
        )
    return rows


def _claimed(art: Artifact | None) -> dict[str, Any]:
    """What each claim of ``art`` says, by fact id."""
    return (
        {
            c.fact_id: c.model_dump(include={"value_type", "value", "polarity", "qualifiers", "modality"})
            for c in art.body.claims
        }
        if art
        else {}
    )


def _artifact(tx: ReadTx, tenant_id: str, subject_id: str, attempt: Attempt) -> Artifact | None:
    return tx.artifact(tenant_id, subject_id, attempt.artifact_id) if attempt.artifact_id else None
