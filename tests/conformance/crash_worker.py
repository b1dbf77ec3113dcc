"""Run one consolidation and die by SIGKILL after the artifact is stored, before the switch.

    python tests/conformance/crash_worker.py URL TENANT SUBJECT

Used by ``test_consolidation.py`` as a subprocess: a real crash (no ``finally``, no
rollback handler, no atexit) at the worst moment of a consolidation. Before dying it
prints ``CANDIDATE <artifact_id>`` so the parent knows which orphan to look for.
"""

from __future__ import annotations

import os
import signal
import sys

import lossgate
from lossgate.consolidate.pipeline import Hooks


def _die_before_switch(artifact) -> None:
    print(f"CANDIDATE {artifact.artifact_id} {artifact.state}", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def main(url: str, tenant: str, subject: str) -> None:
    memory = lossgate.open(url)
    attempt = memory.admin.consolidator(hooks=Hooks(before_switch=_die_before_switch)).run(tenant, subject)
    # Only reached if the gate refused (no switch to die before): say so, fail the parent's check.
    print(f"NO-SWITCH {attempt.status} {attempt.violations} {attempt.error}", flush=True)
    sys.exit(3)


if __name__ == "__main__":
    main(*sys.argv[1:4])
