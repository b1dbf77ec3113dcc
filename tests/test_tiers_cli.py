"""``lossgate demote`` and ``lossgate tier-policy``: the tier clock from the
command line, with an injectable ``--now``; moves show in ``lossgate lineage``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import lossgate

BILLING = ["--tenant", "acme-billing"]


def test_tier_policy_shows_the_default_and_sets_the_tenants(demo_cli):
    shown = demo_cli("tier-policy", *BILLING, "--json")
    assert shown.exit_code == 0 and json.loads(shown.stdout) == {
        "dormancy_s": 7 * 86400.0,
        "cold_after_s": 90 * 86400.0,
    }
    assert demo_cli("tier-policy", *BILLING, "--dormancy-days", "2").exit_code == 0
    assert json.loads(demo_cli("tier-policy", *BILLING, "--json").stdout)["dormancy_s"] == 2 * 86400.0
    bad = demo_cli("tier-policy", *BILLING, "--dormancy-days", "400")
    assert bad.exit_code != 0


def test_demote_moves_covered_events_to_warm_at_the_given_time_and_lineage_shows_it(demo_cli, db_url):
    assert demo_cli("consolidate", *BILLING, "--subject", "cust_482").exit_code == 0
    soon = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    later = (datetime.now(UTC) + timedelta(days=8)).isoformat()
    early = demo_cli("demote", *BILLING, "--subject", "cust_482", "--now", soon, "--json")
    assert early.exit_code == 0, early.stderr
    assert json.loads(early.stdout)["warm"] == []
    done = demo_cli("demote", *BILLING, "--subject", "cust_482", "--now", later, "--json")
    assert done.exit_code == 0, done.stderr
    moved = json.loads(done.stdout)
    with lossgate.open(db_url) as memory:
        events = memory.events("acme-billing", "cust_482")
        artifact_id = memory.admin.alias("acme-billing", "cust_482").artifact_id
    assert moved["warm"] and set(moved["warm"]) == {e.event_id for e in events if e.tier == "warm"}
    shown = demo_cli("lineage", artifact_id, *BILLING, "--subject", "cust_482")
    assert shown.exit_code == 0 and f"tier hot -> warm: {len(moved['warm'])} events" in shown.stdout
    text = demo_cli("demote", *BILLING, "--now", later)
    assert text.exit_code == 0 and "cust_482: 0 to warm" in text.stdout
    assert demo_cli("demote", *BILLING, "--now", "yesterday").exit_code != 0
