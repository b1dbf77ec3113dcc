"""``lossgate taint set`` and ``lossgate taint list``: a tenant-level taint policy
from the command line, applied at once and recorded in the subject's log."""

from __future__ import annotations

import json

import pytest

import lossgate

BILLING = ["--tenant", "acme-billing"]
TOOL = "tool:invoice.adjust"


def test_taint_set_applies_the_policy_and_the_log_records_it(demo_cli, db_url):
    assert demo_cli("consolidate", *BILLING, "--subject", "cust_482").exit_code == 0
    with lossgate.open(db_url) as memory:
        published = memory.admin.alias("acme-billing", "cust_482").artifact_id
    result = demo_cli(
        "taint",
        "set",
        "invoice-tool",
        *BILLING,
        "--kind",
        "tool_result",
        "--actor",
        TOOL,
        "--trust",
        "untrusted",
        "--reason",
        "adjustments are unverified",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["policy"]["version"] == 1 and outcome["events"] == [["cust_482", "tool-0314-1"]]
    assert outcome["stale_artifacts"] == [["cust_482", published]]
    with lossgate.open(db_url) as memory:
        assert {e.event_id: e.trust for e in memory.events("acme-billing", "cust_482")}["tool-0314-1"] == "untrusted"
        log = [(e.op, e.target_id, e.detail) for e in memory.admin.log("acme-billing", "cust_482")]
        assert ("taint_policy", "invoice-tool") in [(op, t) for op, t, _ in log]
        taint = next(d for op, _, d in log if op == "taint_policy")
        assert (taint["version"], taint["trust"], taint["reason"]) == (1, "untrusted", "adjustments are unverified")
        assert memory.admin.artifact("acme-billing", "cust_482", published).state == "stale"

    again = demo_cli(
        "taint", "set", "invoice-tool", *BILLING, "--kind", "tool_result", "--actor", TOOL, "--trust", "untrusted"
    )
    assert again.exit_code == 0 and "already in force" in again.stdout
    listed = demo_cli("taint", "list", *BILLING, "--json")
    assert [json.loads(line)["policy_id"] for line in listed.stdout.splitlines()] == ["invoice-tool"]
    assert "invoice-tool" in demo_cli("taint", "list", *BILLING).stdout
    assert "no taint policies" in demo_cli("taint", "list", "--tenant", "nobody").stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--trust", "untrusted"],  # matches nothing
        ["--trust", "admin", "--kind", "tool_result"],
        ["--trust", "untrusted", "--kind", "email"],
        ["--trust", "untrusted", "--actor", ""],
        [],  # no trust
    ],
    ids=["no-match", "bad-trust", "bad-kind", "empty-actor", "no-trust"],
)
def test_taint_set_refuses_bad_input_with_exit_2_and_writes_nothing(demo_cli, args):
    result = demo_cli("taint", "set", "p", *BILLING, *args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert demo_cli("taint", "list", *BILLING, "--json").stdout == ""
