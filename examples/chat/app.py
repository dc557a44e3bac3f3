"""A chat app to copy: answers streamed to a browser, several server processes, one memory.

Run it (two commands; see README.md beside this file)::

    mem01session worker &
    uvicorn examples.chat.app:app --workers 2

Each server process opens one ``Memory`` that records turns and recalls, and extracts
nothing (``run_worker=False``): ``mem01session worker`` does that for all of them. Each
browser is a user (a cookie; a client can name one with the ``X-User`` header); each tab
is a conversation (its id, kept in the tab's ``sessionStorage``), kept by a
``SessionManager`` whose sessions are ``Mem01Session``s. Answers come from
``Runner.run_streamed``: the offline answering model of the demo without
``OPENAI_API_KEY``, the configured model with one. The panel beside the chat shows what
memory holds about the user (the block the model would see, the current beliefs) through
``Memory``'s verbs, with buttons to forget or correct a belief.

Settings: ``MEM01_*`` as everywhere (``MEM01_DATABASE_URL``, ``MEM01_HOME``: the embedded
server under it when no URL is set), ``MEM01_CHAT_FOLDER`` (the transcripts; default
``MEM01_HOME/chat``), ``MEM01_CHAT_MEMORY=off`` (the same app without memory: plain
transcripts, for comparison).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from agents import Agent, Runner
from agents.models.interface import Model
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from mem01session import Mem01Error, Memory, Settings
from mem01session.checks import check_id
from mem01session.demo import OfflineAnswerModel
from mem01session.errors import BeliefNotFoundError
from mem01session.shortterm import SessionManager, mem01_session_factory

USER_COOKIE = "mem01_chat_user"
PLATFORM = "web"
ABOUT_ME = "What do you remember about me?"
PAGE = (Path(__file__).parent / "page.html").read_text()
INSTRUCTIONS = "You are a helpful assistant. Answer briefly."
MAX_BODY_BYTES = 64 * 1024  # a message is kept up to 8,000 characters anyway


class TooLarge(ValueError):
    """A request body past MAX_BODY_BYTES."""


class NoMemory(LookupError):
    """A memory verb asked of the app run without memory."""


def answering_model(settings: Settings) -> Model | str:
    """The configured model with an API key; the demo's offline model without one."""
    return settings.llm_model if settings.openai_api_key else OfflineAnswerModel()


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    settings = Settings.from_env()
    with_memory = os.environ.get("MEM01_CHAT_MEMORY", "on") != "off"
    folder = Path(os.environ.get("MEM01_CHAT_FOLDER") or Path(settings.home) / "chat")
    memory = None
    if with_memory:
        memory = await Memory.open(settings, run_worker=False)
        await memory.ready()
        manager = SessionManager(folder, session_factory=mem01_session_factory(memory))
    else:
        manager = SessionManager(folder)
    app.state.memory = memory
    app.state.manager = manager
    app.state.agent = Agent(
        name="assistant", instructions=INSTRUCTIONS, model=answering_model(settings)
    )
    try:
        yield
    finally:
        await manager.aclose()  # each chat's session closed: its turns handed to memory
        if memory is not None:
            await memory.aclose()


def user_of(request: Request) -> str:
    """Who is asking: the ``X-User`` header, else the browser's cookie."""
    said = request.headers.get("x-user") or request.cookies.get(USER_COOKIE)
    if not said:
        raise PermissionError("no user: open the page first (it sets a cookie)")
    return check_id("user", said)


def memory_user(request: Request) -> str:
    """Whose durable memory the asking user's chats share (the manager's memory user)."""
    return SessionManager.memory_user_id(PLATFORM, user_of(request))


async def page(request: Request) -> Response:
    response = HTMLResponse(PAGE)
    if not request.cookies.get(USER_COOKIE):
        guest = f"guest-{secrets.token_hex(4)}"
        response.set_cookie(USER_COOKIE, guest, max_age=365 * 86400, samesite="lax")
    return response


async def body_of(request: Request) -> dict[str, Any]:
    """The request's JSON object, read up to MAX_BODY_BYTES (past it: TooLarge)."""
    read = bytearray()
    async for chunk in request.stream():
        read += chunk
        if len(read) > MAX_BODY_BYTES:
            raise TooLarge(f"the request is over {MAX_BODY_BYTES} bytes")
    try:
        body = json.loads(read)
    except RecursionError:
        raise ValueError("the request is nested too deep") from None
    if not isinstance(body, dict):
        raise ValueError("the request must be a JSON object")
    return body


def belief_id(body: dict[str, Any]) -> int:
    """The ``id`` of a belief, an integer (``true`` or ``1.9`` are not one)."""
    found = body.get("id")
    if isinstance(found, bool) or not isinstance(found, int):
        raise ValueError("id: a belief's id (an integer)")
    return found


def memory_of(request: Request) -> Memory:
    memory: Memory | None = request.app.state.memory
    if memory is None:
        raise NoMemory("this app runs without memory (MEM01_CHAT_MEMORY=off)")
    return memory


async def chat(request: Request) -> Response:
    """Answer one message, streamed as plain text a few words at a time."""
    body = await body_of(request)
    user, chat_id, text = user_of(request), check_id("chat", body.get("chat")), body.get("text")
    if not isinstance(text, str) or not text.strip():
        return JSONResponse({"error": "text: say something"}, status_code=400)
    session = request.app.state.manager.get_or_create(PLATFORM, user, chat_id)
    options: dict[str, Any] = {}
    if request.app.state.memory is not None:
        options["run_config"] = session.run_config()
    result = Runner.run_streamed(request.app.state.agent, text, session=session, **options)

    async def words() -> AsyncIterator[str]:
        finished = False
        try:
            async for event in result.stream_events():
                if event.type == "raw_response_event" and event.data.type == (
                    "response.output_text.delta"
                ):
                    yield event.data.delta
            finished = True
        finally:
            if not finished:  # the client went away mid-answer: stop the run
                result.cancel()

    return StreamingResponse(words(), media_type="text/plain; charset=utf-8")


async def remembered(request: Request) -> Response:
    """What memory holds about the user: the block a model would see, current beliefs."""
    memory: Memory | None = request.app.state.memory
    if memory is None:
        return JSONResponse({"memory": False, "block": "", "beliefs": []})
    user = memory_user(request)
    query = request.query_params.get("q") or ABOUT_ME
    block = await memory.recall(user, query)
    beliefs = await memory.beliefs(user)
    return JSONResponse(
        {
            "memory": True,
            "user": user_of(request),
            "block": block.text,
            "beliefs": [
                {"id": b.id, "content": b.content, "since": b.valid_from.date().isoformat()}
                for b in beliefs
            ],
        }
    )


async def forget(request: Request) -> Response:
    memory = memory_of(request)
    body = await body_of(request)
    await memory.forget(memory_user(request), belief_id(body), reason="forgotten on the page")
    return JSONResponse({"ok": True})


async def correct(request: Request) -> Response:
    memory = memory_of(request)
    body = await body_of(request)
    text = body.get("text")
    if not isinstance(text, str) or not text.strip():
        return JSONResponse({"error": "text: the corrected statement"}, status_code=400)
    await memory.correct(
        memory_user(request), belief_id(body), text, reason="corrected on the page"
    )
    return JSONResponse({"ok": True})


STATUS = ((PermissionError, 403), (NoMemory, 404), (BeliefNotFoundError, 404), (TooLarge, 413))


async def refused(request: Request, exc: Exception) -> Response:
    status = next((code for kind, code in STATUS if isinstance(exc, kind)), 400)
    return JSONResponse({"error": str(exc)}, status_code=status)


app = Starlette(
    routes=[
        Route("/", page),
        Route("/api/chat", chat, methods=["POST"]),
        Route("/api/memory", remembered),
        Route("/api/forget", forget, methods=["POST"]),
        Route("/api/correct", correct, methods=["POST"]),
    ],
    lifespan=lifespan,
    exception_handlers={
        PermissionError: refused,
        LookupError: refused,
        Mem01Error: refused,
        ValueError: refused,
        KeyError: refused,
        json.JSONDecodeError: refused,
    },
)
