"""The prose atom extractor and the atom diff (lossgate.gate.atoms)."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lossgate.gate.atoms import (
    ATOM_KINDS,
    CHANGE_REASONS,
    Atom,
    AtomChange,
    AtomDiff,
    diff_atoms,
    extract_atoms,
    is_affirmation,
)

EST = timezone(timedelta(hours=-5))
REF = datetime(2026, 3, 14, 14, 32, tzinfo=EST)  # a Saturday

REFERENCE_SOURCE = (
    "Customer cust_482 (Acme Corp) called at 2026-03-14 14:32 EST regarding invoice INV-9182 "
    "totaling $14,250. Customer disputes line item 3 ($2,400 for engineering hours on March 6) "
    "claiming work was not authorized by their CTO Marcus Chen. Customer agreed to pay $11,850 "
    "(full invoice minus disputed line) within 7 business days (by 2026-03-25) if we issue a "
    "credit memo for $2,400 by EOD 2026-03-15. Agent committed to credit memo. Tool call: "
    "invoice.adjust(invoice_id='INV-9182', adjustment_amount=-2400, reason='disputed_line_item_3', "
    "notes='see customer call 2026-03-14') returned success with credit_memo_id='CM-3392'."
)
REFERENCE_LOSSY = (
    "Acme Corp disputed an invoice for engineering work that was not authorized by their CTO. "
    "The agent agreed to issue a credit memo for the disputed amount, and the customer agreed to "
    "pay the remainder within a week. The credit memo was created successfully."
)


def facts(text: str, **kw: object) -> list[tuple[str, str]]:
    """(kind, key) of the atoms of ``text``, affirmations left out."""
    return [(a.kind, a.key) for a in extract_atoms(text, **kw) if not is_affirmation(a)]  # type: ignore[arg-type]


def keys(text: str, kind: str, **kw: object) -> list[str]:
    return [k for kd, k in facts(text, **kw) if kd == kind]


def diff(source: str, summary: str, **kw: object) -> AtomDiff:
    return diff_atoms(extract_atoms(source), extract_atoms(summary), **kw)  # type: ignore[arg-type]


def changes(d: AtomDiff) -> list[tuple[str, str, str]]:
    return [(c.source.key, c.summary.key, c.reason) for c in d.changed]


# --- the fourteen-fact invoice call, worked through ---------------------------


def test_reference_source_yields_every_fact() -> None:
    got = set(facts(REFERENCE_SOURCE, reference_time=REF))
    expected = {
        ("identifier", "cust_482"),
        ("party", "Acme Corp"),
        ("datetime", "2026-03-14T14:32-05:00"),
        ("identifier", "INV-9182"),
        ("money", "USD 14250"),
        ("quantity", "3"),
        ("money", "USD 2400"),
        ("date", "2026-03-06"),
        ("party", "Marcus Chen"),
        ("money", "USD 11850"),
        ("quantity", "7 business_day"),
        ("date", "2026-03-25"),
        ("datetime", "2026-03-15Teod"),
        ("identifier", "CM-3392"),
        ("negation", "not|authoriz|cto"),
        ("quantity", "-2400"),
        ("date", "2026-03-14"),
    }
    assert expected <= got, expected - got
    # the snake-case reason code is a phrase, not an identifier, and its "3" is not a number
    assert ("identifier", "disputed_line_item_3") not in got
    assert [k for k, _ in got].count("quantity") == 3


def test_reference_atom_texts_are_the_surface_forms() -> None:
    by_key = {a.key: a.text for a in extract_atoms(REFERENCE_SOURCE, reference_time=REF)}
    assert by_key["2026-03-14T14:32-05:00"] == "2026-03-14 14:32 EST"
    assert by_key["2026-03-15Teod"] == "EOD 2026-03-15"
    assert by_key["USD 14250"] == "$14,250"
    assert by_key["2026-03-06"] == "March 6"
    assert by_key["not|authoriz|cto"] == "not authorized by their CTO"


def test_reference_lossy_summary_fails_with_everything_that_matters_missing() -> None:
    d = diff_atoms(
        extract_atoms(REFERENCE_SOURCE, reference_time=REF), extract_atoms(REFERENCE_LOSSY, reference_time=REF)
    )
    assert not d.empty
    missing = {(a.kind, a.key) for a in d.missing}
    for must in [
        ("identifier", "cust_482"),
        ("identifier", "INV-9182"),
        ("identifier", "CM-3392"),
        ("money", "USD 14250"),
        ("money", "USD 2400"),
        ("money", "USD 11850"),
        ("date", "2026-03-06"),
        ("date", "2026-03-25"),
        ("datetime", "2026-03-14T14:32-05:00"),
        ("datetime", "2026-03-15Teod"),
        ("party", "Marcus Chen"),
        ("quantity", "7 business_day"),
    ]:
        assert must in missing, must
    # what the summary kept is not reported
    assert ("party", "Acme Corp") not in missing
    assert ("negation", "not|authoriz|cto") not in missing
    assert d.added == () and d.changed == ()


def test_reference_faithful_rewrite_is_clean() -> None:
    summary = (
        "On March 14, 2026 at 2:32 pm EST, customer cust_482 of Acme Corp called about invoice "
        "INV-9182 (14,250 USD). They dispute line item 3: USD 2,400.00 of engineering hours from "
        "2026-03-06 that was not authorized by their CTO Marcus Chen. They will pay USD 11,850 "
        "within 7 business days, by 25 March 2026, if a credit memo for $2,400 is issued by EOD "
        "2026-03-15. Credit memo CM-3392 was created (invoice_id='INV-9182', -$2,400) after the "
        "call of 2026-03-14."
    )
    d = diff_atoms(extract_atoms(REFERENCE_SOURCE, reference_time=REF), extract_atoms(summary, reference_time=REF))
    assert d.missing == () and d.changed == ()
    # "-$2,400" states a currency the tool call's bare -2400 never had: flagged as an invention
    assert [(a.kind, a.key) for a in d.added] == [("money", "USD -2400")]


# --- money -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "$14,250",
        "14,250 USD",
        "USD 14,250.00",
        "14250 dollars",
        "$14.25k",
        "USD14250",
        "$ 14,250",
        "14,250.0 USD",
        "US$14,250",
        "14250.00 Dollars",
    ],
)
def test_money_formats_share_one_key(text: str) -> None:
    assert keys(f"The total is {text} today.", "money") == ["USD 14250"]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("€2,400", "EUR 2400"),
        ("EUR 2400", "EUR 2400"),
        ("2400 euros", "EUR 2400"),
        ("£5", "GBP 5"),
        ("5 pounds sterling", "GBP 5"),
        ("¥300", "JPY 300"),
        ("C$12", "CAD 12"),
        ("-$2,400", "USD -2400"),
        ("$-2,400", "USD -2400"),
        ("USD -2,400", "USD -2400"),
        ("−$2,400", "USD -2400"),
        ("-2400 USD", "USD -2400"),
        ("$2.5 million", "USD 2500000"),
        ("$1.2bn", "USD 1200000000"),
        ("50 cents", "USD 0.5"),
        ("$0.50", "USD 0.5"),
        ("$0", "USD 0"),
    ],
)
def test_money_keys(text: str, key: str) -> None:
    assert keys(f"Refund {text} now.", "money") == [key]


def test_money_ranges_and_neighbours() -> None:
    assert keys("Between $10-$20 per seat.", "money") == ["USD 10", "USD 20"]
    assert keys("Pay $10 and then $20.", "money") == ["USD 10", "USD 20"]


@pytest.mark.parametrize(
    "text",
    [
        "5 pounds of flour",
        "USD",
        "the $ sign",
        "EST 2026",
        "pay in dollars",
        "x$5",
        "ABC 100",
    ],
)
def test_not_money(text: str) -> None:
    assert keys(text, "money") == []


# --- quantities and percentages --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("7 business days", "7 business_day"),
        ("7 working days", "7 business_day"),
        ("seven business days", "7 business_day"),
        ("3 days", "3 day"),
        ("1 day", "1 day"),
        ("200 words", "200 word"),
        ("a 200-word summary", "200 word"),
        ("5 kg", "5 kg"),
        ("10 ms", "10 ms"),
        ("10ms", "10 ms"),
        ("3 hrs", "3 hour"),
        ("90 minutes", "90 minute"),
        ("2.5 GB", "2.5 gb"),
        ("4 line items", "4 line_item"),
        ("12 users", "12 user"),
        ("5 pounds of flour", "5 lb"),
        ("Three hours", "3 hour"),
        ("3 percentage points", "3 percentage_point"),
    ],
)
def test_quantity_with_unit(text: str, key: str) -> None:
    assert keys(text, "quantity") == [key]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("line item 3", "3"),
        ("total 14250", "14250"),
        ("adjustment_amount=-2400", "-2400"),
        ("code (42)", "42"),
        ("ratio 0.75", "0.75"),
        ("1,000,000 rows", "1000000"),
        ("007", "7"),
    ],
)
def test_bare_numbers_are_unitless_quantities(text: str, key: str) -> None:
    assert keys(text, "quantity") == [key]


@pytest.mark.parametrize(
    "text",
    [
        "v1.2.3",
        "3rd place",
        "Q3 revenue",
        "24/7 support",
        "COVID-19",
        "INV-9182",
        "cust_482",
        "14:32",
        "2026-03-25",
        "$2,400",
        "+1 (555) 010-2030",
        "10.0.0.1",
        "user-17",
    ],
)
def test_digits_inside_other_atoms_are_not_numbers(text: str) -> None:
    assert keys(f"see {text} here", "quantity") == []


@pytest.mark.parametrize("text", ["15%", "15 percent", "15.0 %", "15 per cent", "15 pct", "15.00%"])
def test_percent_formats(text: str) -> None:
    assert keys(f"a discount of {text} applies", "percent") == ["15%"]


def test_negative_percent() -> None:
    assert keys("margin fell -3% again", "percent") == ["-3%"]


# --- dates, times, date-times --------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "2026-03-25",
        "March 25, 2026",
        "25 March 2026",
        "Mar 25 2026",
        "3/25/2026",
        "2026/03/25",
        "Mar. 25, 2026",
        "25th of March 2026",
        "March 25th, 2026",
        "25.03.2026",
        "25/3/2026",
        "2026.03.25",
        "3/25/26",
    ],
)
def test_date_formats_share_one_key(text: str) -> None:
    assert keys(f"due {text} at the latest", "date") == ["2026-03-25"]


def test_date_without_year() -> None:
    assert keys("work on March 6 was disputed", "date") == ["--03-06"]
    assert keys("work on March 6 was disputed", "date", reference_time=REF) == ["2026-03-06"]
    assert keys("on 6 March", "date", reference_time=REF) == ["2026-03-06"]


def test_month_and_year() -> None:
    assert keys("launch in March 2026", "date") == ["2026-03"]


@pytest.mark.parametrize(
    "text",
    [
        "2026-02-30",
        "13/13/2026",
        "you may 5 times",
        "version 1.2.3",
        "32 March 2026",
        "March 99",
    ],
)
def test_not_dates(text: str) -> None:
    assert keys(text, "date") == [] and keys(text, "datetime") == []


@pytest.mark.parametrize(
    ("text", "with_ref", "without_ref"),
    [
        ("call back tomorrow", "2026-03-15", "rel:+1d"),
        ("call back today", "2026-03-14", "rel:+0d"),
        ("called yesterday", "2026-03-13", "rel:-1d"),
        ("the day after tomorrow", "2026-03-16", "rel:+2d"),
        ("in 3 days", "2026-03-17", "rel:+3d"),
        ("in a week", "2026-03-21", "rel:+7d"),
        ("in two months", "2026-05-14", "rel:+2mo"),
        ("3 days ago", "2026-03-11", "rel:-3d"),
        ("next Monday", "2026-03-16", "rel:next-mon"),
        ("next Saturday", "2026-03-21", "rel:next-sat"),
        ("this Saturday", "2026-03-14", "rel:this-sat"),
        ("last Friday", "2026-03-13", "rel:last-fri"),
    ],
)
def test_relative_dates(text: str, with_ref: str, without_ref: str) -> None:
    assert keys(text, "date", reference_time=REF) == [with_ref]
    assert keys(text, "date") == [without_ref]


def test_tomorrow_and_in_one_day_agree_without_reference() -> None:
    assert keys("tomorrow", "date") == keys("in 1 day", "date")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("14:32", "14:32"),
        ("2:32 pm", "14:32"),
        ("2:32pm", "14:32"),
        ("2pm", "14:00"),
        ("2 p.m.", "14:00"),
        ("12 am", "00:00"),
        ("12:30 PM", "12:30"),
        ("14:32:05", "14:32:05"),
        ("14:32:00", "14:32"),
        ("14:32 EST", "14:32-05:00"),
        ("14:32 UTC", "14:32+00:00"),
        ("2:32 pm PDT", "14:32-07:00"),
        ("14:32 UTC+2", "14:32+02:00"),
        ("14:32 ET", "14:32 ET"),
        ("at noon", "12:00"),
        ("14:32:00Z", "14:32+00:00"),
    ],
)
def test_times(text: str, key: str) -> None:
    assert keys(f"meet {text} sharp", "time") == [key]


def test_time_range_is_two_times() -> None:
    assert keys("open 10:30-11:30 daily", "time") == ["10:30", "11:30"]


@pytest.mark.parametrize("text", ["13pm", "25:00", "3:7", "ratio 16:9x", "0 am"])
def test_not_times(text: str) -> None:
    assert keys(text, "time") == []


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("2026-03-14 14:32 EST", "2026-03-14T14:32-05:00"),
        ("2026-03-14T14:32:00-05:00", "2026-03-14T14:32-05:00"),
        ("2026-03-14T14:32-05:00", "2026-03-14T14:32-05:00"),
        ("March 14, 2026 at 2:32 pm EST", "2026-03-14T14:32-05:00"),
        ("2:32 pm EST on March 14, 2026", "2026-03-14T14:32-05:00"),
        ("EOD 2026-03-15", "2026-03-15Teod"),
        ("2026-03-15 EOD", "2026-03-15Teod"),
        ("end of day on 2026-03-15", "2026-03-15Teod"),
        ("2026-03-15T09:00:00Z", "2026-03-15T09:00+00:00"),
    ],
)
def test_datetimes(text: str, key: str) -> None:
    assert keys(f"due {text}.", "datetime") == [key]


def test_relative_datetimes() -> None:
    assert keys("by EOD", "datetime") == ["rel:+0dTeod"]
    assert keys("by EOD", "datetime", reference_time=REF) == ["2026-03-14Teod"]
    assert keys("tomorrow at 3pm", "datetime", reference_time=REF) == ["2026-03-15T15:00"]
    assert keys("COB tomorrow", "datetime") == ["rel:+1dTeod"]
    assert keys("a corn cob", "datetime") == []


# --- identifiers, e-mail, phones ------------------------------------------------


@pytest.mark.parametrize(
    "ident",
    [
        "INV-9182",
        "cust_482",
        "CM-3392",
        "TKT-00123",
        "user-17",
        "event-41",
        "INV9182",
        "COVID-19",
        "acct_us_1234",
        "v1.2.3",
        "10.0.0.1",
        "#4521",
    ],
)
def test_identifier_shapes(ident: str) -> None:
    assert keys(f"see {ident}.", "identifier") == [ident]


def test_identifier_case_is_kept() -> None:
    assert keys("inv-9182 and INV-9182", "identifier") == ["inv-9182", "INV-9182"]


def test_digests_and_uuids_are_lower_cased() -> None:
    assert keys("id 123E4567-E89B-12D3-A456-426614174000", "identifier") == ["123e4567-e89b-12d3-a456-426614174000"]
    digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    assert keys(f"blob sha256:{digest.upper()}", "identifier") == [f"sha256:{digest}"]
    assert keys("commit 3f2a9c1b fixed it", "identifier") == ["3f2a9c1b"]


def test_quoted_tool_call_ids() -> None:
    text = """adjust(invoice_id='INV-9182', credit_memo_id="CM-3392", reason='late') {"ticketId": "T1"}"""
    assert keys(text, "identifier") == ["INV-9182", "CM-3392", "T1"]
    # a quoted value under a key that is not an id is not an identifier
    assert keys("adjust(reason='late', note='ABC')", "identifier") == []


def test_urls_are_identifiers() -> None:
    assert keys("see https://example.com/inv/123?x=1.", "identifier") == ["https://example.com/inv/123?x=1"]


@pytest.mark.parametrize(
    "text",
    [
        "a well-known follow-up by e-mail",
        "the X-ray",
        "mid-2026",
        "pre-2020 data",
        "Mar-25",
        "2026-03-25",
        "reason='disputed_line_item_3'",
        "state-of-the-art",
        "Customer",
        "invoice.adjust",
        "deadbeef",
        "face2face",
    ],
)
def test_not_identifiers(text: str) -> None:
    assert keys(text, "identifier") == []


def test_email() -> None:
    assert facts("Mail JOHN.Doe@Example.COM now.") == [("email", "john.doe@example.com")]
    assert keys("user at example dot com, @handle, a@b", "email") == []


@pytest.mark.parametrize(
    "text",
    [
        "+1 (555) 010-2030",
        "+1 555 010 2030",
        "(555) 010-2030",
        "555-010-2030",
        "555.010.2030",
        "+15550102030",
    ],
)
def test_phone_formats_share_one_key(text: str) -> None:
    assert keys(f"call {text} today", "phone") == ["+15550102030"]


def test_international_phone() -> None:
    assert keys("call +44 20 7946 0958.", "phone") == ["+442079460958"]


@pytest.mark.parametrize("text", ["2026-03-25", "$2,400", "14,250", "+15%", "1-800", "call 555-0102"])
def test_not_phones(text: str) -> None:
    assert keys(text, "phone") == []


# --- negations ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("Do not contact the customer.", "not|contact|customer"),
        ("Never contact the customer.", "not|contact|customer"),
        ("Don't contact the customer!", "not|contact|customer"),
        ("The customer must not be contacted.", "not|contact|customer"),
        ("She does not consent to storage.", "not|consent|storag"),
        ("It was not authorized by their CTO Marcus Chen.", "not|authoriz|cto"),
        ("No peanuts.", "not|peanut"),
        ("We can't refund it.", "not|refund"),
        ("The agent won't call.", "not|cal"),
        ("Refunds without supervisor review", "not|supervisor|review"),
        ("It is not unauthorized.", "not|unauthoriz"),
        ("Nobody approved the change.", "not|approv|chang"),
    ],
)
def test_negation_keys(text: str, key: str) -> None:
    assert keys(text, "negation") == [key]


@pytest.mark.parametrize(
    "text",
    [
        "Pay no later than Friday.",
        "not only emails but calls",
        "whether or not it rains",
        "No, thanks.",
        "Contact the customer.",
    ],
)
def test_not_negations(text: str) -> None:
    assert keys(text, "negation") == []


def test_negation_scope_stops_at_clause_breaks() -> None:
    assert keys("Do not call, but email the client.", "negation") == ["not|cal"]
    assert keys("Do not call and don't email the client", "negation") == ["not|cal", "not|email|client"]


def test_negation_keeps_at_most_four_content_words() -> None:
    (key,) = keys("Never share the customer's card number with any third party vendor.", "negation")
    assert key.split("|")[0] == "not" and len(key.split("|")) == 5


def test_affirmations_are_helpers_only() -> None:
    atoms = extract_atoms("Contact the customer tomorrow. Do not email them.")
    aff = [a for a in atoms if is_affirmation(a)]
    assert aff and all(a.kind == "negation" and a.key.startswith("is|") for a in aff)
    assert all(not is_affirmation(a) for a in extract_atoms("Contact the customer.", affirmations=False))


# --- parties ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("Marcus Chen called", "Marcus Chen"),
        ("by their CTO Marcus Chen.", "Marcus Chen"),
        ("Acme Corp called", "Acme Corp"),
        ("Acme Corp. called", "Acme Corp"),
        ("Acme Corporation called", "Acme Corp"),
        ("Stripe Inc. billed", "Stripe Inc"),
        ("Marcus Chen's team", "Marcus Chen"),
        ("Bank of America", "Bank of America"),
        ("Dr. Smith agreed", "Smith"),
        ("IBM Corp signed", "IBM Corp"),
        ("Initech LLC", "Initech LLC"),
        ("The Acme Corp team", "Acme Corp"),
    ],
)
def test_parties(text: str, key: str) -> None:
    assert keys(text, "party") == [key]


@pytest.mark.parametrize(
    "text",
    [
        "The customer called.",
        "Customer agreed.",
        "The Customer called",
        "User Agent",
        "On Monday March 6",
        "Thanks. Please call.",
        "EST UTC",
        "I think so",
        "Tool call: done.",
    ],
)
def test_not_parties(text: str) -> None:
    assert keys(text, "party") == []


def test_title_case_headings_are_not_parties() -> None:
    text = (
        "Memory Compression Without Truth Loss\nThe Failure Mode That Looks Like Success\nMarcus Chen called Acme Corp."
    )
    assert keys(text, "party") == ["Marcus Chen", "Acme Corp"]


# --- extractor invariants -------------------------------------------------------------


def test_a_datetime_owns_the_words_between_its_date_and_time() -> None:
    atoms = extract_atoms("due 3/4/26 , by EOD please")
    assert [(a.kind, a.text) for a in atoms if not is_affirmation(a)] == [("datetime", "3/4/26 , by EOD")]
    _check_invariants("due 3/4/26 , by EOD please", atoms)


def _check_invariants(text: str, atoms: list[Atom]) -> None:
    prev_end = 0
    for a in atoms:
        assert a.kind in ATOM_KINDS
        assert 0 <= a.start < a.end <= len(text)
        assert a.text == text[a.start : a.end]
        assert a.start >= prev_end, f"overlap at {a}"
        prev_end = a.end
        assert a.key


def test_spans_never_overlap_and_are_ordered() -> None:
    _check_invariants(REFERENCE_SOURCE, extract_atoms(REFERENCE_SOURCE, reference_time=REF))


def test_deterministic_and_stateless() -> None:
    first = extract_atoms(REFERENCE_SOURCE, reference_time=REF)
    extract_atoms("Something else entirely: $5, 2026-01-01, not this.")
    assert extract_atoms(REFERENCE_SOURCE, reference_time=REF) == first
    assert diff(REFERENCE_SOURCE, REFERENCE_LOSSY) == diff(REFERENCE_SOURCE, REFERENCE_LOSSY)


def test_atom_kinds_constant() -> None:
    assert set(ATOM_KINDS) == {
        "money",
        "quantity",
        "percent",
        "date",
        "datetime",
        "time",
        "identifier",
        "email",
        "phone",
        "negation",
        "party",
    }
    assert len(ATOM_KINDS) == 11


def test_atoms_are_frozen_values() -> None:
    a = extract_atoms("pay $5")[-1]
    assert a == Atom("money", "USD 5", "$5", 4, 6)
    assert hash(a) == hash(Atom("money", "USD 5", "$5", 4, 6))
    with pytest.raises(AttributeError):
        a.key = "x"  # type: ignore[misc]


def test_package_docstring_example_runs() -> None:
    import doctest

    from lossgate.gate import atoms

    assert doctest.testmod(atoms).failed == 0


def test_empty_and_whitespace_text() -> None:
    assert extract_atoms("") == []
    assert extract_atoms(" \n\t ") == []


# --- diff ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "summary"),
    [
        ("Total $14,250.", "Total 14,250 USD."),
        ("Total $14,250.", "Total USD 14,250.00."),
        ("Due 2026-03-25.", "Due March 25, 2026."),
        ("Due 2026-03-25.", "Due 25 March 2026."),
        ("Do not contact the customer.", "Never contact the customer."),
        ("Do not contact the customer.", "The customer must not be contacted."),
        ("Wait 2 weeks.", "Wait 14 days."),
        ("Call at 2026-03-14 14:32 EST.", "Call at 2026-03-14 19:32 UTC."),
        ("Call at 2026-03-14 14:32 EST.", "Call on March 14, 2026 at 2:32 pm EST."),
        ("Reach a@b.com or +1 (555) 010-2030.", "Phone 555-010-2030, mail A@B.com."),
        ("Acme Corp pays.", "Acme Corporation pays."),
    ],
)
def test_meaning_preserving_rewrites_give_an_empty_diff(source: str, summary: str) -> None:
    d = diff(source, summary)
    assert d.empty, d


def test_sentence_order_does_not_matter() -> None:
    sentences = [s.strip() + "." for s in REFERENCE_SOURCE.split(". ") if s.strip()]
    shuffled = sentences[:]
    random.Random(3).shuffle(shuffled)
    assert diff(" ".join(sentences), " ".join(shuffled)).empty


@pytest.mark.parametrize(
    ("source", "summary", "expected"),
    [
        ("Total $14,250.", "Total $14,205.", ("USD 14250", "USD 14205", "number_changed")),
        ("Total $14,250.", "Total $14,300.", ("USD 14250", "USD 14300", "number_changed")),
        ("Total $14,250.", "Total EUR 14,250.", ("USD 14250", "EUR 14250", "currency_changed")),
        ("Pay $2,400.", "Pay 2400.", ("USD 2400", "2400", "currency_changed")),
        ("Wait 7 business days.", "Wait 7 days.", ("7 business_day", "7 day", "unit_changed")),
        ("Discount 15%.", "Discount 15 items.", ("15%", "15 item", "unit_changed")),
        ("Discount 15%.", "Discount 51%.", ("15%", "51%", "number_changed")),
        ("Due 2026-03-25.", "Due 2026-03-26.", ("2026-03-25", "2026-03-26", "date_shifted")),
        ("Due 3/4/2026.", "Due 4/3/2026.", ("2026-03-04", "2026-04-03", "date_shifted")),
        (
            "At 2026-03-14 14:32 EST.",
            "At 2026-03-15 14:32 EST.",
            ("2026-03-14T14:32-05:00", "2026-03-15T14:32-05:00", "date_shifted"),
        ),
        (
            "At 2026-03-14 14:32 EST.",
            "At 2026-03-14 15:32 EST.",
            ("2026-03-14T14:32-05:00", "2026-03-14T15:32-05:00", "time_changed"),
        ),
        ("At 2026-03-14 14:32 EST.", "On 2026-03-14.", ("2026-03-14T14:32-05:00", "2026-03-14", "time_changed")),
        ("Meet at 14:32.", "Meet at 15:32.", ("14:32", "15:32", "time_changed")),
        ("Invoice INV-9182.", "Invoice INV-9128.", ("INV-9182", "INV-9128", "identifier_changed")),
        ("Invoice INV-9182.", "Invoice INV-1234.", ("INV-9182", "INV-1234", "identifier_changed")),
        ("Mail ann@acme.com.", "Mail anne@acme.com.", ("ann@acme.com", "anne@acme.com", "email_changed")),
        ("Call 555-010-2030.", "Call 555-010-2031.", ("+15550102030", "+15550102031", "phone_changed")),
        ("Marcus Chen approved.", "Mark Chen approved.", ("Marcus Chen", "Mark Chen", "party_changed")),
        (
            "Do not contact the customer about the invoice.",
            "Do not contact the customer.",
            ("not|contact|customer|invoic", "not|contact|customer", "negation_changed"),
        ),
    ],
)
def test_close_mutations_are_changes(source: str, summary: str, expected: tuple[str, str, str]) -> None:
    d = diff(source, summary)
    assert changes(d) == [expected]
    assert d.missing == () and d.added == ()


def test_dropping_a_negation_for_the_positive_is_a_flip() -> None:
    d = diff("Do not contact the customer.", "Contact the customer.")
    assert [(c.source.key, c.reason) for c in d.changed] == [("not|contact|customer", "polarity_flipped")]
    assert d.changed[0].summary.text == "Contact the customer"
    assert d.missing == () and d.added == ()


def test_a_negation_invented_against_a_positive_source_is_a_flip() -> None:
    d = diff("The customer consents to storage.", "The customer does not consent to storage.")
    assert [(c.summary.key, c.reason) for c in d.changed] == [("not|consent|storag", "polarity_flipped")]
    assert d.missing == () and d.added == ()


def test_dropped_negation_without_positive_is_missing() -> None:
    d = diff("Do not contact the customer. Ship the order.", "Ship the order.")
    assert [(a.kind, a.key) for a in d.missing] == [("negation", "not|contact|customer")]
    assert d.changed == () and d.added == ()


def test_a_positive_the_source_also_states_is_not_a_flip() -> None:
    d = diff("Do not contact the customer. Contact the customer's lawyer.", "Contact the customer's lawyer.")
    assert [(a.kind, a.key) for a in d.missing] == [("negation", "not|contact|customer")]
    assert d.changed == ()


def test_far_values_are_missing_and_added_not_changed() -> None:
    d = diff("Total $14,250 due 2026-03-25.", "Total $99 due 2027-11-02.")
    assert d.changed == ()
    assert [(a.kind, a.key) for a in d.missing] == [("date", "2026-03-25"), ("money", "USD 14250")]
    assert [(a.kind, a.key) for a in d.added] == [("date", "2027-11-02"), ("money", "USD 99")]


def test_confabulated_atoms_are_added() -> None:
    d = diff("The customer called.", "The customer called about INV-5555 on 2026-01-02 with Jane Roe.")
    assert [(a.kind, a.key) for a in d.added] == [
        ("date", "2026-01-02"),
        ("identifier", "INV-5555"),
        ("party", "Jane Roe"),
    ]
    assert d.missing == ()


def test_specific_atoms_cover_general_ones() -> None:
    # a datetime covers its date, money the bare number with its value, a date its year ...
    source = "On 2026-03-14 14:32 EST pay $2,400."
    assert diff(source, "Paid $2,400 (2400 in all) on 2026-03-14 14:32 EST, that is in 2026 on 2026-03-14.").empty
    # ... so a summary that is more specific loses nothing, but invents the time and currency
    d = diff("adjustment -2400 on 2026-03-14", "-$2,400 on 2026-03-14 14:32 EST")
    assert d.missing == () and d.changed == ()
    assert [(a.kind, a.key) for a in d.added] == [("datetime", "2026-03-14T14:32-05:00"), ("money", "USD -2400")]
    # a summary that is less specific loses the time and the currency
    d = diff(source, "on 2026-03-14 pay 2400")
    assert sorted(c.reason for c in d.changed) == ["currency_changed", "time_changed"]


def test_set_semantics_on_keys() -> None:
    d = diff("Pay $5. Pay $5 again. Pay USD 5.", "Pay $5.")
    assert d.empty
    d = diff("Pay $5 and $7 and $7.", "Pay $5.")
    assert [(a.kind, a.key) for a in d.missing] == [("money", "USD 7")]


def test_kinds_filter() -> None:
    d = diff(REFERENCE_SOURCE, REFERENCE_LOSSY, kinds={"money"})
    assert {a.kind for a in d.missing} == {"money"}
    assert diff(REFERENCE_SOURCE, REFERENCE_LOSSY, kinds={"negation"}).empty
    assert [a.key for a in diff(REFERENCE_SOURCE, REFERENCE_LOSSY, kinds={"party"}).missing] == ["Marcus Chen"]
    assert diff("Do not contact the customer.", "Contact the customer.", kinds={"money"}).empty


def test_each_atom_is_paired_at_most_once_and_greedily() -> None:
    d = diff("Pay $100 and $200.", "Pay $101.")
    assert changes(d) == [("USD 100", "USD 101", "number_changed")]
    assert [a.key for a in d.missing] == ["USD 200"]


def test_output_is_sorted_by_kind_and_key() -> None:
    d = diff(REFERENCE_SOURCE, "")
    ordered = [(a.kind, a.key) for a in d.missing]
    assert ordered == sorted(ordered)


def test_diff_of_anything_with_itself_is_empty() -> None:
    assert diff(REFERENCE_SOURCE, REFERENCE_SOURCE).empty
    assert diff_atoms([], []).empty
    assert AtomDiff().empty
    assert not AtomDiff(added=(Atom("money", "USD 1", "$1", 0, 2),)).empty


def test_change_reasons_constant() -> None:
    assert {"number_changed", "currency_changed", "unit_changed", "date_shifted", "polarity_flipped"} <= set(
        CHANGE_REASONS
    )
    ch = AtomChange(Atom("money", "USD 1", "$1", 0, 2), Atom("money", "USD 2", "$2", 0, 2), "number_changed")
    assert ch.reason in CHANGE_REASONS


# --- properties ------------------------------------------------------------------------

_amounts = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("999999999.99"), places=2)


def _canonical(d: Decimal) -> str:
    s = format(d, "f")
    return s.rstrip("0").rstrip(".") if "." in s else s


@settings(max_examples=150)
@given(_amounts, st.data())
def test_every_money_format_gives_the_same_key(amount: Decimal, data: st.DataObject) -> None:
    formats = [
        f"${amount:,}",
        f"{amount:,} USD",
        f"USD {amount:,.2f}",
        f"{amount} dollars",
        f"USD{amount}",
        f"${amount:,.2f}",
        f"US$ {amount}",
    ]
    if amount == amount.to_integral_value() and amount % 10 == 0:
        formats.append(f"${amount / 1000}k")
    text = data.draw(st.sampled_from(formats))
    assert keys(f"The refund of {text} was approved.", "money") == [f"USD {_canonical(amount)}"]


@settings(max_examples=150)
@given(st.dates(min_value=date(1900, 1, 1), max_value=date(2100, 12, 31)), st.data())
def test_every_date_format_gives_the_same_key(day: date, data: st.DataObject) -> None:
    formats = [
        day.isoformat(),
        f"{day:%B} {day.day}, {day.year}",
        f"{day.day} {day:%B} {day.year}",
        f"{day:%b} {day.day} {day.year}",
        f"{day.month}/{day.day}/{day.year}",
        f"{day:%Y/%m/%d}",
        f"{day.day}.{day.month}.{day.year}",
        f"{day:%B} {day.day}th, {day.year}",
    ]
    text = data.draw(st.sampled_from(formats))
    assert keys(f"It is due {text} at the latest.", "date") == [day.isoformat()]


@settings(max_examples=300)
@given(st.text())
def test_extraction_never_raises_and_keeps_its_invariants(text: str) -> None:
    atoms = extract_atoms(text)
    _check_invariants(text, atoms)
    assert extract_atoms(text) == atoms
    assert diff_atoms(atoms, atoms).empty


_pieces = st.sampled_from(
    [
        "$14,250",
        "USD 2,400.00",
        "2026-03-25",
        "March 6",
        "14:32 EST",
        "INV-9182",
        "cust_482",
        "not",
        "never",
        "don't",
        "Marcus Chen",
        "Acme Corp.",
        "7 business days",
        "15%",
        "-2400",
        "+1 (555) 010-2030",
        "a@b.com",
        "by EOD",
        "tomorrow",
        "the customer",
        "contact",
        ",",
        ".",
        "(",
        ")",
        "'",
        "=",
        "in 3 days",
        "ago",
        "v1.2.3",
        "#12",
        "sha256:abcdef1234",
        "\n",
    ]
)


@settings(max_examples=300)
@given(st.lists(_pieces, max_size=30), st.sampled_from([" ", "", "  ", "\t"]))
def test_extraction_of_fact_soup_keeps_its_invariants(pieces: list[str], sep: str) -> None:
    text = sep.join(pieces)
    atoms = extract_atoms(text, reference_time=REF)
    _check_invariants(text, atoms)
    assert diff_atoms(atoms, extract_atoms(text, reference_time=REF)).empty


_keys = st.sampled_from(
    [
        "USD 14250",
        "EUR 14250",
        "14250",
        "-2400",
        "7 business_day",
        "14 day",
        "2 week",
        "15%",
        "2026-03-25",
        "--03-25",
        "2026-03",
        "rel:+1d",
        "rel:next-mon",
        "2026-03-14T14:32-05:00",
        "2026-03-14Teod",
        "14:32",
        "14:32 ET",
        "eod",
        "INV-9182",
        "a@b.com",
        "+15550102030",
        "Marcus Chen",
        "not|contact|customer",
        "is|contact the customer",
        "not|",
        "is|",
        "",
        "weird key",
        "USD x",
        "T",
        "--99-99",
        "99:99",
    ]
)


@settings(max_examples=200)
@given(
    st.lists(st.tuples(st.sampled_from(ATOM_KINDS), _keys), max_size=12),
    st.lists(st.tuples(st.sampled_from(ATOM_KINDS), _keys), max_size=12),
)
def test_diff_never_raises_on_any_atoms(src: list[tuple[str, str]], summ: list[tuple[str, str]]) -> None:
    a = [Atom(k, key, key, i, i + 1) for i, (k, key) in enumerate(src)]  # type: ignore[arg-type]
    b = [Atom(k, key, key, i, i + 1) for i, (k, key) in enumerate(summ)]  # type: ignore[arg-type]
    d = diff_atoms(a, b)
    assert diff_atoms(a, b) == d  # deterministic
    assert diff_atoms(a, a).empty
    for c in d.changed:
        assert c.reason in CHANGE_REASONS
    # every reported atom comes from the side it is reported for
    assert {x.key for x in d.missing} <= {key for _, key in src}
    assert {x.key for x in d.added} <= {key for _, key in summ}


@settings(max_examples=100)
@given(
    st.permutations(
        [
            "Pay $14,250 by 2026-03-25.",
            "Do not contact Marcus Chen.",
            "Ticket TKT-00123 is open.",
            "Discount 15% on 7 business days.",
            "Call 555-010-2030 at 2pm.",
        ]
    )
)
def test_reordering_sentences_gives_an_empty_diff(sentences: list[str]) -> None:
    original = (
        "Pay $14,250 by 2026-03-25. Do not contact Marcus Chen. Ticket TKT-00123 is open. "
        "Discount 15% on 7 business days. Call 555-010-2030 at 2pm."
    )
    assume(sentences)
    assert diff(original, " ".join(sentences)).empty
