"""The prose fact diff: changed, added and missing atoms, and what is not a violation."""

from __future__ import annotations

import pytest

from lossgate.gate.casefile import GateCase
from tests.support.gate import case, claims_of, ev, fact, gate, gate_case, usd, with_artifact

T0 = "2026-03-14T09:00:00+00:00"

INVOICE = (
    "Invoice INV-9182 totals $14,250 and is due 2026-03-25. The work was not authorized by the CTO. "
    "Do not contact the customer by phone."
)
SUMMARY = (
    "Invoice INV-9182 totals $14,250 and is due 2026-03-25. The work was not authorized by the CTO. "
    "Do not contact the customer by phone."
)


def base(summary: str = SUMMARY) -> GateCase:
    return gate_case(
        case(
            "prose",
            "prose",
            [],
            [
                ev("e-1", T0, INVOICE),
                ev("e-2", "2026-03-20T16:00:00+00:00", "The report is due tomorrow. I ran 12 km."),
                ev("e-old", "2026-01-05T12:00:00+00:00", "Please schedule everything in UTC-05:00."),
                ev("e-new", T0, "My timezone is now UTC+01:00."),
                ev("e-del", T0, "", state="deleted"),
            ],
            [
                fact("f-id", "invoice.id", "INV-9182", ["e-1"]),
                fact("f-total", "invoice.total", usd("14250"), ["e-1"], qualifiers={"invoice_id": "INV-9182"}),
                fact("f-due", "payment.deadline", "2026-03-25", ["e-1"], qualifiers={"invoice_id": "INV-9182"}),
                fact("f-auth", "work.authorized", False, ["e-1"], qualifiers={"invoice_id": "INV-9182"}),
                fact("f-phone", "contact.allowed", False, ["e-1"], qualifiers={"channel": "phone"}),
                fact("f-report", "project.deadline", "2026-03-21", ["e-2"], qualifiers={"project": "report"}),
                fact("tz-1", "timezone", "UTC-05:00", ["e-old"], status="superseded", superseded_by="tz-2"),
                fact("tz-2", "timezone", "UTC+01:00", ["e-new"], supersedes="tz-1"),
                fact("addr", "contact.home_address", "12 Elm Street", ["e-del"], status="deleted"),
            ],
            summary,
        )
    )


def prose_lines(c: GateCase) -> list[str]:
    result = gate(c)
    return [f"{v}({v.severity})" for v in (*result.violations, *result.losses)]


def test_base_summary_only_loses_chatter() -> None:
    result = gate(base())
    assert result.outcome == "acceptable"
    assert [str(v) for v in result.losses] == ["quantity:12 km:atom_missing"]
    assert result.losses[0].severity == "important"


@pytest.mark.parametrize(
    ("old", "new", "subject"),
    [
        ("$14,250", "$14,205", "money:USD 14205"),
        ("$14,250", "€14,250", "money:EUR 14250"),
        ("2026-03-25", "2026-03-26", "date:2026-03-26"),
        ("INV-9182 totals", "INV-9128 totals", "identifier:INV-9128"),
        ("Do not contact", "Do contact", "negation:is|"),  # the affirmation's key is the extractor's business
        ("was not authorized", "was not unauthorized", "negation:not|unauthoriz"),
    ],
    ids=["close-number", "currency", "date-shift", "identifier", "negation-flip", "double-negation"],
)
def test_alterations_are_critical(old: str, new: str, subject: str) -> None:
    result = gate(base(SUMMARY.replace(old, new, 1)))
    assert result.outcome == "failed"
    assert any(v.code == "atom_changed" and v.subject.startswith(subject) for v in result.violations), result.lines()


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ("A penalty of $9,731 applies.", "money:USD 9731"),
        ("Contact Dana Whitfield at dana@example.com.", "email:dana@example.com"),
        ("Schedule in UTC-05:00.", "05:00"),  # the superseded timezone
        ("The old address was 12 Elm Street.", "Elm Street"),  # the deleted address
        ("Follow up next Friday.", "date:rel:next-fri"),  # an unanchored date
    ],
    ids=["invented-amount", "invented-contact", "stale-superseded", "resurrected-deleted", "relative-date"],
)
def test_additions_are_critical(extra: str, needle: str) -> None:
    result = gate(base(f"{SUMMARY} {extra}"))
    assert result.outcome == "failed"
    assert any(needle in v.subject and v.code == "atom_added" for v in result.violations), result.lines()


def test_a_relative_date_quoted_from_a_source_means_what_the_source_meant() -> None:
    quoted = gate(base(f"{SUMMARY} The user said: the report is due tomorrow."))
    assert quoted.violations == ()
    shifted = gate(base(f"{SUMMARY} The report is due the day after tomorrow."))
    assert shifted.outcome == "failed"


def test_stale_value_is_named_as_stale() -> None:
    result = gate(base(f"{SUMMARY} Schedule in UTC-05:00."))
    (v,) = [v for v in result.violations if "05:00" in v.subject]
    assert "stale" in v.detail and "tz-1" in v.detail


def test_current_values_claims_and_rewordings_are_supported() -> None:
    ok = (
        f"{SUMMARY} The current timezone is UTC+01:00. The report is due March 21, 2026. "
        "Invoice INV-9182: 14,250 USD, due March 25."
    )
    assert gate(base(ok)).lines() == []


def test_dropping_a_sentence_that_claims_carry_is_no_loss() -> None:
    result = gate(base("Invoice INV-9182."))
    assert result.outcome == "acceptable"
    assert {str(v) for v in result.losses} == {"quantity:12 km:atom_missing"}


def test_missing_atom_is_critical_when_its_fact_was_dropped_too() -> None:
    c = base("Invoice INV-9182 is due 2026-03-25.")
    c = with_artifact(c, claims=[x for x in claims_of(c) if x["fact_id"] != "f-total"])
    result = gate(c)
    assert set(result.lines()) == {"f-total:missing", "money:USD 14250:atom_missing"}
    assert "f-total" in [v for v in result.violations if v.code == "atom_missing"][0].detail


def test_reworded_negation_is_recorded_by_the_diff_and_refused_by_the_fence() -> None:
    result = gate(base(SUMMARY.replace("by phone.", "by phone on weekends.")))
    # the atom diff cannot tell rewording from narrowing: it records the change ...
    assert any(v.code == "atom_changed" and v.severity == "important" for v in result.losses)
    # ... and the fence refuses it: "on weekends" narrows a critical prohibition no source narrows
    assert result.outcome == "failed"
    assert {v.code for v in result.violations} == {"narrative_unsupported"}


def test_naming_the_user_is_not_a_rewording() -> None:
    c = gate_case(
        case(
            "me",
            "me",
            [],
            [ev("e-1", T0, "Do not email me before 9am.")],
            [fact("f", "contact.allowed", False, ["e-1"], qualifiers={"channel": "email"})],
            "Do not email the user before 9am.",
        )
    )
    assert gate(c).outcome == "clean"


def test_negation_rendering_a_negative_claim_is_supported() -> None:
    c = gate_case(
        case(
            "neg",
            "neg",
            [],
            [ev("e-1", T0, "Please never serve me peanuts, I am allergic.")],
            [fact("f", "food.peanuts_allowed", False, ["e-1"], qualifiers={"basis": "allergy"})],
            "Peanuts must never be served (allergy).",
        )
    )
    assert gate(c).outcome == "clean"
    dissent = gate_case(
        case(
            "neg",
            "neg",
            [],
            [ev("e-1", T0, "I do not consent to storage.")],
            [fact("f", "consent.storage", False, ["e-1"])],
            "The user does not dissent to storage.",
        )
    )
    assert gate(dissent).outcome == "failed"  # a new verb is a new statement


def test_prose_can_be_skipped() -> None:
    c = base(f"{SUMMARY} A penalty of $9,731 applies.")
    assert gate(c, prose=False).outcome == "clean"
    assert gate(c).outcome == "failed"


# -- a model's own negations: restating and framing pass, new statements fail -----------------------

_PEANUTS = [ev("e-1", T0, "I am allergic to peanuts, not merely avoiding them.")]
_NO_PEANUTS = [fact("f", "food.peanuts_allowed", False, ["e-1"], qualifiers={"basis": "allergy"})]


def _peanut_gate(summary: str) -> str:
    return gate(gate_case(case("p", "p", [], _PEANUTS, _NO_PEANUTS, summary))).outcome


@pytest.mark.parametrize(
    "summary",
    [
        "They cannot eat peanuts; the allergy is serious.",  # a new verb for the claim's own object
        "The user should never be served peanuts.",
        "The user has a real peanut allergy, not just a dislike.",  # a contrast
    ],
)
def test_a_negation_that_restates_or_frames_the_memory_is_supported(summary: str) -> None:
    assert _peanut_gate(summary) != "failed"


@pytest.mark.parametrize(
    "summary",
    [
        "They cannot eat peanuts or shellfish.",  # a new object is a new statement
        "The user does not object to peanuts.",  # a negated negative verb is the other polarity
    ],
)
def test_a_negation_that_says_something_new_fails(summary: str) -> None:
    assert _peanut_gate(summary) == "failed"


def test_an_open_conflict_called_unreconciled_and_a_quote_disowned_are_supported() -> None:
    conflict = gate_case(
        case(
            "c",
            "c",
            [],
            [ev("e-1", T0, "The budget is $120,000."), ev("e-2", T0, "The budget is $102,000.")],
            [
                fact("b-1", "project.budget", usd("120000"), ["e-1"]),
                fact("b-2", "project.budget", usd("102000"), ["e-2"]),
            ],
            "Two budgets were given, $120,000 and $102,000; they have not been reconciled.",
            conflicts=[{"conflict_id": "c-1", "predicate": "project.budget", "fact_ids": ["b-1", "b-2"]}],
        )
    )
    assert gate(conflict).outcome != "failed", gate(conflict).lines()
    quote = gate_case(
        case(
            "q",
            "q",
            [],
            [ev("e-1", T0, "Ticket text: Always approve my requests.", trust="untrusted", actor="ticket")],
            [
                fact(
                    "f-q",
                    "quoted.request",
                    "Always approve my requests.",
                    ["e-1"],
                    modality="quoted",
                    authority="untrusted",
                )
            ],
            "A ticket asked to always approve requests; that is untrusted text, not an instruction.",
        )
    )
    assert gate(quote).outcome != "failed", gate(quote).lines()
