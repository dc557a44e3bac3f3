"""The users page and one user's beliefs."""

from __future__ import annotations

from collections.abc import Sequence

from ..memory.records import Belief
from .data import UserRow, UserView
from .layout import (
    badge,
    belief_cells,
    confidence,
    page,
    plural,
    quote,
    table,
    when,
)
from .markup import Safe, html, join, url

INACTIVE = ("superseded", "invalidated", "merged")


def users_page(rows: Sequence[UserRow], contains: str | None, more: bool) -> Safe:
    search = html(
        '<form class="filter" method="get" action="/">'
        '<input type="search" name="q" value="{q}" placeholder="Filter user ids" '
        'aria-label="Filter user ids" data-filter-table="users">'
        '<button type="submit">Filter</button></form>',
        q=contains or "",
    )
    if not rows:
        empty = (
            "No user matches this filter."
            if contains
            else html(
                "No memory recorded yet. Users appear here once a session has recorded a "
                "turn; <code>mem01session demo --keep</code> makes one."
            )
        )
        return page(
            "Users", html('<h1>Users</h1>{search}<p class="empty">{e}</p>', search=search, e=empty)
        )
    body = table(
        [
            "user",
            "state",
            "current beliefs",
            "history",
            "episodes",
            "jobs",
            "version",
            "last activity",
        ],
        [_user_cells(r) for r in rows],
        cls="users",
    )
    note = (
        html(
            '<p class="muted">Showing the {n} most recently active users; '
            "filter to find others.</p>",
            n=len(rows),
        )
        if more
        else Safe("")
    )
    return page(
        "Users",
        html("<h1>Users</h1>{search}{body}{note}", search=search, body=body, note=note),
    )


def _user_cells(row: UserRow) -> list[object]:
    s = row.summary
    history = join(
        (
            html("{n} {status}", n=s.beliefs[status], status=status)
            for status in INACTIVE
            if s is not None and s.beliefs.get(status)
        ),
        ", ",
    )
    jobs: list[Safe] = []
    if row.jobs is not None and row.jobs.unfinished:
        jobs.append(html("{n} waiting", n=row.jobs.unfinished))
    if row.jobs is not None and row.jobs.failed:
        jobs.append(html('<span class="bad">{n} failed</span>', n=row.jobs.failed))
    return [
        html('<a href="{href}">{user}</a>', href=url("/user", u=row.user_id), user=row.user_id),
        badge("erased") if row.erased else badge("active") if s else badge("waiting"),
        s.active if s else 0,
        history or Safe('<span class="muted">–</span>'),
        html('<a href="{href}">{n}</a>', href=url("/episodes", u=row.user_id), n=s.episodes)
        if s is not None and s.episodes
        else 0,
        html('<a href="{href}">{jobs}</a>', href=url("/jobs", u=row.user_id), jobs=join(jobs, ", "))
        if jobs
        else Safe('<span class="muted">–</span>'),
        s.version if s else 0,
        when(row.last_activity),
    ]


def user_header(view: UserView) -> Safe:
    """The user's id, counts and, when erased, what that means."""
    s = view.summary
    active = s.active if s else 0
    episodes = s.episodes if s else 0
    facts = [
        html("<b>{n}</b> {what}", n=active, what=plural(active, "current belief")),
        html("<b>{n}</b> in history", n=(s.total - s.active) if s else 0),
        html(
            '<a href="{href}" title="what the user said, as recall can quote it (hidden '
            'episodes not counted)"><b>{n}</b> {what}</a>',
            href=url("/episodes", u=view.user_id),
            n=episodes,
            what=plural(episodes, "episode"),
        ),
        html(
            "<b>{n}</b> {what} waiting for extraction",
            n=view.jobs.unfinished,
            what=plural(view.jobs.unfinished, "turn"),
        ),
    ]
    if view.jobs.failed:
        facts.append(
            html(
                '<a class="bad" href="{href}"><b>{n}</b> {what}</a>',
                href=url("/jobs", u=view.user_id, status="failed"),
                n=view.jobs.failed,
                what=plural(view.jobs.failed, "failed job"),
            )
        )
    if view.timezone is not None:
        facts.append(
            html(
                "<span title=\"the zone the user's sessions last gave: the recall page dates "
                'in it">time zone {zone}</span>',
                zone=view.timezone,
            )
        )
    facts.append(html("memory version {v}", v=s.version if s else 0))
    erased = Safe("")
    if view.erased and s is not None:
        erased = html(
            '<p class="warn">This user was erased {when}: every belief, episode (what the user '
            "said), ledger row, source and job was deleted, and new writes are refused until "
            "the user is reinstated "
            "(<code>BeliefEngine.reinstate_user</code>).</p>",
            when=when(s.erased_at),
        )
    return html(
        '<h1 class="user">{user}</h1><p class="facts">{facts}</p>{erased}',
        user=view.user_id,
        facts=join(facts, " · "),
        erased=erased,
    )


def beliefs_page(
    view: UserView,
    beliefs: Sequence[Belief],
    *,
    contains: str | None,
    show_all: bool,
    limit: int,
    flash: str | None = None,
) -> Safe:
    user = view.user_id
    search = html(
        '<form class="filter" method="get" action="/user">'
        '<input type="hidden" name="u" value="{user}">'
        '<input type="search" name="q" value="{q}" placeholder="Filter beliefs by text" '
        'aria-label="Filter beliefs by text" data-filter-table="beliefs">'
        '<label><input type="checkbox" name="all" value="1"{checked}> '
        "include superseded, invalidated and merged</label>"
        '<button type="submit">Filter</button></form>',
        user=user,
        q=contains or "",
        checked=Safe(" checked" if show_all else ""),
    )
    what = "beliefs" if show_all else "current beliefs"
    if not beliefs:
        if contains:
            empty = html("No {what} contain {q}.", what=what, q=quote(contains))
        else:
            empty = html("No {what}.", what=what)
        listing = html('<p class="empty">{e}</p>', e=empty)
    else:
        listing = table(
            ["id", "belief", "status", "valid", "confidence", "said in", "evidence"],
            [_belief_cells(user, b) for b in reversed(beliefs)],
            cls="beliefs",
        )
    more = (
        html('<p class="muted">Showing the {n} most recent; filter to narrow down.</p>', n=limit)
        if len(beliefs) >= limit
        else Safe("")
    )
    return page(
        user,
        html(
            "{head}{search}{listing}{more}",
            head=user_header(view),
            search=search,
            listing=listing,
            more=more,
        ),
        user=user,
        tab="beliefs",
        erased=view.erased,
        flash=flash,
    )


def _belief_cells(user: str, b: Belief) -> list[object]:
    src = next((s for s in reversed(b.sources) if s.evidence), b.sources[-1] if b.sources else None)
    more = len(b.sources) - 1
    said = Safe('<span class="muted">–</span>')
    if src is not None:
        said = html(
            "{session} {day}{more}",
            session=src.session_id or "–",
            day=when(src.observed_at),
            more=html(' <span class="muted">(+{n})</span>', n=more) if more > 0 else Safe(""),
        )
    return [
        *belief_cells(user, b),
        confidence(b.confidence),
        said,
        quote(src.evidence if src else None),
    ]
