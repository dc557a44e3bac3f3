"""An OpenAI-compatible chat server on loopback that answers extraction requests from
LoCoMo's observations (:mod:`bench.replay`), or passes them on to a real model, and counts
what each system asked and was answered.

Every request's prompt (its messages' text, and the JSON schema it sends, which a server
puts in the model's input) and its answer are counted with the benchmark's one tokenizer,
per system, whatever answers it; with a real model behind it (``upstream``) the model's own
counts are kept beside. It runs uvicorn on a thread of the benchmark's process, on a socket
bound before the thread starts.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx2
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mem01session.tokens import default_token_counter

from .locomo import Dialogue
from .replay import MEM0, OURS, Observations, answer_mem0, answer_ours, read_request


@dataclass
class ModelUsage:
    """What one system asked of the model, counted with the benchmark's tokenizer."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    facts: int = 0  # facts answered (replay)
    unplaced: int = 0  # requests the replay could not place: answered with none
    model_prompt_tokens: int = 0  # the upstream model's own counts (upstream only)
    model_completion_tokens: int = 0


@dataclass(frozen=True)
class Upstream:
    """A real OpenAI-compatible server the requests go on to."""

    base_url: str
    api_key: str | None = field(default=None, repr=False)
    model: str | None = None  # the model asked for, whatever the system named


class ReplayServer:
    """The server; ``usage`` per system (``mem01session``, ``mem0``, ``other``)."""

    def __init__(self, dialogues: Iterable[Dialogue], upstream: Upstream | None = None) -> None:
        self.observations = Observations(dialogues)
        self.upstream = upstream
        self.usage: dict[str, ModelUsage] = {}
        self._count = default_token_counter().count
        self._client: httpx2.AsyncClient | None = None
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)

    def __enter__(self) -> ReplayServer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _prompt_tokens(self, body: dict[str, Any]) -> int:
        texts = [str(m.get("content") or "") for m in body.get("messages") or []]
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
        if schema is None:  # JSON mode with llama.cpp's schema extension
            schema = (body.get("response_format") or {}).get("schema")
        if schema is not None:
            texts.append(json.dumps(schema))
        return sum(self._count(t) for t in texts)

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        asked = read_request(body)
        usage = self.usage.setdefault(asked.system or "other", ModelUsage())
        prompt = self._prompt_tokens(body)
        usage.calls += 1
        usage.prompt_tokens += prompt
        if self.upstream is not None:
            reply = await self._forward(body, usage)
            text = reply["choices"][0]["message"].get("content") or ""
            usage.completion_tokens += self._count(text)
            return JSONResponse(reply)
        facts = (
            self.observations.facts(asked.user_words, asked.observed)
            if asked.user_words is not None
            else None
        )
        if facts is None:
            usage.unplaced += 1
            facts = ()
        usage.facts += len(facts)
        if asked.system == OURS:
            text = answer_ours(facts, asked)
        elif asked.system == MEM0:
            text = answer_mem0(facts, asked)
        else:
            text = "{}"
        completion = self._count(text)
        usage.completion_tokens += completion
        return JSONResponse(_completion(str(body.get("model")), text, prompt, completion))

    async def _forward(self, body: dict[str, Any], usage: ModelUsage) -> dict[str, Any]:
        assert self.upstream is not None
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.upstream.api_key or 'unused'}"}
            self._client = httpx2.AsyncClient(headers=headers, timeout=300)
        if self.upstream.model:
            body = {**body, "model": self.upstream.model}
        url = self.upstream.base_url.rstrip("/") + "/chat/completions"
        response = await self._client.post(url, json=body)
        response.raise_for_status()
        reply: dict[str, Any] = response.json()
        counted = reply.get("usage") or {}
        usage.model_prompt_tokens += int(counted.get("prompt_tokens") or 0)
        usage.model_completion_tokens += int(counted.get("completion_tokens") or 0)
        return reply


def _completion(model: str, text: str, prompt: int, completion: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-replay",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": text},
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
