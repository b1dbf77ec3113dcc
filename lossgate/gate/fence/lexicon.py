"""The English the fence reads by: the words that carry a sentence's polarity, conditions,
modality, time and provenance, and those that carry no meaning of their own (attribution,
names of sources). Each is a pattern over lower-case text or a set of content stems."""

from __future__ import annotations

import re

from lossgate.gate.atoms.statements import content_stems

# A sentence ends at ., ! or ? and a space, but not after an abbreviation ("i.e.", "Dr.").
SENTENCE = re.compile(
    r"(?<=[.!?])(?<!\bi\.e\.)(?<!\be\.g\.)(?<!\betc\.)(?<!\bvs\.)(?<!\bMr\.)(?<!\bMs\.)"
    r"(?<!\bDr\.)(?<!\bMrs\.)(?<!\bapprox\.)(?<!\bSt\.)\s+|\n+"
)
CONDITIONS = {
    name: re.compile(pattern)
    for name, pattern in {
        "only": r"\bonly\b",
        "after": r"\bafter\b",
        "before": r"\bbefore\b",
        "unless": r"\bunless\b",
        "until": r"\buntil\b|\btill\b",
        "if": r"\bif\b",
        "except": r"\bexcept\b|\bexcluding\b",
        "up to": r"\bup to\b",
        "at most": r"\bat most\b",
        "at least": r"\bat least\b",
        "no more than": r"\bno more than\b",
        "within": r"\bwithin\b",
        "provided": r"\bprovided\b",
    }.items()
}
MARKERS = (
    r"only|after|before|unless|until|till|if|except|excluding|up to|at most|at least|no more than|within|"
    r"provided"
)
# A condition clause: from its marker to the next marker or punctuation (what a narrative may drop).
CLAUSE = re.compile(rf"\b(?:{MARKERS})\b(?:(?!\b(?:{MARKERS})\b)[^,;.!?()])*")
MARKER_WORDS = content_stems(MARKERS.replace("|", " "))
# A condition is kept by its own word, by a word of its kind ("capped at $50" keeps "up to
# $50"), or by what its clause names ("needs supervisor sign-off" keeps "after supervisor review").
BOUND_WORDS = (
    r"up to|at most|no more than|within|max|maximum|cap|capped|limit|limited|ceiling|under|below|"
    r"not (?:to )?exceed|or less|no later than"
)
KINDS = {
    "only": "only",
    "after": "after",
    "before": "before",
    "unless": "unless",
    "until": "before",
    "if": "if",
    "except": "unless",
    "up to": "bound",
    "at most": "bound",
    "no more than": "bound",
    "within": "bound",
    "at least": "floor",
    "provided": "if",
}
KEEPS = {
    kind: re.compile(rf"\b(?:{pattern})\b")
    for kind, pattern in {
        "only": r"only|solely|exclusively|exclusive|sole|single|just|limited to|restrict\w*|confined to|"
        r"nothing but|nothing else|nowhere else|no one else|no other|not any other|other than|anything but",
        "after": r"after|once|following|upon|subject to|pending|requires?|required|needs?|first",
        "before": r"before|until|till|prior to|ahead of|by|no later than|(?:earlier|sooner) than",
        "unless": r"unless|except|excluding|if not|without|other than|apart from|besides",
        "if": r"if|provided|when|whenever|as long as|in case|on condition|conditional|assuming|so long as",
        "bound": BOUND_WORDS + r"|as much as|as many as|a maximum of|tops"
        r"|(?:\bnot|\bnever|\bno|[’']t)\s+(?:\w+\s+){0,2}"
        r"(?:(?:more|longer|later|over) than|above|beyond|exceed\w*)",
        "floor": r"at least|minimum|min|or more|no less than|no fewer than",
    }.items()
}
# A scope set by "only" before or after it ("only for domestic orders", "for annual plans only").
ONLY_SCOPES = (
    re.compile(r"\bonly\s+(?:\w+\s+){0,2}?(?:for|to|during|in|on|after|before|when|if|with|within)\s+([^,;.!?]+)"),
    re.compile(
        r"\b(?:for|to|during|in|on|with)\s+((?:(?!(?:but|and|or|are|is|was|were|be)\b)[a-z]+\s+){0,3}?[a-z]+)"
        r"\s+only\b"
    ),
)
# A restriction no source sets is invented ("refund $50, except to new customers").
RESTRICTIONS = frozenset({"unless", "except", "at most", "at least", "no more than", "provided"})
# A negated bound restates a limit ("may not refund more than $50"), it does not flip it.
BOUND = re.compile(
    r"\b(?:more|less|fewer|over|above|beyond|exceed|exceeds|exceeding|without|other than|"
    r"anything but|anywhere but|anyone but|nowhere else|nothing else|no other|except|later|earlier|"
    r"sooner|longer)\b"
)
# A hedge. "may" grants permission as often as it hedges ("you may refund up to $50"): it
# hedges when a person or thing (not "you") may, or when it may *be* or *have*; not in a
# passive ("invoices may be shared" permits).
HEDGES = re.compile(
    r"\b(?:might|could (?:be|have)|maybe|perhaps|possibly|probably|likely|unsure|uncertain|considering|"
    r"thinking about|tentative|tentatively|potential|potentially|supposedly|apparently|reportedly|"
    r"presumably|seems?|appears? to|thought to be|believed to be|generally|usually|typically|"
    r"ideally|preferably|best to|if possible|try to|sometime|somewhere|something like|or so)\b"
    # an amount or a date approximated: "about 20 kg", "around 2026-05-01"
    r"|\b(?:about|around|roughly|approximately|approx\.?|nearly|almost|close to)\s+[$€£]?[0-9]"
)
MAY_HEDGE = re.compile(
    r"\b(?:i|he|she|it|they|this|that|there|user|customer|client)\s+may\b(?!\s+be\s+\w+(?:ed|en)\b)"
    r"|\bmay\s+(?:have|be(?!\s+\w+(?:ed|en)\b))"
)
# How a summary leaves a question open: about an open conflict, an obligation or a hedged
# fact, hedging is faithful.
OPEN_RX = re.compile(
    r"\b(?:open|pending|outstanding|disputed|dispute|conflicting|conflict|unresolved|undecided|"
    r"unclear|unsettled|undetermined|either|neither|both|whether|confirm|clarify|verify|"
    r"(?:not|n[’']t)\s+(?:yet\s+)?(?:been\s+)?(?:settled|decided|resolved|clear|confirmed|"
    r"finali[sz]ed|fixed|reconciled|agreed)|(?:do|does|did)(?: not|n[’']t) (?:yet )?know|"
    r"not (?:yet )?known|unknown|which one|which of|not sure|no idea)\b"
)
# What calls a fact open: said of a settled fact, it invents a doubt.
DOUBT = re.compile(
    r"\b(?:disputed|in dispute|unresolved|undecided|unclear|unsettled|undetermined|uncertain|"
    r"open question|still open|up in the air|tbd|to be decided|to be confirmed)\b"
    r"|(?:\bnot|n[’']t)\s+(?:yet\s+)?(?:been\s+)?(?:settled|decided|resolved|clear|confirmed|"
    r"finali[sz]ed|fixed)\b"
)
# What answers an open conflict, or settles a speculation.
SETTLING = re.compile(
    r"\b(?:real|actual|actually|correct|right one|valid|official|final|definitive|definitely|stands|"
    r"overrides?|overridden|takes precedence|in favou?r of|cleared up|sorted out|resolved|settled|"
    r"decided|certain|confirmed as)\b"
)
# What says an obligation is met.
DONE = re.compile(
    r"\b(?:done|completed|taken care of|handled|fulfilled|finished|already (?:been )?(?:sent|called|"
    r"issued|paid|made|delivered))\b"
)
# What makes "done" a task ("you should have the report done by Friday").
OWED = re.compile(r"\b(?:should|must|need to|needs to|has to|have to|to be|to get|make sure|remember to|due)\b")
# What says an obligation never was one.
NO_NEED = re.compile(
    r"\b(?:no need|not (?:need|required|necessary)|(?:does|do|did)\s*n[o’']t\s*(?:need|have) to|"
    r"need not|needn[’']t|optional)\b"
)
# A change of state. *Undoing* words say the fact no longer holds: a sentence may say so
# only of a value the ledger has superseded, or when it restates a source saying so.
# *Moving* words tell of a new value: fine wherever a source or the ledger's history
# tells of a change.
UNDOING = re.compile(
    r"\b(?:no longer|any ?more|used to|reversed|reverse|opposite|overturned|lifted|outgrew|"
    r"outgrown|withdrawn|withdrew|retracted|revoked|cancel(?:l?ed)?|scrapped|void|obsolete|"
    r"outdated|stale|superseded|differently|overrides?|overridden|walked back|went back|"
    r"reverted|back to the original|cured|went away|resolved itself|no issue any ?more|"
    r"(?:was|were|been|got)\s+(?:\w+\s+)?dropped)\b"
)
MOVING = re.compile(
    r"\b(?:changed|changes|change|updated|update|replac\w*|switched|moved|rescheduled|"
    r"postponed|pushed back|lowered|increased|reduc\w*|decreas\w*|cut back|bumped|upgraded|"
    r"downgraded|correction|corrected|revised)\b"
)
# What turns a source's condition around ("without supervisor review" for "after supervisor review").
REVERSED = re.compile(
    r"\b(?:without|no|not|never|skip\w*|bypass\w*|waiv\w*|regardless of|even without)"
    r"\s+(?:\w+\s+){0,2}$"
)
# What makes an instruction of a text, and what disowns one.
DIRECTIVE = re.compile(
    r"\b(?:must|should|shall|has to|have to|needs? to|(?:is|are|was|were) (?:instructed|required|"
    r"told|expected|supposed) to)\b"
)
DISOWNED = re.compile(r"\b(?:ignore|ignored|disregard|untrusted|not (?:an? )?(?:instruction|rule|order)|not from)\b")
# A permission a source grants, and one a sentence denies.
GRANTS = re.compile(r"\b(?:you|agent|agents|we)\s+(?:may|can|are allowed to|are permitted to|are authori[sz]ed to)\b")
PERMISSION_DENIED = re.compile(
    r"(?:\bnot|\bnever|n[’']t)\s+(?:be\s+)?(?:permitted|allowed|authori[sz]ed|able)\b"
    r"|\b(?:cannot|can[’']t|may not|mustn[’']t|must not)"
    r"\s+(?!\w+\s+(?:more|over|above|beyond))"
)
# A move told in words (an "Update:" label tells none).
RETOLD = re.compile(
    r"\b(?:changed|replac\w*|switched|moved|rescheduled|postponed|pushed back|lowered|increased|"
    r"reduc\w*|decreas\w*|bumped|upgraded|downgraded|corrected|revised)\b"
)
# What denies a change the ledger records ("the date hasn't changed").
UNCHANGED = re.compile(r"\b(?:unchanged|still the same|same as (?:before|originally|first set)|as originally)\b")
# What says that a negative fact holds ("peanut-free", "off limits"), besides a negation.
AVOID_WORDS = (
    r"avoid|avoids|avoiding|refrain|exclude|excluded|excluding|prohibit|prohibited|forbid|forbidden|"
    r"ban|banned|barred|allergic|allergy|allergies|intolerant|off[- ]limits|off the table|"
    r"keep (?:\w+\s+){1,3}(?:off|out|away)|steer clear|stay away|withheld|withhold|refused|refuses|"
    r"declined|declines|denied|denies|opted out|objects?|lack|lacks|lacked|lacking|missing|absent|"
    r"failed to|unauthori[sz]ed|unwelcome|unwanted|unacceptable|inadvisable|not welcome"
)
AVOID = re.compile(rf"\w-free\b|\b(?:{AVOID_WORDS})\b")
# An avoidance negated ("not allergic", "no longer avoids"): said of a negative fact, a flip.
UNAVOID = re.compile(
    rf"(?:\b(?:not|never|no longer)|n[’']t)\s+(?!merely|just|only|simply)(?:\w+\s+){{0,2}}"
    rf"(?:{AVOID_WORDS})\b"
)
# A scope a negation can be narrowed by: the word after a preposition ("on weekends").
SCOPE = re.compile(
    r"\b(?:on|at|in|during|for|within|between|outside|before|after|until|while|when|via|over|"
    r"through|from)\s+(?:the\s+|a\s+|an\s+|their\s+|his\s+|her\s+|its\s+|my\s+|our\s+)?(\w+)"
)
# What allows or wants: said of a negative fact without a negation, it turns it around. Not
# after a question word ("a policy on how invoices may be shared").
QUESTION = re.compile(r"\b(?:how|whether|what|which|if|when|where|why|who)\b")
PERMITS = re.compile(
    r"\b(?:can|may|allowed|permitted|fine|ok|okay|safe|happy|glad|good|acceptable|encouraged|"
    r"free to|able|welcome|want|wants|wanted|like|likes|love|loves|enjoy|enjoys|prefer|"
    r"prefers|request|requests|requested|crave|craves|keen|"
    # or hands it over: "serve the user peanut satay", "go ahead and call"
    r"serve|add|give|offer|include|bring|put|go ahead|feel free|whenever)\b"
)
STANCE_STEMS = content_stems(
    "can may allowed permitted fine ok okay safe happy glad good acceptable encouraged "
    "free able welcome want wants wanted "
    "like likes love loves enjoy enjoys prefer prefers request requests requested "
    "crave craves keen serve add give offer include bring put ahead feel whenever"
)
# A sentence that tells *that* something was said or set, not *what*: it states no value.
MENTION = re.compile(
    r"\b(?:discussed|mentioned|talked about|came up|brought up|asked about|covered|"
    r"(?:was|were) (?:set|laid down|given|raised)|laid down|(?:rule|rules|instruction|instructions|"
    r"policy|question|request|note|permissions?) (?:about|on|for|covering|regarding|concerning)|"
    r"(?:permissions?|perms|rules?|polic(?:y|ies)) (?:were|was|are|is) set|"
    r"status (?:captured|recorded|noted|logged)|(?:scoped|set|granted|defined|configured) by)\b"
)
# "only" before another condition ("only after review") sharpens that one: it sets none of its own.
ONLY_SHARPENS = re.compile(r"\bonly\s+(?:after|if|when|once|until|before|within|with|upon|provided|unless)\b")
# A sentence that opens with one of these and names no topic speaks of the sentence before it.
ANAPHOR = re.compile(r"\s*(?:that|this|it|they|these|those|which|such|he|she|the same)\b", re.IGNORECASE)
NEGATION_CUE = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot)\b|n[’']t\b|[✗✘❌]")
ATTRIBUTION = content_stems(
    "user users customer customers client clients agent assistant member requester subject person "
    "said says say saying told tell tells asked asks ask mentioned mentions mention wrote writes write "
    "stated states state according quoted quotes quote claimed claims claim reported reports report "
    "forwarded forwards noted notes replied replies explained explains gave give gives two both "
    # permission said another way ("you may refund" -> "refunds are allowed"); a negation is
    # still compared, so "not allowed" never passes for "may"
    "allowed allow allows permitted permit permits able"
)
REPORTING = content_stems(
    "said says say saying told tells wrote writes stated states according quoted quotes "
    "claimed claims reported reports forwarded forwards mentioned mentions asked asks ask"
)
USER_WORDS = content_stems("user users customer customers client clients")
# How a summary names where text came from, when it reports untrusted or tool text.
META = content_stems(
    "quote quoted untrusted source sources retrieved support ticket tickets email emails mail "
    "mails page pages document documents message messages web website tool tools file "
    "attachment chat"
)
# Words that put two values in order: naming both sides of a conflict this way settles it.
ORDERING = re.compile(
    r"\b(?:earlier|later|previously|formerly|no longer|used to|instead|replaced|superseded|"
    r"current|currently|latest|newer|older|now)\b"
)
# Nouns a summary names the subject by, besides "the user": free to use, still topic words.
SUBJECT_NOUNS = content_stems("account team company organisation organization household family")
LOW_TRUST = frozenset({"untrusted", "tool"})
WORDY = frozenset({"negation", "party"})  # atom kinds that are words, kept in a sentence
