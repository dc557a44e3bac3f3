"""What would be recalled, the user's jobs, and erasing the user."""

from __future__ import annotations

from collections.abc import Sequence

from ..memory.ranking import DAY_WEIGHT, EPISODE_FACTOR, INACTIVE_FACTOR, Fusion
from ..memory.records import EraseReceipt, Job, RecallResult, ScoredBelief, ScoredEpisode
from .data import UserView
from .layout import (
    badge,
    belief_link,
    conversation_link,
    episode_link,
    hidden,
    page,
    plural,
    table,
    when,
)
from .markup import Safe, html, join, url
from .views_users import user_header

SIGNALS = ("vector", "text", "relevance", "recency", "confidence", "fused")
NONE = Safe('<span class="muted">–</span>')
JOB_FILTERS = (None, "pending", "running", "failed", "done")


def recall_page(
    view: UserView,
    *,
    query: str | None,
    budget: int,
    history: bool,
    result: RecallResult | None,
) -> Safe:
    user = view.user_id
    form = html(
        '<form class="recall" method="get" action="/recall">'
        '<input type="hidden" name="u" value="{user}">'
        '<label class="grow">The user says<input type="search" name="q" value="{q}" '
        'placeholder="where do I live now?" autofocus></label>'
        '<label>Token budget<input type="number" name="budget" min="1" max="100000" '
        'value="{budget}"></label>'
        '<label><input type="checkbox" name="history" value="1"{checked}> include history</label>'
        '<button type="submit">Recall</button></form>',
        user=user,
        q=query or "",
        budget=budget,
        checked=Safe(" checked" if history else ""),
    )
    body = [user_header(view), form]
    if view.jobs.unfinished:
        body.append(
            html(
                '<p class="warn">{n} of this user\'s turns are still waiting for extraction: '
                "what they say is not in this answer yet.</p>",
                n=view.jobs.unfinished,
            )
        )
    if result is not None:
        body.append(_result(user, result))
    return page(f"Recall · {user}", join(body), user=user, tab="recall", erased=view.erased)


def _result(user: str, r: RecallResult) -> Safe:
    meta = html(
        '<p class="facts"><b>{tokens}</b> of {max} tokens (tokenizer <code>{tok}</code>) · '
        "{beliefs} {bw} and {quotes} {qw} packed of {candidates} candidates · {ms} ms</p>",
        tokens=r.tokens,
        max=r.max_tokens,
        tok=r.tokenizer,
        beliefs=len(r.beliefs),
        bw=plural(len(r.beliefs), "belief"),
        quotes=len(r.episodes),
        qw=plural(len(r.episodes), "quote"),
        candidates=r.candidates,
        ms=f"{r.latency_ms:.0f}",
    )
    if r.text:
        block = html(
            "<h2>The memory block the model would see</h2>"
            '<pre class="block" id="block">{text}</pre>',
            text=r.text,
        )
    else:
        block = html(
            '<p class="empty">No memory block: nothing recalled fits the budget or matches.</p>'
        )
    scores = Safe("")
    if r.beliefs or r.episodes:
        # One list, best score first: the order in which the block was packed.
        items: list[ScoredBelief | ScoredEpisode] = [*r.beliefs, *r.episodes]
        items.sort(key=lambda i: (-i.score, isinstance(i, ScoredEpisode)))
        scores = html(
            "<h2>Why each record was recalled</h2>"
            '<p class="muted">{note} Relevance fuses the vector and full-text ranks '
            "(r<i>n</i>), beliefs and episodes ranked together.</p>{t}",
            note=fusion_note(),
            t=table(
                ["id", "record", "status", *SIGNALS],
                [_score_cells(user, item) for item in items],
                cls="scores",
            ),
        )
    return join([meta, block, scores])


def fusion_note() -> str:
    """How ``fused`` is made, from the weights the engine ranks with."""
    f = Fusion()
    rec = f"({1 - f.w_recency:.2f} + {f.w_recency:.2f} recency)"
    if f.combine == "product":
        conf = f"({1 - f.w_confidence:.2f} + {f.w_confidence:.2f} confidence)"
        belief = f"relevance × {rec} × {conf}"
    else:  # pragma: no cover - the engine's default is the product
        w_rel = 1 - f.w_recency - f.w_confidence
        belief = (
            f"{w_rel:.2f} relevance + {f.w_recency:.2f} recency + {f.w_confidence:.2f} confidence"
        )
    return (
        "relevance: the average of the vector and text lists' rank terms (the text one "
        f"times the share of the question it matches, times {f.text_weight:g}). "
        f"fused: for a belief, {belief} (× {INACTIVE_FACTOR:g} when no longer current, or, "
        "when the question names days, not known to hold then); "
        f"for a quote, relevance × {rec} × {EPISODE_FACTOR:g}, its relevance raised by "
        f"{DAY_WEIGHT:g} × its rank term when it was said in the days the question names "
        "(day r…)."
    )


def _score_cells(user: str, item: ScoredBelief | ScoredEpisode) -> list[object]:
    cells: list[object] = [
        f"{item.signals[name]:.3f}" if name in item.signals else NONE for name in SIGNALS
    ]
    for i, rank in ((0, "vector_rank"), (1, "text_rank")):
        if item.signals.get(rank):
            cells[i] = f"{cells[i]} r{int(item.signals[rank])}"
    if item.signals.get("day_rank"):  # said in the days the question names
        cells[2] = f"{cells[2]} day r{int(item.signals['day_rank'])}"
    if isinstance(item, ScoredBelief):
        b = item.belief
        return [belief_link(user, b.id), b.content, badge(b.status), *cells]
    e = item.episode
    said = html(
        '<span class="content said">{text}</span><div class="muted">{who}{when} in {conv}</div>',
        text=e.content,
        who="the assistant, " if e.role == "assistant" else "",
        when=when(e.said_at),
        conv=conversation_link(user, e.session_id, e.id),
    )
    return [episode_link(user, e.id), said, badge("quote"), *cells]


def jobs_page(
    view: UserView,
    jobs: Sequence[Job],
    *,
    status: str | None,
    csrf: str,
    limit: int,
    flash: str | None = None,
) -> Safe:
    user = view.user_id
    filters = join(
        html(
            '<a href="{href}"{current}>{label}</a>',
            href=url("/jobs", u=user, status=s),
            current=Safe(' aria-current="page"' if s == status else ""),
            label=s or "all",
        )
        for s in JOB_FILTERS
    )
    if jobs:
        listing = table(
            [
                "id",
                "conversation",
                "status",
                "tries",
                "created",
                "updated",
                "turn",
                "last error / notes",
                "",
            ],
            [_job_cells(user, j, csrf) for j in jobs],
            cls="jobs",
        )
    else:
        listing = html('<p class="empty">No {s}jobs.</p>', s=f"{status} " if status else "")
    more = (
        html('<p class="muted">Showing the {n} most recent.</p>', n=limit)
        if len(jobs) >= limit
        else Safe("")
    )
    body = html(
        '{head}<nav class="filters">{filters}</nav>{listing}{more}'
        '<p class="muted">A retried job is pending again; a running worker (any process with a '
        "Mem01Session for this database) picks it up. This browser runs no worker.</p>",
        head=user_header(view),
        filters=filters,
        listing=listing,
        more=more,
    )
    return page(f"Jobs · {user}", body, user=user, tab="jobs", erased=view.erased, flash=flash)


def _job_cells(user: str, j: Job, csrf: str) -> list[object]:
    messages = j.payload.get("messages", [])
    turn = join(
        html(
            "<div><b>{role}</b>: {text}</div>",
            role=str(m.get("role", "?")),
            text=str(m.get("text", "")),
        )
        for m in messages
        if isinstance(m, dict)
    )
    retry = Safe("")
    if j.status == "failed":
        retry = html(
            '<form method="post" action="/retry">{keys}<button type="submit">Retry</button></form>',
            keys=hidden(csrf, u=user, id=j.id),
        )
    return [
        html('<span id="job-{id}">#{id}</span>', id=j.id),
        j.session_id,
        badge(j.status),
        j.attempts,
        when(j.created_at),
        when(j.updated_at),
        html(
            "<details><summary>{n}</summary>{turn}</details>",
            n=f"{len(messages)} message{'' if len(messages) == 1 else 's'}",
            turn=turn,
        ),
        html('<span class="bad">{e}</span>', e=j.last_error)
        if j.last_error
        else html('<span class="dim">{n}</span>', n=j.notes or ""),
        retry,
    ]


def erase_page(view: UserView, csrf: str, *, error: str | None = None) -> Safe:
    user = view.user_id
    s = view.summary
    if view.erased:
        body = html('<p class="empty">Nothing left to erase.</p>')
    else:
        body = html(
            '<section class="danger-zone"><h2>Erase this user</h2>'
            "<p>Hard-deletes every belief ({beliefs}), every episode (what the user said, kept "
            "verbatim: {episodes} that recall can quote, and any hidden ones), ledger row, "
            "source and job ({jobs}) of this user, in one "
            "transaction, and leaves a tombstone that refuses new writes until the user is "
            "reinstated. Transcripts are not touched. This cannot be undone.</p>"
            "{error}"
            '<form method="post" action="/erase" class="erase" data-confirm="{user}">{keys}'
            '<label>Type the user id to confirm<input name="confirm" autocomplete="off" required '
            'spellcheck="false"></label>'
            '<button type="submit" class="danger">Erase {user}</button></form></section>',
            beliefs=s.total if s else 0,
            episodes=s.episodes if s else 0,
            jobs=sum(view.jobs.counts.values()),
            error=html('<p class="bad" role="alert">{e}</p>', e=error) if error else Safe(""),
            user=user,
            keys=hidden(csrf, u=user),
        )
    return page(
        f"Erase · {user}",
        html("{h}{b}", h=user_header(view), b=body),
        user=user,
        tab="erase",
        erased=view.erased,
    )


def receipt_page(receipt: EraseReceipt) -> Safe:
    rows: list[list[object]] = [[name, count] for name, count in receipt.deleted.items()]
    rows.append([Safe("<b>total</b>"), html("<b>{n}</b>", n=receipt.total)])
    body = html(
        '<h1 class="user">{user}</h1><p class="flash" role="status">Erased {when}.</p>'
        "<h2>Receipt: rows deleted</h2>{t}"
        "<p>New writes for this user are refused until it is reinstated "
        "(<code>BeliefEngine.reinstate_user</code>); a job still in flight cannot recreate "
        'anything. <a href="{href}">Back to the user</a>.</p>',
        user=receipt.user_id,
        when=when(receipt.erased_at),
        t=table(["table", "rows deleted"], rows, cls="receipt"),
        href=url("/user", u=receipt.user_id),
    )
    return page(f"Erased · {receipt.user_id}", body, user=receipt.user_id, erased=True)
