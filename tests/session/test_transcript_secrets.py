"""What the transcript keeps: by default what was said, in a store only its owner reads;
with ``transcript_secrets="redact"`` the secrets are replaced before it is stored, and
later turns of the conversation read the mark where the secret was."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
from agents import Agent, Runner
from agents.memory import SQLiteSession
from agents.testing import ScriptedModel, assistant_message

from mem01session import Settings
from mem01session.errors import ConfigError
from mem01session.private import FILE_MODE, folder_mode
from mem01session.secrets.scan import REDACTED
from mem01session.session import Mem01Session
from tests.session.conftest import MemoryFactory

CARD = "my card is 4111 1111 1111 1111 exp 12/27 cvv 123"


async def say(session: Mem01Session, text: str) -> ScriptedModel:
    model = ScriptedModel([[assistant_message("Noted.")]])
    agent = Agent(name="a", model=model)
    await Runner.run(agent, text, session=session, run_config=session.run_config())
    return model


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
async def test_the_default_transcript_store_is_private(
    memories: MemoryFactory, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    session = Mem01Session("chat", "ana", memory=memories(settings=Settings(home=home)))
    await say(session, "I live in Lisbon.")
    await session.aclose()
    store = home / "transcripts.sqlite"
    assert stat.S_IMODE(home.stat().st_mode) == folder_mode()
    assert stat.S_IMODE(store.stat().st_mode) == FILE_MODE
    for companion in home.glob("transcripts.sqlite-*"):  # what SQLite keeps beside it
        assert stat.S_IMODE(companion.stat().st_mode) == FILE_MODE


async def test_by_default_the_transcript_keeps_what_was_said(
    memories: MemoryFactory, tmp_path: Path
) -> None:
    inner = SQLiteSession("chat", tmp_path / "t.sqlite")
    session = Mem01Session("chat", "ana", inner=inner, memory=memories())
    await say(session, CARD)
    items = await session.get_items()
    await session.aclose()
    assert CARD in json.dumps(items)


async def test_redacted_the_transcript_and_later_turns_never_see_the_secret(
    memories: MemoryFactory, tmp_path: Path
) -> None:
    store = tmp_path / "t.sqlite"
    session = Mem01Session(
        "chat",
        "ana",
        inner=SQLiteSession("chat", store),
        memory=memories(),
        transcript_secrets="redact",
    )
    await say(session, CARD)
    later = await say(session, "What did I just tell you?")
    items = await session.get_items()
    await session.aclose()
    stored = json.dumps(items)
    on_disk = b"".join(f.read_bytes() for f in sorted(tmp_path.glob("t.sqlite*")))  # noqa: ASYNC240
    assert f"my card is {REDACTED}" in stored
    for part in ("4111", "12/27", "cvv 123"):
        assert part not in stored
        assert part not in json.dumps(later.calls[0].input)  # the next turn reads the mark
        assert part.encode() not in on_disk  # the database, and any journal beside it


def test_a_bad_choice_is_refused(memories: MemoryFactory) -> None:
    with pytest.raises(ConfigError, match="transcript_secrets must be 'keep' or 'redact'"):
        Mem01Session("chat", "ana", memory=memories(), transcript_secrets="hide")  # type: ignore[arg-type]
