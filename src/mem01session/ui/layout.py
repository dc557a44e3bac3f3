"""The page frame and the small pieces every page uses: badges, times, links, forms."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from ..memory.records import Belief
from .markup import Safe, html, join, url

TABS = (
    ("beliefs", "/user", "Beliefs"),
    ("episodes", "/episodes", "Episodes"),
    ("recall", "/recall", "Recall"),
    ("jobs", "/jobs", "Jobs"),
    ("erase", "/erase", "Erase"),
)


def page(
    title: str,
    body: Safe,
    *,
    user: str | None = None,
    tab: str | None = None,
    erased: bool = False,
    flash: str | None = None,
) -> Safe:
    """A whole HTML document: header, breadcrumb, the user's tabs, a flash line, ``body``."""
    crumbs = [html('<a href="/">Users</a>')]
    tabs = Safe("")
    if user is not None:
        crumbs.append(html('<a href="{href}">{user}</a>', href=url("/user", u=user), user=user))
        if erased:
            crumbs.append(badge("erased"))
        tabs = html(
            '<nav class="tabs">{links}</nav>',
            links=join(
                html(
                    '<a href="{href}"{current}>{label}</a>',
                    href=url(path, u=user),
                    current=Safe(' aria-current="page"' if name == tab else ""),
                    label=label,
                )
                for name, path, label in TABS
            ),
        )
    note = html('<p class="flash" role="status">{text}</p>', text=flash) if flash else Safe("")
    return html(
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>{title} · mem01session</title>"
        '<link rel="stylesheet" href="/static/style.css">'
        '<link rel="icon" href="/static/icon.svg" type="image/svg+xml">'
        '<script src="/static/app.js" defer></script></head>\n'
        '<body><header><a class="brand" href="/">mem01session <span>memory browser</span></a>'
        '<nav class="crumbs">{crumbs}</nav></header>\n'
        "<main>{tabs}{note}{body}</main></body></html>\n",
        title=title,
        crumbs=join(crumbs, " › "),
        tabs=tabs,
        note=note,
        body=body,
    )


def error_body(title: str, message: str) -> Safe:
    return html(
        '<section class="error"><h1>{title}</h1><p>{message}</p>'
        '<p><a href="/">Back to the users</a></p></section>',
        title=title,
        message=message,
    )


def badge(status: str) -> Safe:
    """A status (belief, job, op or user) as a coloured label."""
    kind = "".join(ch for ch in status.lower() if ch.isalpha())
    return html('<span class="badge b-{kind}">{status}</span>', kind=kind, status=status)


def when(moment: datetime | None) -> Safe:
    """A timestamp in UTC to the minute; the exact instant in the tooltip."""
    if moment is None:
        return Safe('<span class="muted">–</span>')
    utc = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    return html(
        '<time datetime="{iso}" title="{iso}">{text}</time>',
        iso=utc.isoformat(),
        text=utc.strftime("%Y-%m-%d %H:%M UTC"),
    )


def plural(n: int, word: str) -> str:
    """``word`` for one, ``words`` otherwise."""
    return word if n == 1 else word + "s"


def day(moment: datetime | None) -> str:
    return "–" if moment is None else moment.astimezone(UTC).date().isoformat()


def validity(belief: Belief) -> str:
    """``since D`` for a belief still holding, ``D to D'`` for a closed interval."""
    if belief.valid_to is None:
        return f"since {day(belief.valid_from)}"
    return f"{day(belief.valid_from)} to {day(belief.valid_to)}"


def confidence(value: float) -> Safe:
    level = "low" if value < 0.5 else "mid" if value < 0.7 else "high"
    return html('<span class="conf conf-{level}">{value}</span>', level=level, value=f"{value:.2f}")


def belief_link(user: str, belief_id: int | None) -> Safe:
    if belief_id is None:
        return Safe("–")
    return html(
        '<a href="{href}">#{id}</a>', href=url("/belief", u=user, id=belief_id), id=belief_id
    )


def belief_cells(user: str, belief: Belief) -> list[object]:
    """The cells a row of beliefs starts with: its id, its statement (both links to its
    page), its status and when it held."""
    return [
        belief_link(user, belief.id),
        html(
            '<a class="content" href="{href}">{text}</a>',
            href=url("/belief", u=user, id=belief.id),
            text=belief.content,
        ),
        badge(belief.status),
        validity(belief),
    ]


def job_link(user: str, job_id: int | None) -> Safe:
    if job_id is None:
        return Safe('<span class="muted">–</span>')
    href = Safe(url("/jobs", u=user) + f"#job-{int(job_id)}")
    return html('<a href="{href}">#{id}</a>', href=href, id=job_id)


def episode_link(user: str, episode_id: int | None) -> Safe:
    if episode_id is None:
        return Safe('<span class="muted">–</span>')
    return html(
        '<a href="{href}">e#{id}</a>', href=url("/episode", u=user, id=episode_id), id=episode_id
    )


def conversation_link(user: str, session_id: str, episode_id: int | None = None) -> Safe:
    """The conversation on the episodes tab (at ``episode_id``'s row when given)."""
    target = url("/episodes", u=user, c=session_id)
    if episode_id is not None:
        target = Safe(f"{target}#episode-{int(episode_id)}")
    return html('<a href="{href}"><code>{s}</code></a>', href=target, s=session_id)


HIDDEN_MEANS = "a belief drawn from these words was forgotten, so recall no longer quotes them"


def hidden_mark(moment: datetime | None) -> Safe:
    """The mark of a hidden episode, saying what it means ('' for one recall can quote)."""
    if moment is None:
        return Safe("")
    return html(
        ' <span class="badge b-hidden" title="Hidden: {means}">hidden</span>'
        ' <span class="muted">since {day}</span>',
        means=HIDDEN_MEANS,
        day=day(moment),
    )


def quote(text: str | None) -> Safe:
    """User-supplied words, shown as a quotation."""
    if not text:
        return Safe('<span class="muted">–</span>')
    return html('<q class="said">{text}</q>', text=text)


def hidden(csrf: str, **fields: object) -> Safe:
    """A form's hidden inputs: the CSRF token, then ``fields``."""
    pairs = [("csrf", csrf), *fields.items()]
    return join(
        html('<input type="hidden" name="{name}" value="{value}">', name=name, value=value)
        for name, value in pairs
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, cls: str = "") -> Safe:
    """A table; cells are escaped unless :class:`Safe`."""
    head = join(html("<th>{h}</th>", h=h) for h in headers)
    body = join(
        html("<tr>{cells}</tr>", cells=join(html("<td>{c}</td>", c=c) for c in row)) for row in rows
    )
    return html(
        '<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead>'
        "<tbody>{body}</tbody></table></div>",
        cls=cls,
        head=head,
        body=body,
    )
