"""What the test modules share, imported like any library.

A test module never imports another test module or a conftest (``tests/test_layout.py``
fails if one does): what more than one module needs lives here, in a module named for
what it holds. Fixtures stay in the conftests; the plain helpers they use are here.

* :mod:`tests.support.world`: the seeded reference subject and the builders and queries
  the consolidation scenarios share;
* :mod:`tests.support.hierarchy` and :mod:`tests.support.tail`: the multi-session subject
  of the hierarchy tests and the tail-growth helpers;
* :mod:`tests.support.stores`: a database of either engine for a module or a session;
* :mod:`tests.support.threads`: writers raced against each other in threads;
* :mod:`tests.support.cli`: the gate's commands on an app of their own, and what a
  refused CLI command prints;
* :mod:`tests.support.service`, :mod:`tests.support.client`: the served memory, over
  HTTP in this process or as a ``lossgate serve`` process;
* :mod:`tests.support.inspection`: the inspection page's demo subject and its server;
* :mod:`tests.support.gate`: gate cases built from compact specs, parsed and checked;
  :mod:`tests.support.shipped_cases`: the gate cases lossgate ships, by id;
* :mod:`tests.support.locomo`: a small LoCoMo-shaped conversation.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The example predicate registry: the one most tests load.
REGISTRY_PATH = ROOT / "examples" / "predicates.toml"
