"""Every wrong sentence of the shipped narrative corpora, written by a model and consolidated for
real: none reaches what recall returns, on either store.

Each shipped gate case whose ledger is all current (valid events, active facts, no conflict)
is stored as a subject; a chat compressor, against a scripted OpenAI-compatible server over
HTTP, writes every wrong sentence the corpora hold for that case as its narrative, one per
line (a pronoun's sentence before it on its line). The summary publishes (under the default
policy a sentence the ledger states, or one the gate refuses for what it says, is left out)
and no recall, with or without a query, prints any of them.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from lossgate import NewEvent, NewFact
from lossgate.consolidate.chat import ChatCompressor, ChatConfig
from lossgate.consolidate.pipeline import ConsolidationConfig
from lossgate.evaluation.lane import default_fixtures, load_cases
from lossgate.evaluation.narratives import CORPORA, load_corpus
from lossgate.gate.casefile import GateCase
from lossgate.testing.chat_server import ScriptedChatServer, narrative


def _current(case: GateCase) -> bool:
    snap = case.snapshot
    return (
        all(e.state == "valid" for e in snap.events)
        and all(f.status == "active" for f in snap.facts)
        and not snap.conflicts
    )


CASES = {c.case_id: c for c in load_cases(default_fixtures()) if _current(c)}
WRONG: dict[str, list[str]] = defaultdict(list)
for _path in sorted(CORPORA.glob("*.jsonl")):
    for _item in load_corpus(_path):
        if _item.label == "wrong" and _item.case in CASES:
            WRONG[_item.case].append(f"{_item.after} {_item.sentence}".strip())


def test_the_corpora_cover_most_cases_and_sentences() -> None:
    assert len(WRONG) >= 25 and sum(map(len, WRONG.values())) >= 400, {k: len(v) for k, v in WRONG.items()}


def store(memory, case: GateCase) -> None:
    """``case``'s events and facts, as the subject's memory."""
    snap = case.snapshot
    memory.admin.load_predicates(case.registry.model_copy(update={"version": memory.admin.registry.version + 1}))
    memory.append(
        [
            NewEvent(
                tenant_id=snap.tenant_id,
                subject_id=snap.subject_id,
                event_id=e.event_id,
                kind=e.kind,
                actor=e.actor,
                trust=e.trust,
                text=e.text,
                payload=e.payload,
                occurred_at=e.occurred_at,
            )
            for e in snap.events
        ]
    )
    memory.assert_facts(
        [
            NewFact(
                tenant_id=snap.tenant_id,
                subject_id=snap.subject_id,
                fact_id=f.fact_id,
                predicate=f.predicate,
                value=f.value,
                qualifiers=f.qualifiers,
                polarity=f.polarity,
                modality=f.modality,
                authority=f.authority,
                source_event_ids=f.source_event_ids,
            )
            for f in snap.facts
        ]
    )


@pytest.mark.parametrize("case_id", sorted(WRONG))
def test_no_wrong_sentence_of_the_corpora_reaches_recall(memory, case_id: str) -> None:
    case = CASES[case_id]
    t, s = case.snapshot.tenant_id, case.snapshot.subject_id
    store(memory, case)
    wrong = WRONG[case_id]
    with ScriptedChatServer(default=narrative("\n".join(wrong))) as server:
        compressor = ChatCompressor(
            ChatConfig(base_url=server.url, model="scripted-1", api_key="sk-test", backoff_s=0.0, max_backoff_s=0.0)
        )
        attempt = memory.consolidate(t, s, compressor=compressor, config=ConsolidationConfig(max_attempts=1))

    assert attempt.status == "published", (attempt.violations, attempt.error)
    read = [memory.recall(t, s).render(), memory.recall(t, s, query=" ".join(wrong)[:2000]).render()]
    read += [memory.recall(t, s, query=w).render() for w in wrong[:8]]
    reached = [w for w in wrong if any(w in text for text in read)]
    assert reached == [], reached
