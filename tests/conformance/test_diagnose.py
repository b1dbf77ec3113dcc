"""Diagnosis bundles: on four planted failures, the bundle names the
right first divergent boundary, on both stores, through the API and the CLI.

Each failure is planted with real components: (1) an attempt whose recorded selection left
out a source event, its output written by the deterministic compressor from that selection
and gated by the real gate, stored through the store's write transaction; (2) a lossy
compressor double; (3) a stored artifact's body altered through the store after a clean
publication (a bool became the string ``"true"``); (4) a real query recall whose budget
dropped a fact the published artifact claims.
"""

from __future__ import annotations

import json
import tarfile
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lossgate import InvalidInput, NewEvent, NewFact, NotFound
from lossgate.cli import app
from lossgate.consolidate.compressor import CompressionRequest
from lossgate.consolidate.deterministic import DeterministicCompressor
from lossgate.consolidate.selection import SELECTOR_VERSION, select
from lossgate.gate import build_must_preserve, check
from lossgate.model.derived_records import Artifact, Attempt, Manifest
from lossgate.model.records import ArtifactBody, utcnow
from lossgate.ops.diagnose import diagnose, write_bundle
from lossgate.testing.compressors import DropCriticalClaim, LossyCompressor

T, S = "acme", "user-17"
TEXTS = {
    "e-allergy": "I am allergic to peanuts, not merely avoiding them.",
    "e-tz": "Please keep my calendar on timezone UTC+01:00 from now on.",
    "e-chat": "The garden looks lovely after the rain this morning.",
}


def world(memory):
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id=i, text=text) for i, text in TEXTS.items()])
    memory.assert_facts(
        [
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="f-allergy",
                predicate="food.peanuts_allowed",
                value=False,
                qualifiers={"basis": "allergy", "severity": "critical"},
                source_event_ids=["e-allergy"],
            ),
            NewFact(
                tenant_id=T,
                subject_id=S,
                fact_id="f-tz",
                predicate="timezone",
                value="UTC+01:00",
                source_event_ids=["e-tz"],
            ),
        ]
    )
    return memory


def published(memory):
    world(memory)
    attempt = memory.consolidate(T, S)
    assert attempt.status == "published" and attempt.gate_outcome == "clean"
    return attempt


def findings(bundle, boundary):
    return [(f.code, f.subject) for f in bundle.check(boundary).findings]


def bundle_texts(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.json")))


# -- (1) selection ---------------------------------------------------------------------------


def plant_selection_drop(memory, dropped: str) -> Attempt:
    """An attempt whose recorded selection left out ``dropped`` (and so the fact it supports):
    the deterministic compressor writes what that selection would give it, the real gate
    judges it against the whole snapshot, and both records go through the store."""
    registry = memory.admin.registry
    with memory.store.write() as tx:
        sel = select(tx, T, S, registry, incremental=False)
        lost = {f.fact_id for f in sel.facts if dropped in f.source_event_ids}
        facts = tuple(f for f in sel.facts if f.fact_id not in lost)
        events = tuple(e for e in sel.events if e.event_id != dropped)
        raw = DeterministicCompressor().compress(
            CompressionRequest(
                tenant_id=T,
                subject_id=S,
                facts=facts,
                predicates={f.predicate: registry.get(f.predicate) for f in facts},
                events=events,
                budget_tokens=2000,
            )
        )
        body = ArtifactBody.model_validate(raw)
        result = check(sel.snapshot, body, registry, must=build_must_preserve(sel.snapshot, registry))
        assert not result.passed
        inputs = tuple(r for r in sel.inputs if r.id != dropped and r.id not in lost)
        number = tx.attempt_tail(T, S)[0] + 1
        art_id = f"art-{S}-planted-{uuid.uuid4().hex[:6]}"
        now = utcnow()
        manifest = Manifest(
            artifact_id=art_id,
            tenant_id=T,
            subject_id=S,
            new_covers_through=sel.snapshot.clock.high_water,
            input_epoch=sel.snapshot.clock.input_epoch,
            expected_alias=sel.expected,
            inputs=inputs,
            input_root=sel.input_root,
            path="direct",
            selector_version=SELECTOR_VERSION,
            prompt_version="render-v1",
            compressor="deterministic",
            compressor_version="1",
            extractor_version="atoms-v1",
            schema_version=memory.store.schema_version(),
            registry_version=registry.version,
            attempt=number,
        )
        tx.insert_artifact(
            Artifact(
                artifact_id=art_id,
                tenant_id=T,
                subject_id=S,
                state="failed",
                body=body,
                manifest=manifest,
                gate={
                    "outcome": result.outcome,
                    "violations": result.lines(),
                    "losses": [str(v) for v in result.losses],
                },
                created_at=now,
            ),
            [],
        )
        attempt = Attempt(
            attempt_id=f"att-planted-{uuid.uuid4().hex[:8]}",
            tenant_id=T,
            subject_id=S,
            number=number,
            status="rejected",
            started_at=now,
            finished_at=now,
            high_water=sel.snapshot.clock.high_water,
            input_epoch=sel.snapshot.clock.input_epoch,
            expected_alias=sel.expected,
            selected_ids=tuple(r.id for r in inputs),
            input_root=sel.input_root,
            compressor="deterministic@1",
            artifact_id=art_id,
            gate_outcome=result.outcome,
            violations=tuple(result.lines()),
            raw_output=json.dumps(raw, sort_keys=True),
        )
        tx.save_attempt(attempt)
    return attempt


def test_an_event_dropped_by_selection_is_named_at_selection(memory):
    world(memory)
    attempt = plant_selection_drop(memory, "e-allergy")
    bundle = diagnose(memory, T, S, attempt.attempt_id)
    assert bundle.first_divergent == "selection"
    assert findings(bundle, "selection") == [("fact_not_selected", "f-allergy"), ("source_not_selected", "e-allergy")]
    # what follows from it is seen too, but it is not where the loss began
    assert ("missing", "f-allergy") in findings(bundle, "compression")
    assert bundle.check("storage").status == "ok"
    assert [f.fact_id for f in bundle.expected] == ["f-allergy", "f-tz"]
    assert {e.event_id: e.selected for e in bundle.events}["e-allergy"] is False


# -- (2) compression -------------------------------------------------------------------------


def test_a_fact_dropped_by_the_compressor_is_named_at_compression(memory):
    world(memory)
    attempt = memory.consolidate(T, S, compressor=DropCriticalClaim())
    assert attempt.status == "rejected" and attempt.raw_output
    bundle = diagnose(memory, T, S, attempt.attempt_id)
    assert bundle.first_divergent == "compression"
    assert bundle.check("selection").status == "ok"
    assert findings(bundle, "compression") == [("missing", "f-allergy")]
    assert bundle.check("compression").findings[0].severity == "critical"
    assert bundle.check("storage").status == "ok"  # the failed artifact was stored as produced
    assert bundle.check("retrieval").status == "unchecked"  # never published, never recalled
    assert bundle.gate.violations == ("f-allergy:missing",) and bundle.gate.gate_outcome == "failed"


# -- (3) storage -----------------------------------------------------------------------------


def test_a_value_changed_by_storage_is_named_with_both_types(memory):
    attempt = published(memory)
    stored = memory.admin.artifact(T, S, attempt.artifact_id)
    claims = tuple(
        c.model_copy(update={"value": "true"}) if c.fact_id == "f-allergy" else c for c in stored.body.claims
    )
    with memory.store.write() as tx:
        tx.replace_artifact_body(T, S, attempt.artifact_id, stored.body.model_copy(update={"claims": claims}))
    bundle = diagnose(memory, T, S, attempt.attempt_id)
    assert bundle.first_divergent == "storage"
    assert bundle.check("selection").status == "ok" and bundle.check("compression").status == "ok"
    first = bundle.check("storage").findings[0]
    assert (first.code, first.subject) == ("type_changed", "claims[f-allergy].value")
    assert (first.expected_type, first.observed_type) == ("bool", "str")
    assert (first.expected, first.observed) == (False, "true")
    assert len(bundle.check("storage").findings) == 1
    assert bundle.gate.readback_contract == ("f-allergy:value_changed",)
    assert bundle.immediate["claims"][0]["value"] is False and bundle.readback.body["claims"][0]["value"] == "true"


# -- (4) retrieval ---------------------------------------------------------------------------


def test_a_fact_recall_did_not_select_is_named_at_retrieval(memory):
    attempt = published(memory)
    result = memory.recall(T, S, query="which timezone is my calendar on?", budget=1)
    assert result.mode == "summary" and "f-tz" in result.record.candidate_ids
    assert "f-tz" not in result.record.selected_ids
    bundle = diagnose(memory, T, S, attempt.attempt_id)
    assert bundle.first_divergent == "retrieval"
    assert [c.status for c in bundle.checks[:3]] == ["ok", "ok", "ok"]
    (finding,) = bundle.check("retrieval").findings
    assert (finding.code, finding.subject, finding.recall_id) == ("not_selected", "f-tz", result.record.recall_id)
    assert [r.recall_id for r in bundle.recalls] == [result.record.recall_id]


def test_a_planted_recall_that_left_out_a_critical_fact_is_named_at_retrieval(memory):
    attempt = published(memory)
    record = memory.recall(T, S).record
    planted = record.model_copy(
        update={
            "recall_id": "rc-planted",
            "at": utcnow(),
            "selected_ids": tuple(i for i in record.selected_ids if i != "f-allergy"),
        }
    )
    with memory.store.write() as tx:
        tx.insert_recall(planted)
    bundle = diagnose(memory, T, S, attempt.attempt_id)
    assert bundle.first_divergent == "retrieval"
    assert [(f.subject, f.recall_id, f.severity) for f in bundle.check("retrieval").findings] == [
        ("f-allergy", "rc-planted", "critical")
    ]


# -- no false alarm --------------------------------------------------------------------------


def test_a_clean_publication_and_an_incremental_one_diverge_nowhere(memory):
    first = published(memory)
    memory.recall(T, S)
    memory.recall(T, S, query="timezone")
    bundle = diagnose(memory, T, S, first.attempt_id)
    assert bundle.first_divergent is None and [c.status for c in bundle.checks] == ["ok"] * 4 + ["unchecked"]
    assert bundle.note == "no boundary diverged; not checked: response" and len(bundle.recalls) == 2
    memory.append([NewEvent(tenant_id=T, subject_id=S, event_id="e-late", text="Thanks, that is all for today.")])
    second = memory.consolidate(T, S)
    assert second.status == "published" and first.artifact_id in second.selected_ids  # the incremental path
    bundle = diagnose(memory, T, S, second.attempt_id)
    assert bundle.check("selection").status == "ok"
    carried = {e.event_id: e.carried_by for e in bundle.events}
    assert carried["e-allergy"] == first.artifact_id and carried["e-late"] is None
    assert bundle.first_divergent is None  # no recall served it yet: retrieval unchecked
    assert bundle.check("retrieval").status == "unchecked" and "not checked: retrieval" in bundle.note
    assert bundle.versions.manifest["path"] == "incremental"
    assert bundle.versions.store_schema_version == memory.store.schema_version() > 0


def test_an_unknown_attempt_is_not_found(memory):
    world(memory)
    with pytest.raises(NotFound, match="attempt att-nope does not exist"):
        diagnose(memory, T, S, "att-nope")


# -- sanitized by default --------------------------------------------------------------------


def test_no_raw_text_without_include_text_and_all_of_it_with(memory, tmp_path):
    attempt = published(memory)
    memory.recall(T, S, query="peanuts allergic garden")
    bundle = diagnose(memory, T, S, attempt.attempt_id)
    written = write_bundle(bundle, tmp_path / "plain")
    text = bundle_texts(written)
    summary = memory.admin.artifact(T, S, attempt.artifact_id).body.summary
    for secret in [*TEXTS.values(), "UTC+01:00", "peanuts allergic garden", summary, "allergic to peanuts"]:
        assert secret not in text
    assert '"sha256"' in text
    for path in written.iterdir():  # every file is JSON written with sorted keys
        doc = path.read_text(encoding="utf-8")
        assert doc == json.dumps(json.loads(doc), sort_keys=True, indent=2, ensure_ascii=False) + "\n"

    full = write_bundle(diagnose(memory, T, S, attempt.attempt_id, include_text=True), tmp_path / "full")
    text = bundle_texts(full)
    for secret in [*TEXTS.values(), "peanuts allergic garden"]:
        assert json.dumps(secret)[1:-1] in text


class ChangeText(LossyCompressor):
    """A string claim rewritten: the timezone UTC+01:00 becomes UTC+09:00."""

    name, expected_code = "lossy-change-text", "value_changed"

    def damage(self, out, request):
        claim = self._pick(out, lambda c: c["value_type"] == "string")
        claim["value"] = claim["value"].replace("+01:", "+09:")
        return claim["fact_id"]


def test_a_changed_string_value_is_in_the_attempts_detail_and_no_sanitized_bundle(memory, tmp_path):
    world(memory)
    attempt = memory.consolidate(T, S, compressor=ChangeText())
    assert attempt.details == ('f-tz:value_changed: "UTC+01:00" -> "UTC+09:00" (string)',)
    bundle = diagnose(memory, T, S, attempt.attempt_id)
    (finding,) = bundle.check("compression").findings
    assert (finding.code, finding.detail) == ("value_changed", "expected type string, observed type string")
    text = bundle_texts(write_bundle(bundle, tmp_path / "plain"))
    assert "UTC+01:00" not in text and "UTC+09:00" not in text


def test_an_archive_holds_the_same_files_and_nothing_is_overwritten(memory, tmp_path):
    attempt = published(memory)
    bundle = diagnose(memory, T, S, attempt.attempt_id)
    path = write_bundle(bundle, tmp_path / "bundles" / "b.tar.gz", archive=True)
    with tarfile.open(path) as tar:
        names = sorted(tar.getnames())
        summary = json.load(tar.extractfile("b/summary.json"))
    assert names == sorted(f"b/{n}" for n in bundle.files())
    assert summary["attempt_id"] == attempt.attempt_id and summary["first_divergent"] is None
    with pytest.raises(InvalidInput, match="already exists"):
        write_bundle(bundle, path, archive=True)
    assert sorted(p.name for p in path.parent.iterdir()) == ["b.tar.gz"]  # no partial file left


# -- the command line ------------------------------------------------------------------------

runner = CliRunner(env={"FORCE_COLOR": None, "COLUMNS": None, "LOSSGATE_DB": None, "NO_COLOR": "1"})


def cli(store_url, *args):
    return runner.invoke(app, ["--db", store_url, "diagnose", *args])


def test_cli_writes_a_sanitized_bundle_and_prints_its_summary(memory, store_url, tmp_path):
    world(memory)
    attempt = memory.consolidate(T, S, compressor=DropCriticalClaim())
    result = cli(store_url, attempt.attempt_id, "-t", T, "-s", S, "--out", str(tmp_path / "out"), "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["first_divergent"] == "compression" and summary["include_text"] is False
    root = Path(summary["path"])
    assert root == tmp_path / "out" / f"diagnose-{attempt.attempt_id}" and (root / "summary.json").is_file()
    text = bundle_texts(root)
    assert not [t for t in TEXTS.values() if t in text]

    table = cli(store_url, attempt.attempt_id, "--tenant", T, "--subject", S, "--out", str(tmp_path / "t"))
    assert table.exit_code == 0, table.stderr
    assert "compression" in table.stdout and "diverged" in table.stdout and "f-allergy: missing" in table.stdout


def test_cli_include_text_and_archive(memory, store_url, tmp_path):
    attempt = published(memory)
    result = cli(
        store_url, attempt.attempt_id, "-t", T, "-s", S, "--out", str(tmp_path), "--archive", "--include-text", "--json"
    )
    assert result.exit_code == 0, result.stderr
    path = Path(json.loads(result.stdout)["path"])
    assert path.name == f"diagnose-{attempt.attempt_id}.tar.gz"
    with tarfile.open(path) as tar:
        text = "\n".join(tar.extractfile(m).read().decode("utf-8") for m in tar.getmembers() if m.isfile())
    assert all(t in text for t in TEXTS.values())
    again = cli(store_url, attempt.attempt_id, "-t", T, "-s", S, "--out", str(tmp_path), "--archive")
    assert again.exit_code == 2 and again.stderr.count("\n") == 1 and "already exists" in again.stderr


def test_cli_unknown_attempt_exits_2_and_writes_nothing(memory, store_url, tmp_path):
    world(memory)
    result = cli(store_url, "att-nope", "-t", T, "-s", S, "--out", str(tmp_path / "out"))
    assert result.exit_code == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: attempt att-nope does not exist"), result.stderr
    assert not (tmp_path / "out").exists()
    assert "--include-text" in runner.invoke(app, ["diagnose", "--help"]).stdout
    assert "Admin" in runner.invoke(app, ["diagnose", "--help"]).stdout
