"""Assertions: first-person clauses stating a fact, as ``(pattern, builder)`` rows.

Each pattern is anchored at the start of a normalized clause ("I live in NYC"); the
builder turns the match into :class:`~.vocab.Fact` proposals (key, third-person
content, the value two statements must share to be the same fact).
"""

from __future__ import annotations

import re

from .objects import is_object
from .vocab import (
    ANIMAL,
    ANIMALS,
    BREEDS,
    COUNT,
    DIET,
    DIET_CONTENT,
    END,
    I_,
    IM,
    JOB_WORDS,
    MONEY,
    NAME,
    NON_ROLES,
    NOT_NAMES,
    NUMBER,
    ORG,
    PARTNER,
    PEOPLE,
    PERIOD,
    PERIOD2,
    PHRASE,
    PLACE,
    PRONOUNS,
    ROLE,
    STRIP_TAIL,
    STUDY_WORDS,
    Fact,
    Rule,
    article,
    expand_place,
    items,
    money,
    ok_name,
    period,
    registrar,
    slug,
    thing_slug,
    third_person,
)

ASSERTIONS: list[Rule] = []
_rule = registrar(ASSERTIONS)


# "I moved from Chicago to Austin": where the user lives is the second place.
_FROM = rf"(?:(?i:from)\s+{PLACE.replace('?P<place>', '')}\s+)?"


@_rule(
    rf"^{I_}\s+(?i:live|reside|stay|have\s+lived)\s+in\s+{PLACE}",
    rf"^{IM}\s+(?i:based|living|located|settled)\s+in\s+{PLACE}",
    rf"^{I_}\s+(?i:moved|relocated|have\s+moved|have\s+relocated)"
    rf"\s+{_FROM}(?:(?i:back)\s+)?to\s+{PLACE}",
    rf"^(?i:my\s+home\s+is|home\s+is)\s+(?:(?i:in)\s+)?{PLACE}",
    # Without "I", as people write in chat ("Moved to SF last week!"): the whole clause only.
    rf"^(?i:moved|relocated)\s+{_FROM}(?:(?i:back)\s+)?to\s+{PLACE}{END}",
    rf"^(?i:living|based)\s+in\s+{PLACE}{END}",
)
def _home(m: re.Match[str]) -> list[Fact]:
    place = expand_place(m["place"])
    if not place or (place[0].islower() and not place.startswith("the ")):
        return []
    return [Fact("home.city", f"Lives in {place}", value=place)]


@_rule(rf"^{IM}\s+(?i:originally\s+)?from\s+{PLACE}")
def _origin(m: re.Match[str]) -> list[Fact]:
    place = expand_place(m["place"])
    return [Fact("person.origin", f"Is from {place}", value=place)] if place else []


# Capitalized, but a time, not a place: "I was born in March".
_NOT_PLACES = frozenset(
    """january february march april may june july august september october november
    december monday tuesday wednesday thursday friday saturday sunday""".split()
)


_ORIGIN_CONTENT = {"grew up": "Grew up", "was born": "Was born", "was raised": "Was raised"}


@_rule(rf"^I\s+(?P<how>(?i:grew\s+up|was\s+born|was\s+raised))\s+in\s+{PLACE}")
def _grew_up(m: re.Match[str]) -> list[Fact]:
    place = expand_place(m["place"])
    if not place or place.casefold() in _NOT_PLACES:
        return []
    if place[0].islower() and not place.startswith("the "):
        return []
    how = _ORIGIN_CONTENT[" ".join(m["how"].lower().split())]
    return [Fact("person.origin", f"{how} in {place}", value=place)]


# Said of rent, a number alone is an amount ("my rent is 2400 a month"); its currency
# is not guessed.
_RENT_AMOUNT = rf"(?:{MONEY}|{NUMBER})"


@_rule(
    rf"^{I_}\s+pay\s+(?:(?i:about|around|roughly)\s+)?{_RENT_AMOUNT}(?:\s*{PERIOD})?\s+(?:(?i:in|for|of)\s+)?(?:(?i:my|the|our)\s+)?(?i:rent)(?:\s+{PERIOD2})?{END}",
    rf"^(?:(?i:my|our|the)\s+)?(?:(?i:monthly)\s+)?(?i:rent)(?:'s|\s*:|\s+(?i:is|went\s+(?:up|down)\s+to|was\s+(?:raised|lowered|cut|reduced)\s+to|(?:increased|decreased|dropped)\s+to|is\s+now|costs?(?:\s+me)?))\s+(?:(?i:about|around|roughly)\s+)?{_RENT_AMOUNT}(?:\s*{PERIOD})?{END}",
)
def _rent(m: re.Match[str]) -> list[Fact]:
    amount = money(m)
    if not amount:
        return []
    return [Fact("home.rent", f"Pays {amount} {period(m, 'a month')} in rent", value=amount)]


@_rule(
    rf"^{I_}\s+(?:pay|spend)\s+(?:(?i:about|around|roughly)\s+)?{MONEY}\s+{PERIOD}\s+(?i:for|on)\s+(?:(?i:my|a|the|our)\s+)?(?P<thing>[\w\-]+(?:\s+[\w\-]+){{0,2}}){END}",
    rf"^(?i:my|our)\s+(?P<thing>[\w\-]+(?:\s+[\w\-]+){{0,2}}?)\s+(?i:costs?(?:\s+me)?|is|runs\s+me)\s+(?:(?i:about|around|roughly)\s+)?{MONEY}\s+{PERIOD}{END}",
)
def _expense(m: re.Match[str]) -> list[Fact]:
    thing = m["thing"].strip()
    if thing.split()[0].lower() in PEOPLE or slug(thing) == "rent":
        return []
    amount = money(m)
    key = f"expense.{thing_slug(thing)}"
    return [Fact(key, f"Pays {amount} {period(m)} for {thing}", value=amount)]


@_rule(
    rf"^(?i:my\s+name\s+is|my\s+name's|call\s+me|people\s+call\s+me)\s+{NAME}{END}",
    rf"^(?:{IM}\s+(?i:called|named)|I\s+(?i:go\s+by))\s+{NAME}{END}",
)
def _name(m: re.Match[str]) -> list[Fact]:
    name = m["name"]
    return [Fact("person.name", f"Name is {name}", value=name)] if ok_name(name) else []


@_rule(
    rf"^{IM}\s+(?P<age>\d{{1,3}})(?:\s+(?i:years\s+old|yrs\s+old|y/o))?{END}",
    rf"^I\s+(?i:just\s+)?turned\s+(?P<age>\d{{1,3}}){END}",
)
def _age(m: re.Match[str]) -> list[Fact]:
    age = int(m["age"])
    return [Fact("person.age", f"Is {age} years old", value=str(age))] if 0 < age < 120 else []


# A name's possessive names a workplace with the noun after it ("Dad's company", "Mom's
# bakery"); "McDonald's now" is McDonald's; before any other word ("John's place of
# worship") it is not read.
_WORKPLACE = re.compile(
    r"\s+(?P<noun>(?i:company|firm|business|bakery|shop|store|restaurant|cafe|bar|pub|farm"
    r"|clinic|practice|office|studio|salon|garage|agency|startup|hospital|school))\b"
)
_GOES_ON = re.compile(r"\s+[a-z]")  # a lower-case word follows
_NOT_PART = re.compile(
    r"\s+(?i:as|since|for|now|in|on|at|and|but|too|full|part|every|this|last|right|with"
    r"|where|because|so|though|while|until|from|these|nowadays|currently|again|downtown"
    r"|there|here|today|still|lately)\b"
)


def employer(m: re.Match[str]) -> str | None:
    """The workplace a match's ``org`` names, or None when it is not one."""
    org = m["org"].strip()
    if org in NOT_NAMES:
        return None
    if not org.endswith("'s"):
        return org
    after = m.end("org")
    if place := _WORKPLACE.match(m.string, after):
        return f"{org} {place['noun'].lower()}"
    if _GOES_ON.match(m.string, after) and not _NOT_PART.match(m.string, after):
        return None
    return org


# "in Porto" after a role is where the user works, not part of the role.
_WORKS_IN = rf"(?:\s+(?i:in)\s+{PLACE})?"


@_rule(
    rf"^I\s+(?i:work|am\s+working|'m\s+working)\s+as\s+(?i:an?)\s+{ROLE}(?:\s+(?i:at|for|with)\s+{ORG})?{_WORKS_IN}{END}",
    rf"^{IM}\s+(?i:an?)\s+{ROLE}\s+(?i:at|for|with)\s+{ORG}{_WORKS_IN}{END}",
    rf"^{IM}\s+(?i:an?)\s+{ROLE}{_WORKS_IN}{END}",
)
def _role(m: re.Match[str]) -> list[Fact]:
    role = m["role"].lower()
    place = expand_place(m.groupdict().get("place") or "")
    where = f" in {place}" if place else ""
    words = role.split()
    org = employer(m) if m.groupdict().get("org") else None
    explicit = m[0].lower().startswith(("i work", "i am working", "i'm working"))
    if set(words) & NON_ROLES or (org is None and not explicit and words[-1] not in JOB_WORDS):
        return []
    if words[-1] in STUDY_WORDS and not explicit:  # a student studies, and not "at work"
        facts = [Fact("work.role", f"Is {article(role)} {role}", value=role)]
        if org:
            facts.append(Fact("education.school", f"Studies at {org}", value=org))
        return facts
    facts = [Fact("work.role", f"Works as {article(role)} {role}{where}", value=role)]
    if org:
        facts.append(Fact("work.employer", f"Works at {org}", value=org))
    return facts


@_rule(
    rf"^I\s+(?i:work|am\s+working|'m\s+working)\s+(?i:at|for)\s+{ORG}",
    rf"^I\s+(?i:got|landed|started|accepted|took)\s+(?i:a|an|the)\s+(?:(?i:new)\s+)?(?i:job|position|role|offer)\s+(?i:at|with|from)\s+{ORG}",
    rf"^I\s+(?i:joined|started\s+at|started\s+working\s+at|got\s+hired\s+(?:at|by)|was\s+hired\s+(?:at|by))\s+{ORG}",
    rf"^{IM}\s+(?i:employed\s+(?:at|by)|working\s+at)\s+{ORG}",
    # Without "I": the whole clause only ("Started a new job at Stripe today!")
    rf"^(?i:got|landed|started|accepted|took)\s+(?i:a|an|the)\s+(?:(?i:new)\s+)?(?i:job|position|role)\s+(?i:at|with)\s+{ORG}{END}",
    rf"^(?i:joined|started\s+at|started\s+working\s+at)\s+{ORG}{END}",
)
def _employer(m: re.Match[str]) -> list[Fact]:
    org = employer(m)
    return [Fact("work.employer", f"Works at {org}", value=org)] if org else []


@_rule(
    rf"^(?i:my)\s+{PARTNER}(?:'s\s+name)?\s+(?i:is|'s)\s+(?:(?i:called|named)\s+)?{NAME}{END}",
    rf"^I\s+(?i:have)\s+(?i:a)\s+{PARTNER}\s+(?i:named|called)\s+{NAME}{END}",
)
def _partner(m: re.Match[str]) -> list[Fact]:
    rel, name = m["rel"].lower(), m["name"]
    return (
        [Fact("family.partner", f"Has a {rel} named {name}", value=name)] if ok_name(name) else []
    )


@_rule(
    rf"^{IM}\s+(?P<how>(?i:married|engaged))\s+to\s+{NAME}{END}",
    rf"^{I_}\s+(?i:got)\s+(?P<how>(?i:married|engaged))\s+to\s+{NAME}",
)
def _married(m: re.Match[str]) -> list[Fact]:
    how, name = m["how"].lower(), m["name"]
    return [Fact("family.partner", f"Is {how} to {name}", value=name)] if ok_name(name) else []


# Married without a name ("I got married last month!"): a status of its own, beside the
# partner a user names (which it must not replace).
@_rule(
    rf"^{IM}\s+(?P<how>(?i:married|engaged)){END}",
    rf"^{I_}\s+(?i:got)\s+(?P<how>(?i:married|engaged))(?!\s+(?i:to)\b)",
)
def _wed(m: re.Match[str]) -> list[Fact]:
    how = m["how"].lower()
    return [Fact("family.status", f"Is {how}", value=how)]


# "a new puppy", "a little dog": said of the pet, not part of what it is.
_PET_WORD = r"(?:(?i:new|little|small|big|young|old|rescue|rescued|sweet|cute)\s+)?"


@_rule(
    rf"^{I_}\s+(?i:have|got|adopted)\s+{COUNT}\s+{_PET_WORD}{ANIMAL}(?:\s+(?i:named|called)\s+{NAME})?{END}",
    rf"^(?i:got|adopted)\s+{COUNT}\s+{_PET_WORD}{ANIMAL}(?:\s+(?i:named|called)\s+{NAME})?{END}",
    rf"^(?i:my|our)\s+{ANIMAL}(?:'s\s+name)?\s+(?i:is|'s)\s+(?:(?i:called|named)\s+)?{NAME}{END}",
)
def _pet(m: re.Match[str]) -> list[Fact]:
    word = m["animal"].lower()
    animal, count = ANIMALS[word], (m.groupdict().get("count") or "a").lower()
    shown = word if word in BREEDS else animal
    name = m.groupdict().get("name")
    if name:
        return [
            Fact(
                f"pets.{animal}",
                f"Has {article(shown)} {shown} named {name}",
                value=name,
                generic=f"Has {article(shown)} {shown}",
            )
        ]
    if count in ("a", "an", "one", "1"):
        return [Fact(f"pets.{animal}", f"Has {article(shown)} {shown}")]
    return [Fact(f"pets.{animal}", f"Has {count} {word if word.endswith('s') else word + 's'}")]


@_rule(
    rf"^{IM}\s+(?:(?i:severely|very|deathly|mildly|super)\s+)?allergic\s+to\s+{PHRASE}{END}",
    rf"^I\s+(?i:have)\s+(?:(?i:an?)\s+)?{PHRASE}\s+(?i:allergy|allergies){END}",
)
def _allergy(m: re.Match[str]) -> list[Fact]:
    return [
        Fact(f"health.allergy.{slug(x)}", f"Is allergic to {x}", value=x) for x in items(m["x"])
    ]


@_rule(
    rf"^{IM}\s+(?:(?i:a|an|strictly|fully)\s+)?{DIET}{END}",
    rf"^I\s+(?i:went|became|turned|have\s+gone)\s+(?:(?i:a|an)\s+)?{DIET}{END}",
    rf"^I\s+(?i:eat|follow|am\s+on|'m\s+on)\s+(?:(?i:a|an)\s+)?{DIET}\s+diet{END}",
)
def _diet(m: re.Match[str]) -> list[Fact]:
    diet = m["diet"].lower().replace("pescetarian", "pescatarian")
    return [Fact("diet", DIET_CONTENT[diet], value=diet)]


@_rule(rf"^{IM}\s+(?P<what>(?i:lactose|gluten))(?:\s|-)(?i:intolerant){END}")
def _intolerance(m: re.Match[str]) -> list[Fact]:
    what = m["what"].lower()
    return [Fact(f"health.intolerance.{what}", f"Is {what} intolerant")]


@_rule(rf"^I\s+(?i:don't|do\s+not|never)\s+eat\s+{PHRASE}{END}")
def _avoids(m: re.Match[str]) -> list[Fact]:
    return [Fact(f"diet.avoids.{slug(x)}", f"Does not eat {x}", value=x) for x in items(m["x"])]


_PARTS = frozenset("part parts bit moment moments one ones scene line".split())
_LIKE_CONTENT = {"love": "Loves", "like": "Likes", "enjoy": "Enjoys", "adore": "Loves"}
_DISLIKE_CONTENT = {
    "hate": "Hates",
    "dislike": "Dislikes",
    "can't stand": "Can't stand",
    "don't like": "Dislikes",
    "do not like": "Dislikes",
}


@_rule(rf"^I\s+(?P<verb>(?i:love|like|enjoy|adore))\s+{PHRASE}{END}")
def _likes(m: re.Match[str]) -> list[Fact]:
    verb = _LIKE_CONTENT[m["verb"].lower()]
    things = items(m["x"], definite=False)
    return [Fact(f"likes.{slug(x)}", f"{verb} {x}", value=x) for x in things if slug(x)]


@_rule(
    rf"^I\s+(?P<verb>(?i:hate|dislike|can't\s+stand|don't\s+like|do\s+not\s+like))\s+{PHRASE}{END}"
)
def _dislikes(m: re.Match[str]) -> list[Fact]:
    verb = _DISLIKE_CONTENT[" ".join(m["verb"].lower().split())]
    things = items(m["x"], definite=False)
    return [Fact(f"dislikes.{slug(x)}", f"{verb} {x}", value=x) for x in things if slug(x)]


# "I'm a big fan of jazz"; not the assistant's ("I'm a fan of yours", "of your work").
_FAN = r"(?:(?i:a)\s+)?(?:(?i:big|huge|massive|great|long-?time|die-?hard)\s+)?(?i:fan)\s+of"
_NOT_THINGS = PRONOUNS | {"your", "yours", "his", "hers", "their", "theirs", "everything"}


def _fan_of(m: re.Match[str], key: str, content: str) -> list[Fact]:
    things = items(m["x"], definite=False)
    if not things or any(x.split()[0].lower() in _NOT_THINGS for x in things):
        return []
    return [Fact(f"{key}.{slug(x)}", f"{content} {x}", value=x) for x in things if slug(x)]


@_rule(rf"^{IM}\s+{_FAN}\s+{PHRASE}{END}")
def _fan(m: re.Match[str]) -> list[Fact]:
    return _fan_of(m, "likes", "Is a fan of")


@_rule(rf"^{IM}\s+(?i:not)\s+{_FAN}\s+{PHRASE}{END}")
def _not_fan(m: re.Match[str]) -> list[Fact]:
    return _fan_of(m, "dislikes", "Is not a fan of")


@_rule(rf"^I\s+(?:(?i:generally|usually|always)\s+)?(?i:prefer)\s+{PHRASE}{END}")
def _prefers(m: re.Match[str]) -> list[Fact]:
    said = STRIP_TAIL.sub("", m["x"].strip())
    head = re.split(r"\s+(?i:over|to|rather\s+than|instead\s+of)\s+", said)[0]
    if not slug(head) or not is_object(said, [head]):
        return []
    x = third_person(said)
    return [Fact(f"prefers.{slug(head)}", f"Prefers {x}", value=x)]


@_rule(
    rf"^(?i:my)\s+(?:(?i:all-time)\s+)?(?i:favorite|favourite|fave)\s+"
    rf"(?P<thing>[\w\- ]{{2,30}}?)(?:'s|\s+(?i:is|are))\s+{PHRASE}{END}"
)
def _favorite(m: re.Match[str]) -> list[Fact]:
    thing, said = m["thing"].strip().lower(), STRIP_TAIL.sub("", m["x"].strip())
    if thing.split()[-1] in _PARTS or not is_object(f"{thing} {said}", [thing, said]):
        return []  # "my favorite part is ...": of what was just said or shown
    x = third_person(said)
    return [Fact(f"favorite.{slug(thing)}", f"Favorite {thing} is {x}", value=x)]


@_rule(rf"^I\s+(?P<verb>(?i:play|practice|practise))\s+{PHRASE}{END}")
def _activity(m: re.Match[str]) -> list[Fact]:
    verb = {"play": "Plays"}.get(m["verb"].lower(), "Practices")
    x = re.sub(r"\s+(?i:every\s+\w+|on\s+weekends|regularly|a\s+lot|weekly)$", "", m["x"].strip())
    if x.split()[0].lower() in PRONOUNS or len(x.split()) > 3 or not is_object(x, [x]):
        return []
    return [Fact(f"activity.{slug(x)}", f"{verb} {x}", value=x)]


# Animals kept for what they give, not as pets: "I keep bees on my roof", "we raise hens".
_KEPT = r"(?P<kept>(?i:bees|chickens|hens|ducks|geese|goats|sheep|pigs|cows|alpacas|quails))\b"
_WHERE = r"(?P<where>\s+(?i:on|in|at|behind)\s+(?i:my|our|the)\s+[\w'\- ]{2,30}?)?"


@_rule(rf"^{I_}\s+(?i:keep|raise|rear)\s+{_KEPT}{_WHERE}{END}")
def _kept(m: re.Match[str]) -> list[Fact]:
    kept = m["kept"].lower()
    where = f" {third_person(m['where'].strip())}" if m["where"] else ""
    return [Fact(f"activity.keeping-{kept}", f"Keeps {kept}{where}", value=kept)]


@_rule(rf"^I\s+(?i:smoke|smoke\s+cigarettes){END}")
def _smokes(m: re.Match[str]) -> list[Fact]:
    return [Fact("habit.smoking", "Smokes")]
