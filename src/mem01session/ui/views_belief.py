"""One belief: what it says, its versions, its ledger, the words it was drawn from, its
provenance, and the forms that correct or forget it."""

from __future__ import annotations

from collections.abc import Mapping

from ..memory.records import Belief, LedgerEvent
from .data import BeliefHistory, UserView
from .layout import (
    badge,
    belief_link,
    confidence,
    conversation_link,
    episode_link,
    hidden,
    job_link,
    page,
    quote,
    table,
    validity,
    when,
)
from .markup import Safe, html, join
from .views_episodes import said_section
from .views_users import user_header

NONE = Safe('<span class="muted">–</span>')


def belief_page(view: UserView, h: BeliefHistory, csrf: str, flash: str | None = None) -> Safe:
    user, b = view.user_id, h.belief
    sections = [
        _summary(user, b),
        _versions(user, h),
        _actions(user, b, csrf) if b.status == "active" and not view.erased else Safe(""),
        html("<h2>History</h2>{t}", t=_ledger(user, h)),
        said_section(user, h.episodes),
        html("<h2>Provenance</h2>{t}", t=_provenance(user, b)),
    ]
    return page(
        f"#{b.id} {b.content[:60]}",
        html("{head}{body}", head=user_header(view), body=join(sections)),
        user=user,
        tab="beliefs",
        erased=view.erased,
        flash=flash,
    )


def _summary(user: str, b: Belief) -> Safe:
    facts: list[tuple[str, object]] = [
        ("status", join([badge(b.status), _link_out(user, b)], " ")),
        ("valid", validity(b)),
        ("confidence", confidence(b.confidence)),
        ("version", b.version),
        ("key", b.key or NONE),
        ("created", when(b.created_at)),
        ("updated", when(b.updated_at)),
        ("last confirmed", when(b.last_confirmed_at)),
    ]
    rows = join(html("<dt>{k}</dt><dd>{v}</dd>", k=k, v=v) for k, v in facts)
    return html(
        '<section class="belief"><h2><span class="muted">#{id}</span> '
        '<span class="content" id="belief-content">{text}</span></h2><dl>{rows}</dl></section>',
        id=b.id,
        text=b.content,
        rows=rows,
    )


def _link_out(user: str, b: Belief) -> Safe:
    if b.superseded_by:
        return html("by {link}", link=belief_link(user, b.superseded_by))
    if b.merged_into:
        return html("into {link}", link=belief_link(user, b.merged_into))
    return Safe("")


def _versions(user: str, h: BeliefHistory) -> Safe:
    """Every version of this statement, oldest first: what it replaced, what replaced it."""
    if len(h.versions) < 2:
        return Safe("")
    rows = [
        [
            belief_link(user, v.id),
            html("<b>{text}</b>", text=v.content) if v.id == h.belief.id else v.content,
            join([badge(v.status), _link_out(user, v)], " "),
            validity(v),
            html("<code>{x}</code>", x=v.sources[-1].extractor)
            if v.sources and v.sources[-1].extractor
            else NONE,
        ]
        for v in h.versions
    ]
    return html(
        "<h2>Versions</h2>{t}",
        t=table(["id", "belief", "status", "valid", "source"], rows, cls="versions"),
    )


def _actions(user: str, b: Belief, csrf: str) -> Safe:
    keys = hidden(csrf, u=user, id=b.id)
    return html(
        '<section class="actions">'
        '<form method="post" action="/correct" class="correct">'
        "<h2>Correct</h2>"
        "<p>Replace the statement: this belief becomes superseded (its text stays in the "
        "history) and the new one takes its place.</p>{keys}"
        '<label>New text<textarea name="text" rows="2" required maxlength="1000">'
        "{text}</textarea></label>"
        '<label>Reason <input name="reason" maxlength="500" '
        'placeholder="corrected in the memory browser"></label>'
        '<button type="submit">Correct</button></form>'
        '<form method="post" action="/forget" class="forget">'
        "<h2>Forget</h2>"
        "<p>Mark it as no longer true: it leaves recall, its text stays in the history.</p>"
        '{keys}<label>Reason <input name="reason" required maxlength="500" '
        'placeholder="why it is wrong"></label>'
        '<button type="submit" class="danger">Forget</button></form>'
        "</section>",
        keys=keys,
        text=b.content,
    )


def _state(user: str, state: Mapping[str, object] | None) -> Safe:
    """A ledger snapshot: ``#id "content" status``; a MERGE's before lists its sources."""
    if not state:
        return NONE
    sources = state.get("sources")
    if isinstance(sources, list) and "content" not in state:
        return join((_state(user, s) for s in sources if isinstance(s, Mapping)), " + ")
    raw_id = state.get("id")
    bid = raw_id if isinstance(raw_id, int) else None
    return html(
        '<span class="state">{link} <span class="content">{text}</span> {status}</span>',
        link=belief_link(user, bid),
        text=str(state.get("content", "")),
        status=badge(str(state.get("status", "?"))),
    )


def _ledger(user: str, h: BeliefHistory) -> Safe:
    if not h.events:
        return html('<p class="empty">No ledger events.</p>')
    rows = [_event_cells(user, h, e) for e in h.events]
    return table(["time", "op", "before", "after", "reason", "job", "source"], rows, cls="ledger")


def _event_cells(user: str, h: BeliefHistory, e: LedgerEvent) -> list[object]:
    source = h.source_of(e)
    return [
        when(e.created_at),
        badge(e.op),
        _state(user, e.before),
        _state(user, e.after),
        e.reason or NONE,
        job_link(user, e.job_id),
        html("<code>{s}</code>", s=source) if source else NONE,
    ]


def _provenance(user: str, b: Belief) -> Safe:
    if not b.sources:
        return html('<p class="empty">No recorded sources.</p>')
    rows = [
        [
            when(s.observed_at),
            conversation_link(user, s.session_id, s.episode_id) if s.session_id else NONE,
            s.item_ref or NONE,
            html("<code>{x}</code>", x=s.extractor) if s.extractor else NONE,
            job_link(user, s.job_id),
            episode_link(user, s.episode_id),
            quote(s.evidence),
        ]
        for s in b.sources
    ]
    return table(
        ["observed", "conversation", "turn", "extractor", "job", "episode", "evidence"],
        rows,
        cls="sources",
    )
