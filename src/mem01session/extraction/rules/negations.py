"""Negations: clauses saying a fact stopped being true (checked before assertions)."""

from __future__ import annotations

import re

from .vocab import (
    ANIMAL,
    ANIMALS,
    ANYMORE,
    DIET,
    END,
    I_,
    IM,
    NAME,
    NOT,
    ORG,
    PARTNER,
    PHRASE,
    PLACE,
    Fact,
    Rule,
    expand_place,
    items,
    registrar,
    slug,
    thing_slug,
)

NEGATIONS: list[Rule] = []
_rule = registrar(NEGATIONS)


def _neg(*keys: str, value: str | None = None, reason: str) -> list[Fact]:
    return [Fact(None, negate=True, keys=keys, value=value, reason=reason)]


# "I'm no longer at Google", "I'm not working for Acme anymore"
_AT_WORK = r"(?i:at|with|working\s+(?:at|for)|employed\s+(?:at|by))"


@_rule(
    rf"^{I_}\s+(?i:moved\s+out\s+of|moved\s+away\s+from|left)\s+{PLACE}{END}",
    rf"^{I_}\s+{NOT}\s+(?i:live|reside)\s+in\s+{PLACE}{ANYMORE}{END}",
)
def _left_place(m: re.Match[str]) -> list[Fact]:
    place = expand_place(m["place"])
    return _neg("home.city", "work.employer", value=place, reason="user left") if place else []


@_rule(
    rf"^I\s+(?i:quit|left)\s+(?i:my)\s+(?i:job|position|role)(?:\s+(?i:at|with)\s+{ORG})?{END}",
    rf"^I\s+(?i:was|got|have\s+been)\s+(?i:laid\s+off|fired|let\s+go)(?:\s+(?i:from|by)\s+{ORG})?{END}",
    rf"^I\s+(?i:lost\s+my\s+job)(?:\s+(?i:at|with)\s+{ORG})?{END}",
    rf"^I\s+{NOT}\s+work\s+(?i:at|for)\s+{ORG}{ANYMORE}{END}",
    rf"^{IM}\s+(?i:no\s+longer)\s+{_AT_WORK}\s+{ORG}{ANYMORE}{END}",
    rf"^{IM}\s+(?i:not)\s+{_AT_WORK}\s+{ORG}\s+(?i:anymore|any\s+more|any\s+longer){END}",
    rf"^{IM}\s+(?i:unemployed|between\s+jobs|out\s+of\s+work|job\s+hunting){END}",
)
def _left_job(m: re.Match[str]) -> list[Fact]:
    return _neg("work.employer", value=m.groupdict().get("org"), reason="user left the job")


# Bare: "..., but I quit last month", "..., but I moved out": what they end is what the
# same message said before (nothing else: "I quit" may be smoking).
_JUST = r"(?:(?i:just|recently|already|since|then|finally|eventually)\s+)?"


@_rule(
    rf"^{I_}\s+{_JUST}(?i:quit|left|resigned|was\s+laid\s+off|got\s+fired){END}",
    rf"^{I_}\s+{_JUST}(?i:moved\s+out|moved\s+away|moved\s+on|left\s+(?:there|it|that\s+job)){END}",
)
def _left_bare(m: re.Match[str]) -> list[Fact]:
    said = m.group(0).lower()
    home = any(w in said for w in ("moved out", "moved away", "left there"))
    keys = ("home.city",) if home else ("work.employer",)  # "moved on": from a job
    return [Fact(None, negate=True, keys=keys, reason="user left", within_message=True)]


@_rule(rf"^(?:{IM}\s+|I\s+)(?i:retired|now\s+retired){END}")
def _retired(m: re.Match[str]) -> list[Fact]:
    return _neg("work.employer", "work.role", reason="user retired")


@_rule(
    rf"^{IM}\s+(?i:not|no\s+longer)\s+(?:(?i:a|an)\s+)?{DIET}{ANYMORE}{END}",
    rf"^I\s+(?i:stopped|quit)\s+being\s+(?:(?i:a|an)\s+)?{DIET}{END}",
    rf"^I\s+(?i:eat|started\s+eating)\s+meat\s+again{END}",
)
def _diet_ended(m: re.Match[str]) -> list[Fact]:
    diet = (m.groupdict().get("diet") or "").lower().replace("pescetarian", "pescatarian")
    return _neg("diet", value=diet or None, reason="user changed diet")


@_rule(
    rf"^I\s+(?i:got\s+divorced|split\s+up|broke\s+up)(?:\s+(?i:with|from)\s+(?:{NAME}|(?i:my)\s+{PARTNER}))?{END}",
    rf"^(?:{NAME}|(?i:my)\s+{PARTNER})\s+(?i:and\s+I)\s+(?i:broke\s+up|split\s+up|separated|got\s+divorced|divorced){END}",
    rf"^(?:{IM}\s+(?i:divorced|single|separated)(?:\s+now)?|(?i:we)\s+(?i:broke\s+up|split\s+up|separated|got\s+divorced)){END}",
)
def _partner_ended(m: re.Match[str]) -> list[Fact]:
    name = m.groupdict().get("name")
    return _neg("family.partner", "family.status", value=name, reason="relationship ended")


@_rule(
    rf"^(?i:my|our)\s+{ANIMAL}(?:\s+{NAME})?\s+(?i:died|passed\s+away|passed|ran\s+away){END}",
    rf"^{I_}\s+(?i:lost|gave\s+away|rehomed)\s+(?i:my|our)\s+{ANIMAL}(?:\s+{NAME})?{END}",
    rf"^{I_}\s+{NOT}\s+have\s+(?i:a|an|my|any)\s+{ANIMAL}{ANYMORE}{END}",
)
def _pet_ended(m: re.Match[str]) -> list[Fact]:
    animal = ANIMALS[m["animal"].lower()]
    return _neg(f"pets.{animal}", value=m.groupdict().get("name"), reason="pet no longer there")


@_rule(
    rf"^{IM}\s+(?i:not|no\s+longer)\s+allergic\s+to\s+{PHRASE}{ANYMORE}{END}",
    rf"^I\s+(?i:outgrew)\s+(?i:my)\s+{PHRASE}\s+allergy{END}",
)
def _allergy_ended(m: re.Match[str]) -> list[Fact]:
    return [
        f for x in items(m["x"]) for f in _neg(f"health.allergy.{slug(x)}", reason="allergy ended")
    ]


@_rule(
    rf"^I\s+{NOT}\s+(?P<verb>(?i:like|love|enjoy))\s+{PHRASE}(?:\s+(?i:anymore|any\s+more)){END}",
    rf"^I\s+(?i:no\s+longer)\s+(?P<verb>(?i:like|love|enjoy))\s+{PHRASE}{END}",
    rf"^I\s+(?i:stopped)\s+(?P<verb>(?i:liking|loving|enjoying))\s+{PHRASE}{END}",
    rf"^{IM}\s+(?i:not\s+into|no\s+longer\s+into|over|done\s+with)\s+{PHRASE}{ANYMORE}{END}",
)
def _like_ended(m: re.Match[str]) -> list[Fact]:
    return [f for x in items(m["x"]) for f in _neg(f"likes.{slug(x)}", reason="no longer liked")]


@_rule(
    rf"^I\s+(?i:cancell?ed|ended|stopped|dropped)\s+(?i:my|the|our)\s+(?P<thing>[\w\-]+(?:\s+[\w\-]+)?){END}",
    rf"^I\s+{NOT}\s+pay\s+(?:(?i:for)\s+)?(?:(?i:my|the)\s+)?(?P<thing>[\w\-]+(?:\s+[\w\-]+)?){ANYMORE}{END}",
)
def _expense_ended(m: re.Match[str]) -> list[Fact]:
    thing = thing_slug(m["thing"])
    if thing == "rent":
        return _neg("home.rent", reason="no longer pays rent")
    return _neg(f"expense.{thing}", value=None, reason="expense ended")


@_rule(
    rf"^I\s+(?i:no\s+longer)\s+{PHRASE}{END}",
    rf"^I\s+(?i:don't|do\s+not|never)\s+{PHRASE}\s+(?i:anymore|any\s+more|any\s+longer){END}",
    rf"^{IM}\s+(?i:not|no\s+longer)\s+{PHRASE}\s+(?i:anymore|any\s+more|any\s+longer){END}",
    rf"^I\s+(?i:quit|stopped|gave\s+up)\s+{PHRASE}{END}",
)
def _generic_ended(m: re.Match[str]) -> list[Fact]:
    return [Fact(None, negate=True, value=m["x"], reason="user said it stopped being true")]
