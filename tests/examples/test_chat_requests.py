"""The chat example's request checks, in process: what a client sends that is not a chat
message is refused with a 4xx, never a 500 and its traceback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from examples.chat import app as chat_app
from starlette.testclient import TestClient


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    """The app without memory (``MEM01_CHAT_MEMORY=off``): the checks come before it."""
    monkeypatch.setenv("MEM01_HOME", str(tmp_path))
    monkeypatch.setenv("MEM01_CHAT_MEMORY", "off")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with TestClient(chat_app.app, headers={"X-User": "ana"}) as running:
        yield running


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        (b"[1, 2]", 400, "must be a JSON object"),
        (b'"hi"', 400, "must be a JSON object"),
        (b"null", 400, "must be a JSON object"),
        (b"[" * 100_000 + b"]" * 100_000, 413, "over 65536 bytes"),
        (b"[" * 30_000 + b"]" * 30_000, 400, "nested too deep"),
        (b'{"chat": "c", "text": "' + b"x" * 70_000 + b'"}', 413, "over 65536 bytes"),
        (b"{not json", 400, ""),
    ],
)
def test_a_chat_request_that_is_no_message_is_refused(
    client: TestClient, body: bytes, status: int, said: str
) -> None:
    response = client.post("/api/chat", content=body)
    assert response.status_code == status
    assert said in response.json()["error"]


def test_memory_verbs_of_an_app_without_memory_are_not_found(client: TestClient) -> None:
    for path, body in (("/api/forget", {"id": 1}), ("/api/correct", {"id": 1, "text": "x"})):
        response = client.post(path, json=body)
        assert response.status_code == 404
        assert "without memory" in response.json()["error"]


@pytest.mark.parametrize("given", [True, 1.9, None, "1", [1], 1e400])
def test_a_belief_id_is_an_integer(given: object) -> None:
    with pytest.raises(ValueError, match="id: a belief's id"):
        chat_app.belief_id({"id": given})
    assert chat_app.belief_id({"id": 7}) == 7
