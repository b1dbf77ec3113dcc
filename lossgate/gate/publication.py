"""What lossgate publishes of a compressor's body: one step, wherever a body is judged.

Between a compressor and the gate, lossgate rewrites the summary in two ways that no
compressor can avoid (:func:`as_published`): the narrative sentences on a topic only the
ledger states are left out, or, under a tenant's ``refuse`` policy, refuse the body
(:mod:`lossgate.gate.narrative`); and every line that states a superseded value, or one
side of an open conflict, ends in lossgate's marker, any marker the compressor wrote being
read again from the ledger (:mod:`lossgate.gate.superseded`). Consolidation, the daily
metrics, the mutation and narrative lanes and diagnosis bundles all call this, so what they
judge is what recall would serve.
"""

from __future__ import annotations

from dataclasses import dataclass

from lossgate.gate.narrative import Omitted, speak_for_ledger, touching_violations
from lossgate.gate.outcome import Violation
from lossgate.gate.preserve import MustPreserve
from lossgate.gate.prose import structured_lines
from lossgate.gate.superseded import Retired, mark, strip_markers
from lossgate.model.records import ArtifactBody, Snapshot
from lossgate.model.registry import Registry

__all__ = ["Published", "as_published"]


@dataclass(frozen=True)
class Published:
    """The body as lossgate would publish it, and the narrative sentences on a topic only the
    ledger states (``touching``): left out of ``body``, or, when ``refused`` (the ``refuse``
    policy), kept in it, the body refused for them."""

    body: ArtifactBody
    touching: tuple[Omitted, ...] = ()
    refused: bool = False

    @property
    def omitted(self) -> tuple[Omitted, ...]:
        """The sentences left out of ``body``."""
        return () if self.refused else self.touching

    @property
    def refusals(self) -> tuple[Violation, ...]:
        """``narrative_touches_topic`` for each touching sentence, when they refuse the body."""
        return tuple(touching_violations(self.touching)) if self.refused else ()


def as_published(
    snapshot: Snapshot,
    body: ArtifactBody,
    must: MustPreserve,
    registry: Registry,
    *,
    retired: tuple[Retired, ...],
    policy: str = "omit",
    quoted: frozenset[str] = frozenset(),
) -> Published:
    """``body`` as lossgate publishes it (see the module docstring). ``retired``: the
    subject's superseded values and conflict sides (:func:`~lossgate.gate.superseded.retired_values`);
    ``quoted``: lines known to quote events ``snapshot`` does not hold (a parent's)."""
    bare = body.model_copy(update={"summary": strip_markers(body.summary)})
    spoken, touching = speak_for_ledger(snapshot, bare, must, registry, quoted=quoted)
    refused = bool(touching) and policy == "refuse"
    kept = bare if refused else spoken
    marked = kept.model_copy(update={"summary": mark(kept.summary, retired, structured_lines(kept))})
    return Published(body=marked, touching=touching, refused=refused)
