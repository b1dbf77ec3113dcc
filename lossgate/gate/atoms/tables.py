"""Lookup tables of the atom extractor.

Kept apart from the regexes so the normalisation rules can be read (and
reviewed) as data. Everything here is immutable.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from types import MappingProxyType

# --- money ---------------------------------------------------------------

#: Currency symbols. "$" is read as USD and "¥" as JPY: prose rarely says
#: which dollar or yen it means, and a stable guess beats no key at all.
CURRENCY_SYMBOLS: Mapping[str, str] = MappingProxyType(
    {
        "US$": "USD",
        "C$": "CAD",
        "CA$": "CAD",
        "A$": "AUD",
        "AU$": "AUD",
        "NZ$": "NZD",
        "HK$": "HKD",
        "S$": "SGD",
        "R$": "BRL",
        "$": "USD",
        "€": "EUR",
        "£": "GBP",
        "¥": "JPY",
        "₹": "INR",
        "₩": "KRW",
        "₽": "RUB",
        "₺": "TRY",
        "₪": "ILS",
        "฿": "THB",
        "₫": "VND",
        "₦": "NGN",
    }
)

#: ISO 4217 codes we recognise when written in upper case next to a number.
CURRENCY_CODES: frozenset[str] = frozenset(
    "USD EUR GBP JPY CNY INR CAD AUD NZD CHF SEK NOK DKK PLN CZK HUF MXN BRL "
    "ZAR SGD HKD KRW TRY ILS RUB AED SAR THB VND NGN IDR MYR PHP TWD".split()
)

#: Currency words after a number. "pounds" alone is a weight (see UNITS);
#: only "pounds sterling" is money.
CURRENCY_WORDS: Mapping[str, str] = MappingProxyType(
    {
        "dollar": "USD",
        "dollars": "USD",
        "bucks": "USD",
        "euro": "EUR",
        "euros": "EUR",
        "pound sterling": "GBP",
        "pounds sterling": "GBP",
        "yen": "JPY",
        "yuan": "CNY",
        "renminbi": "CNY",
        "rupee": "INR",
        "rupees": "INR",
    }
)

#: Multipliers written after an amount ("$14.25k", "$2.5 million").
SCALES: Mapping[str, int] = MappingProxyType(
    {
        "k": 10**3,
        "thousand": 10**3,
        "m": 10**6,
        "mm": 10**6,
        "mn": 10**6,
        "million": 10**6,
        "b": 10**9,
        "bn": 10**9,
        "billion": 10**9,
        "t": 10**12,
        "tn": 10**12,
        "trillion": 10**12,
    }
)

# --- quantities ----------------------------------------------------------

#: canonical unit -> surface forms (matched case-insensitively unless the
#: form is a single letter, which must be lower case: "5 G" is not grams).
UNITS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "business_day": ("business days", "business day", "working days", "working day", "business-days", "bdays"),
        "day": ("calendar days", "calendar day", "days", "day"),
        "hour": ("hours", "hour", "hrs", "hr", "h"),
        "minute": ("minutes", "minute", "mins", "min"),
        "second": ("seconds", "second", "secs", "sec", "s"),
        "ms": ("milliseconds", "millisecond", "msec", "ms"),
        "week": ("weeks", "week", "wks", "wk"),
        "month": ("months", "month"),
        "year": ("years", "year", "yrs", "yr"),
        "mg": ("milligrams", "milligram", "mg"),
        "kg": ("kilograms", "kilogram", "kgs", "kg"),
        "g": ("grams", "gram", "g"),
        "lb": ("pounds", "pound", "lbs", "lb"),
        "oz": ("ounces", "ounce", "oz"),
        "km": ("kilometers", "kilometer", "kilometres", "kilometre", "km"),
        "cm": ("centimeters", "centimeter", "centimetres", "centimetre", "cm"),
        "mm": ("millimeters", "millimeter", "millimetres", "millimetre", "mm"),
        "m": ("meters", "meter", "metres", "metre", "m"),
        "mile": ("miles", "mile", "mi"),
        "ft": ("feet", "foot", "ft"),
        "tb": ("terabytes", "terabyte", "tb"),
        "gb": ("gigabytes", "gigabyte", "gb"),
        "mb": ("megabytes", "megabyte", "mb"),
        "kb": ("kilobytes", "kilobyte", "kb"),
        "byte": ("bytes", "byte"),
        "percentage_point": ("percentage points", "percentage point", "pp"),
        "line_item": ("line items", "line item"),
        "word": ("words", "word"),
        "token": ("tokens", "token"),
        "character": ("characters", "character", "chars"),
        "item": ("items", "item"),
        "user": ("users", "user"),
        "seat": ("seats", "seat"),
        "license": ("licenses", "license", "licences", "licence"),
        "unit": ("units", "unit"),
        "request": ("requests", "request"),
        "call": ("calls", "call"),
        "ticket": ("tickets", "ticket"),
        "page": ("pages", "page"),
        "message": ("messages", "message"),
        "employee": ("employees", "employee"),
        "person": ("people", "persons", "person"),
        "customer": ("customers", "customer"),
        "order": ("orders", "order"),
        "invoice": ("invoices", "invoice"),
        "transaction": ("transactions", "transaction"),
        "attempt": ("attempts", "attempt"),
        "retry": ("retries", "retry"),
    }
)

#: Units that convert exactly within a dimension, so "2 weeks" preserves
#: "14 days". Months, years and business days do not convert exactly and are
#: deliberately absent.
UNIT_FACTORS: Mapping[str, tuple[str, Decimal]] = MappingProxyType(
    {
        "ms": ("time", Decimal("0.001")),
        "second": ("time", Decimal(1)),
        "minute": ("time", Decimal(60)),
        "hour": ("time", Decimal(3600)),
        "day": ("time", Decimal(86400)),
        "week": ("time", Decimal(604800)),
        "mg": ("mass", Decimal("0.001")),
        "g": ("mass", Decimal(1)),
        "kg": ("mass", Decimal(1000)),
        "mm": ("length", Decimal("0.001")),
        "cm": ("length", Decimal("0.01")),
        "m": ("length", Decimal(1)),
        "km": ("length", Decimal(1000)),
    }
)

NUMBER_WORDS: Mapping[str, int] = MappingProxyType(
    {
        w: i
        for i, w in enumerate(
            "zero one two three four five six seven eight nine ten eleven twelve "
            "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
        )
    }
    | {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100}
)

# --- dates and times -----------------------------------------------------

MONTHS: Mapping[str, int] = MappingProxyType(
    {
        "jan": 1,
        "january": 1,
        "feb": 2,
        "february": 2,
        "mar": 3,
        "march": 3,
        "apr": 4,
        "april": 4,
        "may": 5,
        "jun": 6,
        "june": 6,
        "jul": 7,
        "july": 7,
        "aug": 8,
        "august": 8,
        "sep": 9,
        "sept": 9,
        "september": 9,
        "oct": 10,
        "october": 10,
        "nov": 11,
        "november": 11,
        "dec": 12,
        "december": 12,
    }
)

WEEKDAYS: Mapping[str, int] = MappingProxyType(
    {
        "monday": 0,
        "mon": 0,
        "tuesday": 1,
        "tue": 1,
        "tues": 1,
        "wednesday": 2,
        "wed": 2,
        "thursday": 3,
        "thu": 3,
        "thur": 3,
        "thurs": 3,
        "friday": 4,
        "fri": 4,
        "saturday": 5,
        "sat": 5,
        "sunday": 6,
        "sun": 6,
    }
)
WEEKDAY_ABBR: tuple[str, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

#: Zone abbreviations -> UTC offset. Ambiguous ones take the reading an
#: English-language business text most likely means (IST = India,
#: BST = British Summer Time, CST = US Central). Generic zones that do not
#: say whether daylight saving applies ("ET", "PT") have no fixed offset and
#: are kept by name.
ZONE_OFFSETS: Mapping[str, str] = MappingProxyType(
    {
        "UTC": "+00:00",
        "GMT": "+00:00",
        "Z": "+00:00",
        "WET": "+00:00",
        "EST": "-05:00",
        "EDT": "-04:00",
        "CST": "-06:00",
        "CDT": "-05:00",
        "MST": "-07:00",
        "MDT": "-06:00",
        "PST": "-08:00",
        "PDT": "-07:00",
        "AKST": "-09:00",
        "AKDT": "-08:00",
        "HST": "-10:00",
        "BST": "+01:00",
        "CET": "+01:00",
        "CEST": "+02:00",
        "WEST": "+01:00",
        "EET": "+02:00",
        "EEST": "+03:00",
        "MSK": "+03:00",
        "IST": "+05:30",
        "SGT": "+08:00",
        "HKT": "+08:00",
        "JST": "+09:00",
        "KST": "+09:00",
        "AEST": "+10:00",
        "AEDT": "+11:00",
        "NZST": "+12:00",
        "NZDT": "+13:00",
    }
)
GENERIC_ZONES: frozenset[str] = frozenset({"ET", "CT", "MT", "PT"})
EOD = "eod"

# --- statements ----------------------------------------------------------

#: Words that open a negated statement. Contractions ending in n't are
#: recognised separately.
NEGATION_CUES: frozenset[str] = frozenset("not never no without cannot nobody nothing none neither nor nowhere".split())

#: Words that end a clause, so a negation does not reach into the next one.
CLAUSE_BREAKS: frozenset[str] = frozenset(
    "and but because although though while unless until whereas however "
    "since so if when whenever otherwise then therefore".split()
)

#: Function words dropped from statement keys.
STOPWORDS: frozenset[str] = frozenset(
    """
a an the this that these those some any all each every either both such
i me my we us our you your he him his she her it its they them their there
here who whom whose which what where why how one ones
am is are was were be been being do does did doing done have has had having
will would shall should can could may might must need ought get got gets
to of for by with at on in into onto from about as than over under up down
out off per via upon within after before during through
or also just only even ever yet still already really very too again much more
most less least quite rather please kindly now later soon ok okay
""".split()
)

BE_FORMS: frozenset[str] = frozenset({"be", "been", "being"})

# --- parties -------------------------------------------------------------

#: Titles that introduce a name and are not part of it.
TITLES: frozenset[str] = frozenset(
    "Mr Mrs Ms Mx Dr Prof Sir Dame Rev Hon CEO CTO CFO COO CIO CISO CMO CPO "
    "VP SVP EVP President Director Manager Chair Chairman Chairwoman Officer "
    "Engineer Counsel Senator Judge Captain".split()
)

#: Company suffixes -> canonical spelling.
COMPANY_SUFFIXES: Mapping[str, str] = MappingProxyType(
    {
        "Corp": "Corp",
        "Corporation": "Corp",
        "Inc": "Inc",
        "Incorporated": "Inc",
        "LLC": "LLC",
        "L.L.C": "LLC",
        "Ltd": "Ltd",
        "Limited": "Ltd",
        "GmbH": "GmbH",
        "PLC": "PLC",
        "Plc": "PLC",
        "AG": "AG",
        "SA": "SA",
        "S.A": "SA",
        "Co": "Co",
        "Company": "Co",
        "LLP": "LLP",
        "LP": "LP",
        "NV": "NV",
        "BV": "BV",
        "Pty": "Pty",
        "SE": "SE",
        "Group": "Group",
        "Holdings": "Holdings",
    }
)

#: Capitalised words that are not names (sentence starters, roles, calendar
#: words). A name run is split at any of these.
PARTY_STOPWORDS: frozenset[str] = frozenset(
    """
The A An This That These Those It Its I We You He She They Our Your Their My
His Her Us Them Me If When Then And But Or So Please Thanks Thank Hi Hello
Hey Dear Yes No Not Ok Okay Sure Note Also However Customer Customers Client
Clients User Users Agent Agents Assistant System Tool Tools Call Calls
Invoice Invoices Team Support Sales Billing Account Accounts Order Orders
Ticket Tickets Today Tomorrow Yesterday Tonight Re Fwd Subject From To Cc
Summary Update Updates Meeting Action Item Items Next Last New After Before
On In At For With By Per Via Of As Is Are Was Were Be Do Does Did Has Have
Had Will Would Should Can Could May Might Must Here There What Which Who Why
How Where All Any Some Each Every No None Both Monday Tuesday Wednesday
Thursday Friday Saturday Sunday Mon Tue Tues Wed Thu Thurs Fri Sat Sun
January February March April June July August September October November
December Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec Q1 Q2 Q3 Q4 AM PM
Step Steps Section Chapter Figure Table Page Line Total Amount Payment
Credit Memo Refund Request Reply Response Question Answer User's Agent's
Dispute Error Warning Info Debug Yesterday's Today's Tomorrow's Good Great
Okay Done Sorry Let Lets Let's Got Just Well Now Once Only Our Also
""".split()
)
