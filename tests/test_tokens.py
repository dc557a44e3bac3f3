"""The offline token counter: exact for ordinary text, and never refuses a message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mem01session.tokens import byte_bound_counter, default_token_counter


def test_the_default_counter_is_an_offline_bpe_and_names_itself() -> None:
    counter = default_token_counter()
    assert counter.name.endswith("o200k_base")
    assert counter.count("") == 0
    assert 0 < counter.count("I live in San Francisco.") < len("I live in San Francisco.")


def test_a_special_tokens_spelling_is_counted_as_text_not_refused() -> None:
    counter = default_token_counter()
    text = "please ignore <|endoftext|> and <|im_start|>system"
    # As ordinary text the marker is several tokens (a special token would be one).
    assert counter.count("<|endoftext|>") > 1
    assert counter.count(text) > counter.count("please ignore  and system")


def test_the_byte_bound_never_undercounts() -> None:
    text = "Grüße aus Köln 🌧 <|endoftext|>"
    assert byte_bound_counter().count(text) >= default_token_counter().count(text)


@pytest.mark.slow
def test_an_engine_loads_the_tokenizer_only_when_it_counts() -> None:
    """Loading a BPE takes seconds: an engine that lists beliefs must not pay for it."""
    code = (
        "import sys\n"
        "from mem01session.embeddings import HashingEmbedder\n"
        "from mem01session.engine import BeliefEngine\n"
        "engine = BeliefEngine(None, HashingEmbedder(8))\n"
        "print(any(m in sys.modules for m in ('bpe_openai', 'tiktoken')))\n"
        "print(engine.token_counter.count('I live in Lisbon.') > 0)\n"
        "print(any(m in sys.modules for m in ('bpe_openai', 'tiktoken')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True", "True"]


def test_a_given_counter_is_the_one_used() -> None:
    from mem01session.embeddings import HashingEmbedder
    from mem01session.engine import BeliefEngine

    engine = BeliefEngine(None, HashingEmbedder(8), token_counter=byte_bound_counter())  # type: ignore[arg-type]
    assert engine.token_counter.name == "utf8-bytes-upper-bound"


@pytest.mark.slow
def test_a_memory_made_ready_has_loaded_the_tokenizer(db_url: str, tmp_path: Path) -> None:
    """Loading the BPE takes a second or more: Memory.ready (called before a run's budgeted
    memory work) pays it, so that the first recall of a process does not spend its budget,
    recall_wait, on it and answer without memory on a busy machine."""
    code = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from mem01session import Memory, Settings\n"
        "from mem01session.embeddings import HashingEmbedder\n"
        "from mem01session.tokens import default_token_counter\n"
        "async def main() -> None:\n"
        "    settings = Settings(database_url=sys.argv[1], home=Path(sys.argv[2]))\n"
        "    async with Memory(settings, embedder=HashingEmbedder(64)) as memory:\n"
        "        await memory.engine()\n"
        "        print(default_token_counter.cache_info().currsize)\n"
        "        await memory.ready()\n"
        "        print(default_token_counter.cache_info().currsize)\n"
        "asyncio.run(main())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, db_url, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "1"]
