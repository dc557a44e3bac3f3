"""What every route is given: the memory it reads and writes, and the browser's secrets."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.datastructures import FormData
from starlette.requests import Request

from ..memory import Memory
from .data import PageError
from .security import BROWSER_KEY, Access

MAX_TEXT_CHARS = 2000


@dataclass
class Context:
    """The open memory (shared by every request) and the access rules."""

    access: Access
    memory: Memory | None = None

    async def open(self) -> Memory:
        """The memory, open; 503 while the browser is still starting up."""
        if self.memory is None:
            raise PageError(503, "Not ready", "The memory browser is still starting up.")
        return self.memory


def browser_of(request: Request) -> str | None:
    """The id of the browser that sent ``request`` (its cookie; set by the Guard)."""
    value = request.scope.get("state", {}).get(BROWSER_KEY)
    return value if isinstance(value, str) else None


def csrf(ctx: Context, request: Request) -> str:
    """The CSRF token the forms of a page sent to this browser carry."""
    browser = browser_of(request)
    return "" if browser is None else ctx.access.csrf_for(browser)


def clean(value: str, *, strip: bool = True) -> str:
    """Text from a request as the database can take it: NUL bytes dropped, bounded."""
    value = value.replace("\x00", "")[:MAX_TEXT_CHARS]
    return value.strip() if strip else value


def text_param(request: Request, name: str, *, strip: bool = True) -> str | None:
    """A query parameter as text; None when missing or blank."""
    value = request.query_params.get(name)
    if value is None:
        return None
    value = clean(value, strip=strip)
    return value if value.strip() else None


async def form_of(ctx: Context, request: Request) -> FormData:
    """The posted form, if it carries this process's CSRF token; else 403."""
    form = await request.form(max_files=0, max_fields=20)
    if not ctx.access.csrf_ok(form.get("csrf"), browser_of(request)):
        raise PageError(
            403,
            "Form refused",
            "This form did not carry the memory browser's CSRF token, so it may come from "
            "another site or another browser. Reload the page and submit again (the token "
            "changes each time the memory browser is restarted).",
        )
    return form


def form_text(form: FormData, name: str) -> str:
    value = form.get(name)
    return clean(value) if isinstance(value, str) else ""
