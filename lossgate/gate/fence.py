"""The critical-topic fence: a narrative sentence about what matters may not change its meaning.

The prose fact diff compares atoms (numbers, dates, ids, negated statements) as sets, so
a model's narrative can contradict the memory in new words and keep every atom: "they can
eat peanuts now", "the earlier timezone no longer applies", a refund limit restated
without its "after supervisor review". The fence closes the most common of these for the
topics that matter, deterministically, with no model.

**Topics.** Each active fact whose loss is critical (:meth:`MustPreserve.loss_severity`),
each unresolved conflict, and each fact that is quoted or rests on untrusted or tool
text has a signature: the stems of its predicate's words, its value and its qualifier
values (the *key*), and the content stems of the events it was drawn from (the *context*).

**Sentences.** The summary less its structured lines (:func:`~lossgate.gate.prose.prose_of`)
and less the conversation lines that quote an event verbatim (``- actor: text``, under
their day headers), split into sentences. A sentence *touches* a topic when it shares a
key stem with it, two context stems, or names a side of an open conflict; a sentence that
touches none and opens with a pronoun ("That no longer holds.") speaks of the topics of
the sentence before it.

**Meaning, not wording.** A touching sentence may say what its sources said in any words.
What it may not change is the meaning-bearing part, each compared with the source
sentences of its topics (and those it shares two words with) and with the ledger:

* *polarity*: a word the sources affirm negated ("not permitted" for "you may refund"), a
  negative fact's value negated or stated as allowed or wanted ("calling the user is
  fine", "they can eat peanuts"), an avoidance negated ("not allergic"), a source's
  negation dropped, a prohibition narrowed by a scope no source names ("on weekends"), a
  source's condition reversed ("without supervisor review"), an obligation denied;
* *conditions*: a condition dropped that the source sentence it restates sets ("only",
  "after", "unless", "up to", ...; kept by a word of its kind, "capped at" for "up to",
  or by what its clause names), a fact's conditional qualifier dropped ("staging only"),
  a restriction no source sets added ("only for domestic orders", "except weekends");
* *modality*: a hedge no source has ("may be", "probably", "about 20 kg"), a speculative
  fact stated as settled, a settled fact called open or disputed;
* *time*: a change no source states ("no longer", "reversed"; "moved", "updated" are
  fine where a source or the ledger's history tells of a change), a change the ledger
  records denied ("hasn't changed"), an open obligation called done;
* *provenance*: words only untrusted or tool text supplies stated as fact, put in the
  user's mouth, or raised to an instruction ("the agent must ...") even when attributed;
* *conflicts*: an open conflict answered: one side stated alone, both put in order, one
  declared void or "the real one", unless the sentence leaves it open.

A sentence that only tells that something was said ("they discussed the refund policy",
"a rule about when they may be emailed") states no value and sets no condition aside.

An unsupported sentence fails the artifact with ``narrative_unsupported`` (critical),
naming the topic, why, and quoting the sentence. A narrative that touches no topic is
never judged here.

**Precision first.** The fence refuses on evidence that the meaning changed, never on
unfamiliar words, so that a model's faithful paraphrase publishes: on the shipped
hand-written corpora (``lossgate eval narratives``) it refuses 1 of 1,044 faithful
sentences and catches 35-48% of the wrong ones on its own; on a corpus it had not
been fitted to, 2-5% (see the README). What it passes is for a model
judge (:mod:`lossgate.judge`): antonyms and synonyms ("dislikes", "approved" for "not
authorized"), a wrong subject, a severity softened ("more of a preference"), and any
contradiction that touches no topic's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from lossgate.consolidate.compressor import CONVERSATION_TITLE
from lossgate.gate.atoms import extract_atoms
from lossgate.gate.atoms.statements import content_stems
from lossgate.gate.outcome import Violation
from lossgate.gate.preserve import MustPreserve
from lossgate.gate.prose import prose_of
from lossgate.gate.sources import render_value
from lossgate.lines import day_line, event_line
from lossgate.records import ArtifactBody, Event, Fact, Snapshot
from lossgate.registry import Registry

__all__ = ["check_fence", "clear_sentence_cache", "narrative_sentences", "numbers_in", "Topic", "topics"]

NARRATIVE_TITLES = frozenset({CONVERSATION_TITLE, "Narrative:"})
# A sentence ends at ., ! or ? and a space, but not after an abbreviation ("i.e.", "Dr.").
_SENTENCE = re.compile(r"(?<=[.!?])(?<!\bi\.e\.)(?<!\be\.g\.)(?<!\betc\.)(?<!\bvs\.)(?<!\bMr\.)(?<!\bMs\.)"
                       r"(?<!\bDr\.)(?<!\bMrs\.)(?<!\bapprox\.)(?<!\bSt\.)\s+|\n+")
_CONDITIONS = {
    name: re.compile(pattern) for name, pattern in {
        "only": r"\bonly\b", "after": r"\bafter\b", "before": r"\bbefore\b", "unless": r"\bunless\b",
        "until": r"\buntil\b|\btill\b", "if": r"\bif\b", "except": r"\bexcept\b|\bexcluding\b",
        "up to": r"\bup to\b", "at most": r"\bat most\b", "at least": r"\bat least\b",
        "no more than": r"\bno more than\b", "within": r"\bwithin\b", "provided": r"\bprovided\b",
    }.items()
}
_MARKERS = (r"only|after|before|unless|until|till|if|except|excluding|up to|at most|at least|no more than|within|"
            r"provided")
# A condition clause: from its marker to the next marker or punctuation (what a narrative may drop).
_CLAUSE = re.compile(rf"\b(?:{_MARKERS})\b(?:(?!\b(?:{_MARKERS})\b)[^,;.!?()])*")
_MARKER_WORDS = content_stems(_MARKERS.replace("|", " "))
# A condition is kept by its own word, by a word of its kind ("capped at $50" keeps "up to
# $50"), or by what its clause names ("needs supervisor sign-off" keeps "after supervisor review").
_BOUND_WORDS = (r"up to|at most|no more than|within|max|maximum|cap|capped|limit|limited|ceiling|under|below|"
                r"not (?:to )?exceed|or less|no later than")
_KINDS = {
    "only": "only", "after": "after", "before": "before", "unless": "unless", "until": "before", "if": "if",
    "except": "unless", "up to": "bound", "at most": "bound", "no more than": "bound", "within": "bound",
    "at least": "floor", "provided": "if",
}
_KEEPS = {
    kind: re.compile(rf"\b(?:{pattern})\b") for kind, pattern in {
        "only": r"only|solely|exclusively|exclusive|sole|single|just|limited to|restrict\w*|confined to|"
                r"nothing but|nothing else|nowhere else|no one else|no other|not any other|other than|anything but",
        "after": r"after|once|following|upon|subject to|pending|requires?|required|needs?|first",
        "before": r"before|until|till|prior to|ahead of|by|no later than|(?:earlier|sooner) than",
        "unless": r"unless|except|excluding|if not|without|other than|apart from|besides",
        "if": r"if|provided|when|whenever|as long as|in case|on condition|conditional|assuming|so long as",
        "bound": _BOUND_WORDS + r"|as much as|as many as|a maximum of|tops|(?:\bnot|\bnever|\bno|[’']t)\s+(?:\w+\s+){0,2}"
                                r"(?:(?:more|longer|later|over) than|above|beyond|exceed\w*)",
        "floor": r"at least|minimum|min|or more|no less than|no fewer than",
    }.items()
}
# A scope set by "only" before or after it ("only for domestic orders", "for annual plans only").
_ONLY_SCOPES = (
    re.compile(r"\bonly\s+(?:for|to|during|in|on|after|before|when|if|with|within)\s+([^,;.!?]+)"),
    re.compile(r"\b(?:for|to|during|in|on|with)\s+((?:(?!(?:but|and|or|are|is|was|were|be)\b)[a-z]+\s+){0,3}?[a-z]+)"
               r"\s+only\b"),
)
# A restriction no source sets is invented ("refund $50, except to new customers").
_RESTRICTIONS = frozenset({"unless", "except", "at most", "at least", "no more than", "provided"})
# A negated bound restates a limit ("may not refund more than $50"), it does not flip it.
_BOUND = re.compile(r"\b(?:more|less|fewer|over|above|beyond|exceed|exceeds|exceeding|without|other than|"
                    r"anything but|anywhere but|anyone but|nowhere else|nothing else|no other|except|later|earlier|"
                    r"sooner|longer)\b")
# A hedge. "may" grants permission as often as it hedges ("you may refund up to $50"): it
# hedges when a person or thing (not "you") may, or when it may *be* or *have*; not in a
# passive ("invoices may be shared" permits).
_HEDGES = re.compile(r"\b(?:might|could (?:be|have)|maybe|perhaps|possibly|probably|likely|unsure|uncertain|considering|"
                     r"thinking about|tentative|tentatively|potential|potentially|supposedly|apparently|reportedly|"
                     r"presumably|seems?|appears? to|thought to be|believed to be|generally|usually|typically|"
                     r"ideally|preferably|best to|if possible|try to|sometime|somewhere|something like|or so)\b"
                     # an amount or a date approximated: "about 20 kg", "around 2026-05-01"
                     r"|\b(?:about|around|roughly|approximately|approx\.?|nearly|almost|close to)\s+[$€£]?[0-9]")
_MAY_HEDGE = re.compile(r"\b(?:i|he|she|it|they|this|that|there|user|customer|client)\s+may\b(?!\s+be\s+\w+(?:ed|en)\b)"
                        r"|\bmay\s+(?:have|be(?!\s+\w+(?:ed|en)\b))")
# How a summary leaves a question open: about an open conflict, an obligation or a hedged
# fact, hedging is faithful.
_OPEN_RX = re.compile(r"\b(?:open|pending|outstanding|disputed|dispute|conflicting|conflict|unresolved|undecided|"
                      r"unclear|unsettled|undetermined|either|neither|both|whether|confirm|clarify|verify|"
                      r"(?:not|n[’']t)\s+(?:yet\s+)?(?:been\s+)?(?:settled|decided|resolved|clear|confirmed|"
                      r"finali[sz]ed|fixed|reconciled|agreed)|(?:do|does|did)(?: not|n[’']t) (?:yet )?know|"
                      r"not (?:yet )?known|unknown|which one|which of|not sure|no idea)\b")
# What calls a fact open: said of a settled fact, it invents a doubt.
_DOUBT = re.compile(r"\b(?:disputed|in dispute|unresolved|undecided|unclear|unsettled|undetermined|uncertain|"
                    r"open question|still open|up in the air|tbd|to be decided|to be confirmed)\b"
                    r"|(?:\bnot|n[’']t)\s+(?:yet\s+)?(?:been\s+)?(?:settled|decided|resolved|clear|confirmed|finali[sz]ed|fixed)\b")
# What answers an open conflict, or settles a speculation.
_SETTLING = re.compile(r"\b(?:real|actual|actually|correct|right one|valid|official|final|definitive|definitely|stands|"
                       r"overrides?|overridden|takes precedence|in favou?r of|cleared up|sorted out|resolved|settled|"
                       r"decided|certain|confirmed as)\b")
# What says an obligation is met.
_DONE = re.compile(r"\b(?:done|completed|taken care of|handled|fulfilled|finished|already (?:been )?(?:sent|called|"
                   r"issued|paid|made|delivered))\b")
# What makes "done" a task ("you should have the report done by Friday").
_OWED = re.compile(r"\b(?:should|must|need to|needs to|has to|have to|to be|to get|make sure|remember to|due)\b")
# What says an obligation never was one.
_NO_NEED = re.compile(r"\b(?:no need|not (?:need|required|necessary)|(?:does|do|did)\s*n[o’']t\s*(?:need|have) to|"
                      r"need not|needn[’']t|optional)\b")
# A change of state. *Undoing* words say the fact no longer holds: a sentence may say so
# only of a value the ledger has superseded, or when it restates a source saying so.
# *Moving* words tell of a new value: fine wherever a source or the ledger's history
# tells of a change.
_UNDOING = re.compile(r"\b(?:no longer|any ?more|used to|reversed|reverse|opposite|overturned|lifted|outgrew|"
                      r"outgrown|withdrawn|withdrew|retracted|revoked|cancel(?:l?ed)?|scrapped|void|obsolete|"
                      r"outdated|stale|superseded|differently|overrides?|overridden|walked back|went back|"
                      r"reverted|back to the original|(?:was|were|been|got)\s+(?:\w+\s+)?dropped)\b")
_MOVING = re.compile(r"\b(?:changed|changes|change|updated|update|replac\w*|switched|moved|rescheduled|"
                     r"postponed|pushed back|lowered|increased|reduc\w*|decreas\w*|cut back|bumped|upgraded|"
                     r"downgraded|correction|corrected|revised)\b")
# What turns a source's condition around ("without supervisor review" for "after supervisor review").
_REVERSED = re.compile(r"\b(?:without|no|not|never|skip\w*|bypass\w*|waiv\w*|regardless of|even without)\s+(?:\w+\s+){0,2}$")
# What makes an instruction of a text, and what disowns one.
_DIRECTIVE = re.compile(r"\b(?:must|should|shall|has to|have to|needs? to|(?:is|are|was|were) (?:instructed|required|"
                        r"told|expected|supposed) to)\b")
_DISOWNED = re.compile(r"\b(?:ignore|ignored|disregard|untrusted|not (?:an? )?(?:instruction|rule|order)|not from)\b")
# A permission a source grants, and one a sentence denies.
_GRANTS = re.compile(r"\b(?:you|agent|agents|we)\s+(?:may|can|are allowed to|are permitted to|are authori[sz]ed to)\b")
_PERMISSION_DENIED = re.compile(r"(?:\bnot|\bnever|n[’']t)\s+(?:be\s+)?(?:permitted|allowed|authori[sz]ed|able)\b"
                                r"|\b(?:cannot|can[’']t|may not|mustn[’']t|must not)\s+(?!\w+\s+(?:more|over|above|beyond))")
# A move told in words (an "Update:" label tells none).
_RETOLD = re.compile(r"\b(?:changed|replac\w*|switched|moved|rescheduled|postponed|pushed back|lowered|increased|"
                     r"reduc\w*|decreas\w*|bumped|upgraded|downgraded|corrected|revised)\b")
# What denies a change the ledger records ("the date hasn't changed").
_UNCHANGED = re.compile(r"\b(?:unchanged|still the same|same as (?:before|originally|first set)|as originally)\b")
# What says that a negative fact holds ("peanut-free", "off limits"), besides a negation.
_AVOID_WORDS = (r"avoid|avoids|avoiding|refrain|exclude|excluded|excluding|prohibit|"
                    r"prohibited|forbid|forbidden|ban|banned|barred|allergic|allergy|allergies|intolerant|"
                    r"off[- ]limits|off the table|keep (?:\w+\s+){1,3}(?:off|out|away)|steer clear|stay away|withheld|withhold|refused|refuses|declined|declines|denied|denies|"
                    r"opted out|objects?|lack|lacks|lacked|lacking|missing|absent|failed to|unauthori[sz]ed")
_AVOID = re.compile(rf"\w-free\b|\b(?:{_AVOID_WORDS})\b")
# An avoidance negated ("not allergic", "no longer avoids"): said of a negative fact, a flip.
_UNAVOID = re.compile(rf"(?:\b(?:not|never|no longer)|n[’']t)\s+(?!merely|just|only|simply)(?:\w+\s+){{0,2}}"
                      rf"(?:{_AVOID_WORDS})\b")
# A scope a negation can be narrowed by: the word after a preposition ("on weekends").
_SCOPE = re.compile(r"\b(?:on|at|in|during|for|within|between|outside|before|after|until|while|when|via|over|"
                    r"through|from)\s+(?:the\s+|a\s+|an\s+|their\s+|his\s+|her\s+|its\s+|my\s+|our\s+)?(\w+)")
# What allows or wants: said of a negative fact without a negation, it turns it around. Not
# after a question word ("a policy on how invoices may be shared").
_QUESTION = re.compile(r"\b(?:how|whether|what|which|if|when|where|why|who)\b")
_PERMITS = re.compile(r"\b(?:can|may|allowed|permitted|fine|ok|okay|safe|happy|glad|good|acceptable|encouraged|"
                      r"free to|able|welcome|want|wants|wanted|like|likes|love|loves|enjoy|enjoys|prefer|"
                      r"prefers|request|requests|requested|crave|craves|keen)\b")
_STANCE_STEMS = content_stems("can may allowed permitted fine ok okay safe happy glad good acceptable encouraged "
                              "free able welcome want wants wanted "
                              "like likes love loves enjoy enjoys prefer prefers request requests requested "
                              "crave craves keen")
# A sentence that tells *that* something was said or set, not *what*: it states no value.
_MENTION = re.compile(r"\b(?:discussed|mentioned|talked about|came up|brought up|asked about|covered|"
                      r"(?:was|were) (?:set|laid down|given|raised)|laid down|(?:rule|rules|instruction|instructions|"
                      r"policy|question|request|note|permissions?) (?:about|on|for|covering|regarding|concerning)|"
                      r"(?:permissions?|perms|rules?|polic(?:y|ies)) (?:were|was|are|is) set|status (?:captured|recorded|"
                      r"noted|logged)|(?:scoped|set|granted|defined|configured) by)\b")
# A sentence that opens with one of these and names no topic speaks of the sentence before it.
_ANAPHOR = re.compile(r"\s*(?:that|this|it|they|these|those|which|such|he|she|the same)\b", re.IGNORECASE)
_NEGATION_CUE = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot)\b|n[’']t\b|[✗✘❌]")
_ATTRIBUTION = content_stems(
    "user users customer customers client clients agent assistant member requester subject person "
    "said says say saying told tell tells asked asks ask mentioned mentions mention wrote writes write "
    "stated states state according quoted quotes quote claimed claims claim reported reports report "
    "forwarded forwards noted notes replied replies explained explains gave give gives two both "
    # permission said another way ("you may refund" -> "refunds are allowed"); a negation is
    # still compared, so "not allowed" never passes for "may"
    "allowed allow allows permitted permit permits able")
_REPORTING = content_stems("said says say saying told tells wrote writes stated states according quoted quotes "
                           "claimed claims reported reports forwarded forwards mentioned mentions asked asks ask")
_USER_WORDS = content_stems("user users customer customers client clients")
# How a summary names where text came from, when it reports untrusted or tool text.
_META = content_stems("quote quoted untrusted source sources retrieved support ticket tickets email emails mail "
                      "mails page pages document documents message messages web website tool tools file "
                      "attachment chat")
# Words that put two values in order: naming both sides of a conflict this way settles it.
_ORDERING = re.compile(r"\b(?:earlier|later|previously|formerly|no longer|used to|instead|replaced|superseded|"
                       r"current|currently|latest|newer|older|now)\b")
# Nouns a summary names the subject by, besides "the user": free to use, still topic words.
_SUBJECT_NOUNS = content_stems("account team company organisation organization household family")
_LOW_TRUST = frozenset({"untrusted", "tool"})
_WORDY = frozenset({"negation", "party"})  # atom kinds that are words, kept in a sentence


@dataclass(frozen=True)
class Topic:
    """What a narrative may only restate: a critical fact, an open conflict or a quoted instruction."""

    subject: str  # the violation's subject: a fact id or a conflict id
    what: str  # "critical fact food.peanuts_allowed", "open conflict on timezone", ...
    key: frozenset[str]
    context: frozenset[str]
    events: tuple[str, ...]  # the event ids it was drawn from
    sides: tuple[frozenset[str], ...] = ()  # an open conflict: each side's value, as stems and numbers
    quoted: bool = False  # quoted, untrusted or tool text: its own words are not the memory's
    open: bool = False  # an open conflict, or an obligation not yet met: "pending", "disputed" fit it
    value: frozenset[str] = frozenset()  # a fact's value, as the words and numbers that state it
    negated: frozenset[str] = frozenset()  # a negative fact: its predicate's last word ("allowed"), never said bare
    speculative: bool = False  # its value is only what someone may do or be: never stated as settled
    earlier: frozenset[str] = frozenset()  # the values its predicate had before (superseded facts)
    changed: bool = False  # the ledger superseded or revoked an earlier value of its predicate
    object: frozenset[str] = frozenset()  # a negative fact: what it forbids ("peanut", "phone"), not its namespace
    names: frozenset[str] = frozenset()  # its key less its namespace: a sentence naming these states it
    predicate: str = ""  # a fact's predicate
    forbidden: frozenset[str] = frozenset()  # the words its sources negate ("serve", "call")
    subject_words: frozenset[str] = frozenset()  # what every one of its (two or more) sources speaks of ("kickoff")
    conditional: tuple[frozenset[str], ...] = ()  # qualifiers that set a condition ("staging only"), as stems
    obligation: bool = False  # something to do, not yet done


@dataclass(frozen=True)
class _Source:
    text: str  # lower case
    stems: frozenset[str]
    core: frozenset[str]  # the stems outside its condition clauses: what it is about
    negations: frozenset[str]  # keys of the negated statements (``not|head|word...``)
    conditions: tuple[tuple[str, frozenset[str]], ...]  # (kind of condition, the stems of its clause)
    hedged: bool
    moves: bool  # it tells of a new value ("moved to", "correction:")
    undoes: bool  # it says something no longer holds


def topics(snapshot: Snapshot, must: MustPreserve, registry: Registry) -> list[Topic]:
    """The topic signatures of the snapshot (see the module docstring)."""
    events = {e.event_id: e for e in snapshot.events if e.state == "valid"}
    active = {f.fact_id: f for f in snapshot.facts if f.status == "active"}
    # What a predicate's value was before: a sentence may tell of the change ("moved from ...").
    earlier: dict[str, frozenset[str]] = {}
    retired = {f.predicate for f in snapshot.facts if f.status in ("superseded", "revoked")}
    for f in snapshot.facts:
        if f.status == "superseded":
            earlier[f.predicate] = earlier.get(f.predicate, frozenset()) | _value_words(f)

    def key_of(*facts_: Fact) -> frozenset[str]:
        # the predicate's words, less the generic ones ("quoted.request"); its qualifier
        # values and a text value whole ("channel": "email" names the email channel)
        named: list[str] = []
        for f in facts_:
            named += [str(v) for _, v in f.qualifiers]
            if isinstance(f.value, str):
                named.append(f.value)
        predicates = " ".join(f.predicate.replace(".", " ").replace("_", " ") for f in facts_)
        return (content_stems(predicates) - _META | content_stems(" ".join(named))) - _ATTRIBUTION

    def sources_of(*facts_: Fact) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e for f in facts_ for e in f.source_event_ids if e in events))

    def context_of(ids: tuple[str, ...]) -> frozenset[str]:
        return content_stems(" ".join(events[e].text or "" for e in ids)) - _ATTRIBUTION - _META

    out: list[Topic] = []
    for f in active.values():
        quoted = f.modality == "quoted" or f.authority in _LOW_TRUST
        if must.loss_severity(f.fact_id) == "critical" or quoted:
            what = f"{'quoted text' if quoted else 'critical fact'} {f.predicate}"
            ids = sources_of(f)
            negative = f.polarity == "negative" or (f.value_type == "bool" and f.value is False)
            spec = registry.predicates.get(f.predicate)
            obligation = spec is not None and spec.category == "obligation"
            last = f.predicate.replace(".", "_").split("_")[-1]
            forbidden = frozenset(w for e in ids for src in _read_source(events[e].text or "") for n in src.negations
                                  for w in n.split("|")[1:]) - _ATTRIBUTION
            conditional = tuple(content_stems(str(v)) - _MARKER_WORDS for _, v in f.qualifiers
                                if _conditions(str(v)) and content_stems(str(v)) - _MARKER_WORDS)
            names = key_of(f) - content_stems(f.predicate.rpartition(".")[0].replace("_", " "))
            history = [e for g in snapshot.facts if g.predicate == f.predicate for e in g.source_event_ids
                       if e in events]
            common = (frozenset.intersection(*(context_of((e,)) for e in dict.fromkeys(history)))
                      if len(set(history)) >= 2 else frozenset())
            out.append(Topic(f.fact_id, what, key_of(f), context_of(ids), ids, quoted=quoted, value=_value_words(f),
                             names=names, subject_words=common, predicate=f.predicate,
                             negated=content_stems(last) if negative else frozenset(), open=obligation,
                             obligation=obligation, forbidden=forbidden, conditional=conditional,
                             speculative=f.modality == "speculative", earlier=earlier.get(f.predicate, frozenset()),
                             changed=f.predicate in retired,
                             object=key_of(f) - content_stems(f.predicate.rpartition(".")[0].replace("_", " "))
                             - content_stems(last) if negative else frozenset()))
    for c in snapshot.conflicts:
        sides = [active[i] for i in c.fact_ids if i in active]
        if c.status == "unresolved" and len(sides) == 2:
            ids = sources_of(*sides)
            values = tuple(_value_words(f) for f in sides)
            out.append(Topic(c.conflict_id, f"open conflict on {sides[0].predicate}", key_of(*sides) - values[0]
                             - values[1] | (values[0] & values[1]), context_of(ids), ids, values, open=True))
    return out


def _value_words(f: Fact) -> frozenset[str]:
    """A fact's value as a sentence states it: its atoms' keys where it has atoms (an amount,
    a date: written any way), else its words and numbers."""
    text = render_value(f.value_type, f.value)[0] if f.value is not None and f.value_type != "bool" else ""
    return _atom_keys(text) or content_stems(text) | numbers_in(text)


def _atom_keys(text: str) -> frozenset[str]:
    return frozenset(f"{a.kind}:{a.key}" for a in extract_atoms(text) if a.kind not in _WORDY)


def _stated(raw: str) -> frozenset[str]:
    """What a sentence states a value with: its atoms, words and numbers."""
    return _atom_keys(raw) | content_stems(raw) | numbers_in(raw)


def _sentences(text: str) -> list[tuple[str, str]]:
    """``text``'s sentences, each as written and with its atoms' spans (amounts, dates,
    times, identifiers) blanked: the prose fact diff compares those exactly, and their words
    ("USD", "April", the "May" of a date) say nothing about meaning here."""
    out = []
    for raw in _SENTENCE.split(text):
        raw = raw.strip(" -*\t") if raw else ""
        if not raw:
            continue
        plain = raw
        for a in extract_atoms(raw):
            if a.kind not in _WORDY and a.text:
                plain = plain.replace(a.text, " ")
        out.append((raw, plain))
    return out


def _negations(text: str) -> frozenset[str]:
    return frozenset(a.key for a in extract_atoms(text) if a.kind == "negation" and a.key.startswith("not|"))


def _conditions(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """Each condition ``text`` sets, by kind, with the content stems of its clause ("after
    supervisor review": ``("after", {"supervisor", "review"})``)."""
    low = text.lower()
    return tuple((_KINDS[name], content_stems(" ".join(m.group(0) for m in _CLAUSE.finditer(low)
                                                          if rx.match(m.group(0)))) - _MARKER_WORDS)
                 for name, rx in _CONDITIONS.items() if rx.search(low))


def _hedged(low: str) -> bool:
    """Whether ``low`` hedges, outside a question ("a rule about when emails may be sent")."""
    return any(not _QUESTION.search(low[: m.start()]) for rx in (_HEDGES, _MAY_HEDGE) for m in rx.finditer(low))


def _source_sentences(events: tuple[Event, ...]) -> dict[str, tuple[_Source, ...]]:
    return {e.event_id: _read_source(e.text or "") for e in events}


@lru_cache(maxsize=16_384)
def _read_source(text: str) -> tuple[_Source, ...]:
    # A subject's events are read again at every consolidation with a narrative: each text
    # is read once (clear_sentence_cache drops deleted text, as the gate's atom cache does).
    return tuple(_Source(text=x.lower(), stems=content_stems(x), core=content_stems(_CLAUSE.sub(" ", x.lower())),
                         negations=_negations(x), conditions=_conditions(x), hedged=_hedged(x.lower()),
                         moves=bool(_MOVING.search(x.lower())), undoes=bool(_UNDOING.search(x.lower())))
                 for _, x in _sentences(text))


def clear_sentence_cache() -> None:
    """Forget every source text read (after a deletion: no deleted text lingers in memory)."""
    _read_source.cache_clear()


def narrative_sentences(snapshot: Snapshot, artifact: ArtifactBody) -> list[tuple[str, str]]:
    """The summary's own sentences, as written and with atoms blanked: not its structured
    lines, not its verbatim quotes of events (what the fence and a model judge read)."""
    quoted = {event_line(e) for e in snapshot.events} | {day_line(e) for e in snapshot.events} | NARRATIVE_TITLES
    lines = [ln for ln in prose_of(artifact).split("\n") if ln.strip() and ln not in quoted]
    return [pair for ln in lines for pair in _sentences(ln)]


@dataclass(frozen=True)
class _Reading:
    """One narrative sentence, read once, with what its touched topics' sources said."""

    raw: str  # as written
    text: str  # as written, lower case
    low: str  # with its atoms blanked, lower case
    stems: frozenset[str]
    stated: frozenset[str]  # its atoms, words and numbers: does it state a value?
    touched: tuple[Topic, ...]
    said: tuple[_Source, ...]  # the source sentences of its topics and those it shares two words with
    ids: tuple[str, ...]  # the events behind ``said``
    cue: bool  # it holds a negation

    def restated(self, least: int = 2) -> list[_Source]:
        """The source sentences it shares ``least`` content words with."""
        return [src for src in self.said if len(src.stems & self.stems) >= least]


def _read(raw: str, sentence: str, touched: list[Topic], sources: dict[str, tuple[_Source, ...]]) -> _Reading:
    stems = content_stems(sentence)
    ids = tuple(dict.fromkeys(e for t in touched for e in t.events))
    # A sentence often joins a topic to what surrounds it: the source sentences it shares two
    # content words with count as said, too.
    near = [e for e, srcs in sources.items() if any(len(src.stems & stems) >= 2 for src in srcs)]
    ids = tuple(dict.fromkeys(ids + tuple(near)))
    low = sentence.lower()
    return _Reading(raw, raw.lower(), low, stems, _stated(raw), tuple(touched),
                    tuple(src for e in ids for src in sources.get(e, ())), ids, bool(_NEGATION_CUE.search(low)))


def _roots(words: object) -> set[str]:
    return {_root(w) for w in words}  # type: ignore[attr-defined]


def _polarity(r: _Reading) -> str | None:
    """A negation turned around: a word the sources affirm, negated; a value or an obligation
    denied; a condition reversed; a prohibition narrowed; a source's negation dropped; a
    negative fact stated without one."""
    source_negations = [n.split("|")[1:] for src in r.said for n in src.negations]
    scoped_sources = [n.split("|")[1:] for src in r.said if src.conditions for n in src.negations]
    heads = {n[0] for n in source_negations}
    used = frozenset().union(*(src.stems for src in r.said))
    affirmed = used - heads
    topical = frozenset().union(*(t.key | t.context | t.value for t in r.touched))
    positive = frozenset().union(*(t.key | t.value for t in r.touched if not t.negated and not t.quoted))
    free = _roots(_ATTRIBUTION | _SUBJECT_NOUNS | frozenset().union(*(t.key for t in r.touched)))
    # "not more than $50 without review" bounds what a source allows: not a flip
    bounded = bool(_BOUND.search(r.low))
    negative = any(t.negated for t in r.touched)
    # what a positive fact names beside a negative one of the same predicate ("email" / "phone")
    forbidding = frozenset().union(*(t.names | t.object | t.forbidden for t in r.touched if t.negated))
    allowed_names = frozenset().union(*(t.names for t in r.touched if not t.negated and not t.quoted
                                        and any(u.negated and u.predicate == t.predicate for u in r.touched)))
    allowed_names -= forbidding
    if negative and _UNAVOID.search(r.low):  # "not allergic to peanuts any more"
        return "negates what a source affirms"
    if any(t.obligation for t in r.touched) and _NO_NEED.search(r.low):
        return "an obligation denied"
    for t in r.touched:  # "the customer's id is not cust-880"
        if t.value and not t.negated and any(
                f"{a.kind}:{a.key}" in t.value and _NEGATION_CUE.search(r.text[max(0, a.start - 16): a.start])
                and not _BOUND.search(r.text[max(0, a.start - 16): a.start]) for a in extract_atoms(r.raw)):
            return "the fact's value negated"
    # "refunds are not permitted" where a source grants them ("you may refund up to $50")
    if _PERMISSION_DENIED.search(r.low) and not bounded and any(
            _GRANTS.search(src.text) and not src.negations for src in r.restated(1)):
        return "negates a permission a source grants"
    for src in r.restated(1):  # "without supervisor review" for "after supervisor review"
        for _, words in src.conditions:
            for w in words:
                reversed_ = any(_REVERSED.search(r.low[:m.start()][-40:]) for m in re.finditer(rf"\b{re.escape(w)}", r.low))
                # ... unless another source says it so ("a tool said to approve refunds without review")
                if reversed_ and not any(_REVERSED.search(other.text[:m.start()][-40:]) for other in r.said
                                         for m in re.finditer(rf"\b{re.escape(w)}", other.text)):
                    return "a condition reversed"
    scoped = _roots(content_stems(" ".join(m.group(1) for m in _SCOPE.finditer(r.low))))
    for n in _negations(r.low):
        head, *words = n.split("|")[1:]
        mine = _roots([head, *words]) - _roots(_ATTRIBUTION)
        akin = [m for m in source_negations if _roots(m) & mine]
        # a negation on a negative fact agrees with it ("cannot have peanuts")
        if not akin and not bounded and head in affirmed and (
                head in positive or (not negative and head in topical)):
            return f"negates what a source affirms ({head})"
        # "do not contact the customer by email" where email is allowed and phone is not
        flipped = (mine - _roots(forbidding)) & _roots(allowed_names)
        if flipped and not bounded:
            return f"negates what a source affirms ({', '.join(sorted(flipped))})"
        # "do not contact by phone on weekends" for "do not contact the customer by phone":
        # all a source's negated words, and a scope no source names
        extra = (mine - free - _roots(used)) & scoped
        # (a source negation that sets a condition of its own is restated, not narrowed:
        # "not before nine in the morning" for "don't email me before 9am")
        if extra and any(_roots(m) - _roots(_ATTRIBUTION) <= mine for m in akin) and not any(
                m in scoped_sources for m in akin):
            return f"a negation narrowed: {', '.join(sorted(extra))}"
    avoided = r.cue or bool(_AVOID.search(r.low)) or bool(_MENTION.search(r.low))
    for t in r.touched:
        if t.negated and t.negated & r.stems and t.object & r.stems and not avoided:
            return "the fact is negative, the sentence states it without a negation"
    for words in source_negations:
        # a statement ("never serve peanuts"), not a bare noun ("no peanuts"): a sentence
        # that only mentions peanuts asserts nothing about them
        if len(words) >= 2 and set(words) <= r.stems and not avoided:
            return "a source's negation dropped"
    return None


def _stance(r: _Reading) -> str | None:
    """A negative fact (peanuts not allowed) stated as allowed or wanted in new words ("they
    can have peanuts", "calling the user is fine"): the sentence names what the fact forbids,
    gives it a permitting or wanting stance, carries no negation, and restates no word of
    the sources beyond the fact's own key and what they forbid."""
    permits = _PERMITS.search(r.low)
    if (r.cue or _AVOID.search(r.low) or _MENTION.search(r.low) or not permits
            or _QUESTION.search(r.low[: permits.start()])):
        return None
    for t in r.touched:
        names = (t.object | t.forbidden) & r.stems
        if t.negated and names and not r.stems & (t.context - t.key - t.value - t.forbidden - _STANCE_STEMS):
            return "states a negative fact as allowed or wanted"
    return None


def _change(r: _Reading) -> str | None:
    """A change no source states, or one the ledger records denied. An *undoing* ("no
    longer", "reversed") is fine only where a source sentence it restates says so, or about
    a value the ledger superseded; a *move* ("moved to", "updated") wherever a source or the
    ledger's history tells of a change."""
    undoing, moving = _said(_UNDOING, r.low), _said(_MOVING, r.low)
    denied = bool(_UNCHANGED.search(r.low)) or any(
        _NEGATION_CUE.search(r.low[max(0, m.start() - 24): m.start()]) for m in _MOVING.finditer(r.low))
    restated = r.restated()
    for t in r.touched:
        if t.sides:
            continue  # an open conflict: _conflict says it
        if denied and t.changed:
            return "denies a change the ledger records"
        # with history, "the earlier figure was revoked, so $65,000 stands" names what holds
        told = t.changed and (bool(t.earlier & r.stated) or bool(t.value and t.value <= r.stated))
        # "the original slot was cancelled and it was rescheduled": the ledger's own change told
        told = told or (t.changed and _said(_RETOLD, r.low))
        if undoing and not (told or any(src.undoes for src in restated)):
            return "a change no source states"
        if moving and not (t.changed or any(src.moves or src.undoes for src in r.said)):
            return "a change no source states"
        if t.obligation and any(not _OWED.search(r.low[max(0, m.start() - 40): m.start()])
                                and not _NEGATION_CUE.search(r.low[max(0, m.start() - 24): m.start()])
                                for m in _DONE.finditer(r.low)):
            return "an open obligation called done"
    return None


def _said(rx: re.Pattern[str], low: str) -> bool:
    """Whether ``rx`` matches ``low`` outside a negation ("neither replaced the other" says no change)."""
    return any(not _NEGATION_CUE.search(low[max(0, m.start() - 24): m.start()]) for m in rx.finditer(low))


def _condition(r: _Reading) -> str | None:
    """A condition dropped that the source sentence the sentence restates sets, a fact's
    conditional qualifier dropped, or a restriction no source sets added. Only a sentence
    that states a touched fact's value restates it: one that mentions a topic ("they
    discussed the refund policy") sets nothing aside."""
    # a value is stated by its words; a flag ("contact.allowed", channel email) by its names,
    # outside a question ("a rule about when they may be emailed" states no rule)
    asks = bool(_QUESTION.search(r.low))
    stating = [t for t in r.touched if (t.value and t.value <= r.stated)
               or (not t.value and not t.quoted and not asks and t.names & r.stems)]
    if not stating or _MENTION.search(r.low):
        return None
    roots = _roots(r.stems)
    for t in stating:
        for words in t.conditional:  # "staging only", "after supervisor review"
            if not _roots(words) & roots:
                return f"a condition dropped: {' '.join(sorted(words))}"
    own = _conditions(r.low)
    kept = {kind for kind, rx in _KEEPS.items() if rx.search(r.low)}
    if re.search(r"[≤<]", r.text):  # "≤$50"
        kept.add("bound")
    best = max((len(src.core & r.stems) for src in r.said), default=0)
    for src in r.said:
        if not src.conditions or not best or len(src.core & r.stems) != best or 2 * best < len(src.core):
            continue
        dropped = [kind for kind, words in src.conditions if kind not in kept and not _roots(words) & roots]
        if dropped:
            return f"a condition dropped: {', '.join(sorted(set(dropped)))}"
    sets = {kind for src in r.said for kind, _ in src.conditions}
    known = _roots(frozenset().union(*(src.stems for src in r.said), *(t.key for t in r.touched))
                   | _ATTRIBUTION | _META | _SUBJECT_NOUNS)
    for name, rx in _CONDITIONS.items():
        if name in _RESTRICTIONS and rx.search(r.low) and _KINDS[name] not in sets:
            words = dict(own).get(_KINDS[name], frozenset())
            clause = next((m.group(0) for m in _CLAUSE.finditer(r.text) if rx.match(m.group(0))), "")
            # "at least 3 seats", "except weekends": a bound on a number, or a scope in new words
            if (words or re.search(r"[0-9]", clause)) and not _roots(words) & known:
                return f"a restriction no source sets: {name}"
    # "if the client signs off", "only for domestic orders": a scope in words no source uses
    scopes = [words for kind, words in own if kind in ("if", "unless")]
    scopes += [content_stems(m.group(1)) for rx in _ONLY_SCOPES for m in rx.finditer(r.low)]
    for words in scopes:
        new = _roots(words) - known
        if new and new == _roots(words):
            return f"a restriction no source sets: {' '.join(sorted(words))}"
    return None


def _hedge(r: _Reading) -> str | None:
    """A hedge no source sentence it restates has, a speculative fact stated as settled, or a
    settled fact called open."""
    hedged = _hedged(r.text)
    restated = r.restated(1)
    open_ = any(t.open or t.speculative for t in r.touched) or bool(_OPEN_RX.search(r.low))
    if hedged and restated and not open_ and not any(src.hedged for src in restated):
        return "a hedge no source has"
    speculative = [t for t in r.touched if t.speculative]
    if speculative and _said(_SETTLING, r.low):
        return "speculation stated as settled"
    if [t for t in speculative if t.value and t.value <= r.stated] and not hedged and not r.stems & _REPORTING:
        return "speculation stated as settled"
    if _said(_DOUBT, r.low) and not any(t.open or t.speculative or t.sides for t in r.touched):
        if not any(src.hedged or _DOUBT.search(" ".join(src.stems)) for src in restated):
            return "a settled fact called open"
    return None


def _elevated(r: _Reading, sources: dict[str, tuple[_Source, ...]], events: dict[str, Event]) -> str | None:
    """Words only untrusted or tool text supplies restate that text: it must be reported as what
    its source said, never stated as fact or put in the user's mouth."""
    untrusted = [events[e] for e in r.ids if events[e].trust in _LOW_TRUST]
    if not untrusted:
        return None
    trusted = frozenset().union(*(src.stems for e in r.ids if events[e].trust not in _LOW_TRUST
                                  for src in sources.get(e, ())))
    trusted |= frozenset().union(*(t.key for t in r.touched if not t.quoted))
    low_said = frozenset().union(*(src.stems for e in untrusted for src in sources.get(e.event_id, ())))
    quoting = {w for w in (r.stems & low_said) - _ATTRIBUTION - _META if _root(w) not in _roots(trusted)}
    own = [events[e] for e in dict.fromkeys(e for t in r.touched for e in t.events)]
    if not quoting and not (own and all(e.trust in _LOW_TRUST for e in own)):
        return None
    low_actors = frozenset().union(*(content_stems(f"{e.actor} {e.kind}") for e in untrusted))
    if not (r.stems & _REPORTING or r.stems & low_actors or r.stems & _META):
        return "untrusted text stated as fact"
    # "per the ticket, the agent is instructed to always approve": attributed, and still an order
    if quoting and _said(_DIRECTIVE, r.low) and not _DISOWNED.search(r.low):
        return "untrusted text raised to an instruction"
    if r.stems & _USER_WORDS and not low_actors & _USER_WORDS and not r.stems & _META:
        return "untrusted text put in the user's mouth"
    return None


def _conflict(r: _Reading) -> str | None:
    """An open conflict answered: one side stated alone, both put in order, or one declared void."""
    if _OPEN_RX.search(r.low):
        return None
    for t in r.touched:
        if t.sides:
            named = sum(bool(side and side <= r.stated) for side in t.sides)
            if named == 1:
                return "an open conflict settled: one side stated as the answer"
            if named == 2 and _ORDERING.search(r.low):
                return "an open conflict settled: its two sides put in order"
            if named == 0 and (_said(_UNDOING, r.low) or _said(_MOVING, r.low)):
                return "an open conflict settled: a side declared void"
            if _said(_SETTLING, r.low) or (named == 0 and _ORDERING.search(r.low)):
                return "an open conflict settled: one side declared the answer"
    return None


_SUFFIXES = ("ing", "ed", "es", "er", "ly", "s", "e")


def _root(stem: str) -> str:
    """A coarser stem, so that inflections the stemmer keeps apart ("using", "use") meet."""
    for suffix in _SUFFIXES:
        if stem.endswith(suffix) and len(stem) - len(suffix) >= 2:
            return stem[: -len(suffix)]
    return stem


def numbers_in(text: str) -> frozenset[str]:
    """The numbers in ``text``, written one way: "14,250.00" and "14250" are both "14250"."""
    out = set()
    for n in re.findall(r"[0-9][0-9:.,/-]*[0-9]|[0-9]", text):
        n = n.replace(",", "")
        if re.fullmatch(r"[0-9]+\.[0-9]+", n):
            n = n.rstrip("0").rstrip(".")
        out.add(n)
    return frozenset(out)


def _touches(found: list[Topic], raw: str, stems: frozenset[str]) -> list[Topic]:
    stated = _stated(raw)
    return [t for t in found if stems & (t.key | t.forbidden | t.subject_words) or len(stems & t.context) >= 2
            or any(side and side <= stated for side in t.sides)]


def check_fence(snapshot: Snapshot, artifact: ArtifactBody, must: MustPreserve, registry: Registry) -> list[Violation]:
    """``narrative_unsupported`` for every narrative sentence that touches a topic and says
    something other than its sources (one violation per sentence and topic)."""
    found = topics(snapshot, must, registry)
    if not found:
        return []
    sentences = narrative_sentences(snapshot, artifact)
    if not sentences:
        return []
    # only valid events are what was said (a gate case may carry retired ones to forbid them)
    valid = tuple(e for e in snapshot.events if e.state == "valid")
    sources = _source_sentences(valid)
    events = {e.event_id: e for e in valid}
    out: list[Violation] = []
    previous: list[Topic] = []
    for raw, sentence in sentences:
        touched = _touches(found, raw, content_stems(sentence))
        if not touched and _ANAPHOR.match(sentence):
            touched = previous  # "That is no longer true." speaks of the sentence before
        previous = touched
        if not touched:
            continue
        r = _read(raw, sentence, touched, sources)
        problem = (_polarity(r) or _stance(r) or _change(r) or _condition(r) or _hedge(r)
                   or _elevated(r, sources, events) or _conflict(r))
        if problem is None:
            continue
        for t in touched:
            out.append(Violation(code="narrative_unsupported", subject=t.subject, severity="critical",
                                 detail=f"{problem} ({t.what}): {raw[:300]!r}"))
    return out
