"""A small OpenAI-compatible HTTP server on 127.0.0.1, switchable between real servers' habits.

It runs uvicorn on a thread of the test process, on a socket bound before the thread
starts (so a client may connect at once: nothing to wait for). Every chat request is
rendered through a Jinja chat template (:mod:`tests.compat.templates`) as a real server
would; a template that raises is a 500 carrying its message, as llama.cpp's Python
server answers. What it received and the prompts it rendered are recorded.

Behaviours (:class:`Behaviour`), as observed of llama.cpp's Python server and others:

* ``json_schema_status``: 500 or 422 to ``response_format`` of type ``json_schema``;
* ``template``: ``gemma`` (roles must alternate), ``mistral``, ``drops_system``, ``chatml``;
* ``embeddings``: ``none`` (500: the model was not loaded for embeddings), ``per_token``
  (a list of vectors per text) or ``ok`` (one vector per text);
* ``extraction_delay``: seconds an extraction request waits for its answer (a CPU-only
  server writing JSON);
* ``cut_off``: an extraction request whose turn holds this text is answered cut off at
  the token limit (``finish_reason: length``, half the JSON), as a small model that
  rambles is;
* ``/v1/responses`` is never served (404), like most local servers.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from jinja2 import TemplateError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.compat import fake_model
from tests.compat.templates import render

EMBEDDING_DIM = 64


@dataclass
class Behaviour:
    json_schema_status: int | None = None
    template: str = "chatml"
    embeddings: str = "ok"
    extraction_delay: float = 0.0
    cut_off: str | None = None


STRICTEST = Behaviour(json_schema_status=500, template="gemma", embeddings="none")


@dataclass
class Received:
    path: str
    body: dict[str, Any]
    prompt: str | None = None  # the rendered prompt of a chat request
    status: int = 200


@dataclass
class FakeServer:
    behaviour: Behaviour = field(default_factory=Behaviour)
    received: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/{rest:path}", self._unknown, methods=["GET", "POST"]),
            ]
        )
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()

    def reset(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        self.received = []

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)

    # -- what it saw ---------------------------------------------------------------------

    def paths(self) -> list[str]:
        return [r.path for r in self.received]

    def chats(self, *, extraction: bool | None = None) -> list[Received]:
        """The chat requests (only extraction ones, or only the others)."""
        out = [r for r in self.received if r.path == "chat"]
        if extraction is not None:
            out = [r for r in out if fake_model.is_extraction(r.body["messages"]) == extraction]
        return out

    # -- endpoints -----------------------------------------------------------------------

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        seen = Received("chat", body)
        self.received.append(seen)
        fmt = (body.get("response_format") or {}).get("type")
        if fmt == "json_schema" and self.behaviour.json_schema_status is not None:
            seen.status = self.behaviour.json_schema_status
            return _format_refusal(seen.status)
        try:
            seen.prompt = render(self.behaviour.template, body["messages"])
        except TemplateError as exc:
            seen.status = 500
            return JSONResponse({"error": {"message": str(exc), "type": "server_error"}}, 500)
        text = fake_model.reply(body["messages"], seen.prompt, fmt)
        finish = "stop"
        if fake_model.is_extraction(body["messages"]):
            if self.behaviour.extraction_delay:
                await asyncio.sleep(self.behaviour.extraction_delay)
            marker = self.behaviour.cut_off
            if marker and any(marker in fake_model.text_of(m) for m in body["messages"]):
                text, finish = text[: len(text) // 2], "length"
        if body.get("stream"):
            return StreamingResponse(_chunks(body["model"], text), media_type="text/event-stream")
        return JSONResponse(_completion(body["model"], text, finish))

    async def _embeddings(self, request: Request) -> Response:
        body = await request.json()
        self.received.append(Received("embeddings", body))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        if self.behaviour.embeddings == "none":
            message = "Llama model must be created with embedding=True to call this method"
            return JSONResponse({"error": {"message": message, "type": "server_error"}}, 500)
        vectors: list[Any] = [_vector(t) for t in texts]
        if self.behaviour.embeddings == "per_token":
            vectors = [[_vector(word) for word in t.split()] for t in texts]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        return JSONResponse({"object": "list", "model": body["model"], "data": data})

    async def _unknown(self, request: Request) -> Response:
        """``/v1/responses`` and anything else: not served."""
        self.received.append(Received(request.path_params["rest"], {}, status=404))
        return JSONResponse({"detail": "Not Found"}, 404)

    async def _models(self, request: Request) -> Response:
        self.received.append(Received("models", {}))
        return JSONResponse({"object": "list", "data": [{"id": "fake", "object": "model"}]})


def _format_refusal(status: int) -> Response:
    detail = [
        {
            "type": "literal_error",
            "loc": ["body", "response_format", "type"],
            "msg": "Input should be 'text' or 'json_object'",
            "input": "json_schema",
        }
    ]
    if status == 422:  # FastAPI's own validation answer
        return JSONResponse({"detail": detail}, 422)
    return JSONResponse({"error": {"message": str(detail), "type": "server_error"}}, status)


def _completion(model: str, text: str, finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": finish,
                "message": {"role": "assistant", "content": text},
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


async def _chunks(model: str, text: str) -> AsyncIterator[str]:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model}
    for delta, finish in (({"role": "assistant", "content": text}, None), ({}, "stop")):
        chunk = base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        yield f"data: {json.dumps(chunk)}\n\n"
    yield "data: [DONE]\n\n"


def _vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest() * 2
    raw = [b / 255.0 - 0.5 for b in digest[:EMBEDDING_DIM]]
    norm = sum(x * x for x in raw) ** 0.5 or 1.0
    return [x / norm for x in raw]
