"""What the user said: their episodes by conversation, one episode with the beliefs drawn
from it, and the words a belief came from (shown on the belief's page)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..memory.records import Belief, Episode
from .data import Conversation, EpisodeListing, UserView
from .layout import (
    HIDDEN_MEANS,
    belief_cells,
    belief_link,
    conversation_link,
    day,
    episode_link,
    hidden_mark,
    job_link,
    page,
    plural,
    quote,
    table,
    when,
)
from .markup import Safe, html, join, url
from .views_users import user_header

NONE = Safe('<span class="muted">–</span>')


def episodes_page(
    view: UserView,
    listing: EpisodeListing,
    *,
    session_id: str | None,
    contains: str | None,
    limit: int,
) -> Safe:
    user = view.user_id
    search = html(
        '<form class="filter" method="get" action="/episodes">'
        '<input type="hidden" name="u" value="{user}">'
        '<input type="search" name="q" value="{q}" placeholder="Filter episodes by their words" '
        'aria-label="Filter episodes by their words" data-filter-table="episodes">'
        '<input type="search" name="c" value="{c}" placeholder="Conversation id" '
        'aria-label="Only this conversation" spellcheck="false">'
        '<button type="submit">Filter</button>{everywhere}</form>',
        user=user,
        q=contains or "",
        c=session_id or "",
        everywhere=html(
            '<a class="clear" href="{href}">all conversations</a>',
            href=url("/episodes", u=user, q=contains),
        )
        if session_id
        else Safe(""),
    )
    intro = html(
        '<p class="muted">What was said, verbatim (after the secret screen) and dated: one row '
        "per passage of a message, kept by the worker as it applies each turn. Recall quotes "
        "them beside the beliefs.</p>"
    )
    parts = [user_header(view), intro, search]
    episodes = [e for c in listing.conversations for e in c.episodes]
    if not episodes:
        parts.append(html('<p class="empty">{e}</p>', e=_empty(session_id, contains)))
    else:
        hidden = sum(1 for e in episodes if e.hidden_at is not None)
        parts.append(
            html(
                '<p class="facts"><b>{n}</b> {what} in <b>{k}</b> {convs}{hidden}</p>',
                n=listing.count,
                what=plural(listing.count, "episode"),
                k=len(listing.conversations),
                convs=plural(len(listing.conversations), "conversation"),
                hidden=html(" (<b>{h}</b> hidden)", h=hidden) if hidden else Safe(""),
            )
        )
        if hidden:
            parts.append(
                html(
                    '<p class="note"><span class="badge b-hidden">hidden</span> {means}.</p>',
                    means=HIDDEN_MEANS[0].upper() + HIDDEN_MEANS[1:],
                )
            )
        parts.extend(
            _conversation(user, c, only=session_id is not None) for c in listing.conversations
        )
    if listing.more:
        parts.append(
            html(
                '<p class="muted">Showing the {n} most recent; older episodes match too: filter '
                "by words or conversation to find them.</p>",
                n=limit,
            )
        )
    return page(f"Episodes · {user}", join(parts), user=user, tab="episodes", erased=view.erased)


def _empty(session_id: str | None, contains: str | None) -> Safe:
    where = (
        html(" in conversation {c}", c=html("<code>{s}</code>", s=session_id))
        if session_id
        else Safe("")
    )
    if contains:
        return html("No episodes{where} contain {q}.", where=where, q=quote(contains))
    if session_id:
        return html("No episodes{where}.", where=where)
    return html(
        "No episodes recorded. The worker keeps what the user says as it applies each turn "
        "(unless <code>MEM01_EPISODES=off</code>); a user erased or written to only by hand "
        "has none."
    )


def _conversation(user: str, c: Conversation, *, only: bool) -> Safe:
    span = day(c.first_said)
    if day(c.last_said) != span:
        span += f" to {day(c.last_said)}"
    narrow = (
        Safe("")
        if only
        else html(
            ' · <a href="{href}">only this conversation</a>',
            href=url("/episodes", u=user, c=c.session_id),
        )
    )
    rows = [_episode_cells(user, e) for e in c.episodes]
    return html(
        '<section class="conversation"><h2>Conversation <code>{s}</code></h2>'
        '<p class="facts">{n} {what} · {span}{narrow}</p>{t}</section>',
        s=c.session_id,
        n=len(c.episodes),
        what=plural(len(c.episodes), "episode"),
        span=span,
        narrow=narrow,
        t=table(["id", "said", "who", "words", "beliefs drawn", "job"], rows, cls="episodes"),
    )


def _episode_cells(user: str, e: Episode) -> list[object]:
    return [
        html('<span id="episode-{id}">{link}</span>', id=e.id, link=episode_link(user, e.id)),
        when(e.said_at),
        _who(e),
        _words(e),
        join((belief_link(user, b) for b in e.belief_ids), ", ") if e.belief_ids else NONE,
        job_link(user, e.job_id),
    ]


def _who(e: Episode) -> Safe:
    return html('<span class="who who-{role}">{role}</span>', role=e.role)


def _words(e: Episode) -> Safe:
    cls = "content said gone" if e.hidden_at is not None else "content said"
    return html(
        '<span class="{cls}">{text}</span>{mark}',
        cls=cls,
        text=e.content,
        mark=hidden_mark(e.hidden_at),
    )


def episode_page(view: UserView, e: Episode, beliefs: Sequence[Belief]) -> Safe:
    """One episode: the words, when and where, the turn, and the beliefs drawn from it."""
    user = view.user_id
    facts: list[tuple[str, object]] = [
        ("said", when(e.said_at)),
        ("who", _who(e)),
        ("conversation", conversation_link(user, e.session_id, e.id)),
        ("job", job_link(user, e.job_id)),
        ("turn", e.item_ref or NONE),
        ("place", f"message {e.message + 1} of the turn, passage {e.passage + 1}"),
        ("after", e.context or NONE),
        (
            "recall",
            html("not hidden: recall quotes it when it answers a query")
            if e.hidden_at is None
            else html("{mark}: {means}", mark=hidden_mark(e.hidden_at), means=HIDDEN_MEANS),
        ),
    ]
    rows = join(html("<dt>{k}</dt><dd>{v}</dd>", k=k, v=v) for k, v in facts)
    card = html(
        '<section class="belief episode"><h2><span class="muted">e#{id}</span> '
        '<span class="{cls}" id="episode-content">{text}</span></h2><dl>{rows}</dl></section>',
        id=e.id,
        cls="content said gone" if e.hidden_at is not None else "content said",
        text=e.content,
        rows=rows,
    )
    if beliefs:
        drawn = table(
            ["id", "belief", "status", "valid"],
            [belief_cells(user, b) for b in beliefs],
            cls="beliefs",
        )
    else:
        drawn = html('<p class="empty">No belief was drawn from these words.</p>')
    body = html(
        "{head}{card}<h2>Beliefs drawn from it</h2>{drawn}",
        head=user_header(view),
        card=card,
        drawn=drawn,
    )
    return page(f"e#{e.id} {e.content[:60]}", body, user=user, tab="episodes", erased=view.erased)


def said_section(user: str, episodes: Mapping[int, Episode | None]) -> Safe:
    """On a belief's page: the words it was drawn from, dated, with their conversation."""
    if not episodes:
        return html(
            "<h2>What was said</h2>"
            '<p class="empty">No words are kept for this belief: it was written without a '
            "conversation turn (a correction, a direct <code>apply</code>), before episodes "
            "were kept, or with episodes turned off.</p>"
        )
    items = []
    for episode_id, e in episodes.items():
        if e is None:
            items.append(
                html(
                    '<li class="muted">e#{id}: no longer kept (deleted by the episode '
                    "retention).</li>",
                    id=episode_id,
                )
            )
            continue
        items.append(
            html(
                '<li><span class="{cls}">{text}</span>{mark}'
                '<div class="muted">{who} · {said} in {conv} · {link}</div></li>',
                cls="content said gone" if e.hidden_at is not None else "content said",
                text=e.content,
                mark=hidden_mark(e.hidden_at),
                who=_who(e),
                said=when(e.said_at),
                conv=conversation_link(user, e.session_id, e.id),
                link=episode_link(user, e.id),
            )
        )
    return html('<h2>What was said</h2><ul class="said-list">{items}</ul>', items=join(items))
