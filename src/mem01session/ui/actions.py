"""The actions (POST): correct, forget, retry, erase. Each needs the CSRF token and is the
memory's verb, as the library's users call it, recorded as the inspector's."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ..logs import get_logger
from ..memory import Memory
from ..memory.records import Belief, Provenance
from .context import Context, csrf, form_of, form_text
from .data import PageError, belief_of, known_user, record_id, user_id
from .markup import href
from .views_tools import erase_page, receipt_page

log = get_logger(__name__)

SOURCE = "inspector"
"""The extractor name the ledger and the provenance record for changes made here."""
INSPECTOR = Provenance(extractor=SOURCE)


def _see(path: str, **params: object) -> RedirectResponse:
    return RedirectResponse(href(path, **params), status_code=303)


@dataclass(frozen=True)
class _Target:
    """An active belief a form names, with the form and the memory that found it."""

    form: FormData
    memory: Memory
    user: str
    belief: Belief


async def _active_target(ctx: Context, request: Request, verb: str) -> _Target:
    form = await form_of(ctx, request)
    memory = await ctx.open()
    view = await known_user(memory, user_id(form_text(form, "u") or None))
    user = view.user_id
    bid = record_id(form_text(form, "id"), user=user)
    belief = await belief_of(memory, user, bid)
    if belief.status != "active":
        raise PageError(
            409,
            "Not active",
            f"Belief #{bid} is {belief.status}; only active beliefs can be {verb}.",
            user=user,
        )
    return _Target(form, memory, user, belief)


async def correct(ctx: Context, request: Request) -> Response:
    target = await _active_target(ctx, request, "corrected")
    memory, user, belief, bid = target.memory, target.user, target.belief, target.belief.id
    text = form_text(target.form, "text")
    if not text:
        raise PageError(400, "Empty correction", "The corrected text must not be empty.", user=user)
    if text == belief.content:
        raise PageError(
            400, "Nothing to correct", "The new text is the same as the old one.", user=user
        )
    reason = form_text(target.form, "reason") or "corrected in the memory browser"
    result = await memory.correct(user, bid, text, reason=reason, provenance=INSPECTOR)
    new_id = result.changes[0].belief_id
    log.info("ui: corrected belief #%d of a user into #%d", bid, new_id)
    return _see("/belief", u=user, id=new_id, done="corrected")


async def forget(ctx: Context, request: Request) -> Response:
    target = await _active_target(ctx, request, "forgotten")
    memory, user, bid = target.memory, target.user, target.belief.id
    reason = form_text(target.form, "reason")
    if not reason:
        raise PageError(
            400, "No reason", "Say why the belief is forgotten; the ledger keeps it.", user=user
        )
    await memory.forget(user, bid, reason=reason, provenance=INSPECTOR)
    log.info("ui: forgot belief #%d of a user", bid)
    return _see("/belief", u=user, id=bid, done="forgotten")


async def retry(ctx: Context, request: Request) -> Response:
    form = await form_of(ctx, request)
    memory = await ctx.open()
    view = await known_user(memory, user_id(form_text(form, "u") or None))
    job_id = record_id(form_text(form, "id"), "job", user=view.user_id)
    job = await memory.retry_job(job_id, user_id=view.user_id)
    if job is None:
        raise PageError(
            404,
            "No such failed job",
            f"User {view.user_id!r} has no failed job #{job_id}.",
            user=view.user_id,
        )
    log.info("ui: job #%d sent back to the queue", job_id)
    return _see("/jobs", u=view.user_id, done="retried")


async def erase(ctx: Context, request: Request) -> Response:
    form = await form_of(ctx, request)
    memory = await ctx.open()
    view = await known_user(memory, user_id(form_text(form, "u") or None))
    if view.erased:
        raise PageError(
            409, "Already erased", f"User {view.user_id!r} was erased already.", user=view.user_id
        )
    confirm = form.get("confirm")
    if confirm != view.user_id:
        page = erase_page(
            view,
            csrf(ctx, request),
            error="The confirmation does not match the user id; nothing was erased.",
        )
        return HTMLResponse(page, status_code=400)
    receipt = await memory.erase(view.user_id)
    log.info("ui: erased a user (%d rows)", receipt.total)
    return HTMLResponse(receipt_page(receipt))
