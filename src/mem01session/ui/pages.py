"""The pages (GET): read the user's memory, render it. Nothing here changes anything."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from .context import Context, csrf, text_param
from .data import (
    PageError,
    belief_history,
    conversation_id,
    drawn_beliefs,
    episode_listing,
    episode_of,
    known_user,
    record_id,
    user_id,
    user_rows,
)
from .views_belief import belief_page
from .views_episodes import episode_page, episodes_page
from .views_tools import JOB_FILTERS, erase_page, jobs_page, recall_page
from .views_users import beliefs_page, users_page

USERS_LIMIT = 200
BELIEFS_LIMIT = 500
EPISODES_LIMIT = 200
JOBS_LIMIT = 200
MAX_BUDGET = 100_000

FLASH = {
    "corrected": "Corrected. The old statement stays in the history, superseded by this one.",
    "forgotten": "Forgotten. This belief no longer reaches recall; its text stays in the history.",
    "retried": "The job is pending again; a running worker will pick it up.",
}


def _flash(request: Request) -> str | None:
    return FLASH.get(request.query_params.get("done", ""))


async def users(ctx: Context, request: Request) -> Response:
    contains = text_param(request, "q")
    rows, more = await user_rows(await ctx.open(), contains, USERS_LIMIT)
    return HTMLResponse(users_page(rows, contains, more))


async def user(ctx: Context, request: Request) -> Response:
    memory = await ctx.open()
    view = await known_user(memory, user_id(request.query_params.get("u")))
    contains = text_param(request, "q")
    show_all = request.query_params.get("all") == "1"
    beliefs = await memory.beliefs(
        view.user_id, include_inactive=show_all, limit=BELIEFS_LIMIT, contains=contains
    )
    return HTMLResponse(
        beliefs_page(
            view,
            beliefs,
            contains=contains,
            show_all=show_all,
            limit=BELIEFS_LIMIT,
            flash=_flash(request),
        )
    )


async def belief(ctx: Context, request: Request) -> Response:
    memory = await ctx.open()
    view = await known_user(memory, user_id(request.query_params.get("u")))
    bid = record_id(request.query_params.get("id"), user=view.user_id)
    history = await belief_history(memory, view.user_id, bid)
    return HTMLResponse(belief_page(view, history, csrf(ctx, request), _flash(request)))


async def episodes(ctx: Context, request: Request) -> Response:
    memory = await ctx.open()
    view = await known_user(memory, user_id(request.query_params.get("u")))
    session = conversation_id(request.query_params.get("c"), user=view.user_id)
    contains = text_param(request, "q")
    listing = await episode_listing(
        memory, view.user_id, session_id=session, contains=contains, limit=EPISODES_LIMIT
    )
    return HTMLResponse(
        episodes_page(view, listing, session_id=session, contains=contains, limit=EPISODES_LIMIT)
    )


async def episode(ctx: Context, request: Request) -> Response:
    memory = await ctx.open()
    view = await known_user(memory, user_id(request.query_params.get("u")))
    eid = record_id(request.query_params.get("id"), "episode", user=view.user_id)
    found = await episode_of(memory, view.user_id, eid)
    return HTMLResponse(episode_page(view, found, await drawn_beliefs(memory, view.user_id, found)))


async def recall(ctx: Context, request: Request) -> Response:
    memory = await ctx.open()
    view = await known_user(memory, user_id(request.query_params.get("u")))
    params = request.query_params
    query = text_param(request, "q", strip=False)
    budget_text = params.get("budget") or "800"
    if not budget_text.isascii() or not budget_text.isdigit():
        raise PageError(
            400,
            "Not a budget",
            f"the token budget is a positive integer, got {budget_text[:40]!r}",
            user=view.user_id,
        )
    budget = int(budget_text)
    if not 1 <= budget <= MAX_BUDGET:
        raise PageError(
            400,
            "Not a budget",
            f"the token budget must be between 1 and {MAX_BUDGET}, got {budget}",
            user=view.user_id,
        )
    history = params.get("history") == "1"
    result = None
    if "q" in params:
        result = await memory.recall(
            view.user_id,
            query or "",
            max_tokens=budget,
            include_history=history,
            explain=True,
            timezone=view.timezone or "UTC",
        )
    return HTMLResponse(
        recall_page(view, query=query, budget=budget, history=history, result=result)
    )


async def jobs(ctx: Context, request: Request) -> Response:
    memory = await ctx.open()
    view = await known_user(memory, user_id(request.query_params.get("u")))
    status = request.query_params.get("status") or None
    if status not in JOB_FILTERS:
        raise PageError(
            400,
            "Not a job status",
            f"job statuses are pending, running, failed and done; got {status[:40]!r}",
            user=view.user_id,
        )
    listed = await memory.jobs(user_id=view.user_id, status=status, limit=JOBS_LIMIT)
    page = jobs_page(
        view,
        listed,
        status=status,
        csrf=csrf(ctx, request),
        limit=JOBS_LIMIT,
        flash=_flash(request),
    )
    return HTMLResponse(page)


async def erase_form(ctx: Context, request: Request) -> Response:
    view = await known_user(await ctx.open(), user_id(request.query_params.get("u")))
    return HTMLResponse(erase_page(view, csrf(ctx, request)))
