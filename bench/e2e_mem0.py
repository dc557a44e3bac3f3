"""mem0's rows of the end-to-end benchmark (:mod:`bench.e2e`), each in mem0's own process
(:mod:`bench.peers.mem0_driver`): the turns stored as raw messages (``infer=False``), and
mem0's own LLM pipeline (``infer=True``) against the benchmark's model server."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mem01session.tokens import default_token_counter

from .common import PrecomputedEmbedder, Server, scratch
from .locomo import Dialogue, DialogueSession, Exchange, chat, raw_text, turn_instant
from .metrics import Answer, pack
from .peer_client import Peer
from .quality import CANDIDATES, HEADER

BUDGETS = (200, 400, 800)
RAW = "mem0 (raw messages)"
LLM = "mem0 (its LLM pipeline)"


@dataclass
class Mem0Row:
    """What mem0 stored and recalled: per budget one Answer per question."""

    answers: dict[int, list[Answer]]
    memories: dict[str, int]  # user -> memories
    ingest_s_per_turn: float
    returned: list[int]  # results per search
    events: dict[str, int]  # its history's events (ADD, UPDATE, DELETE)


@dataclass(frozen=True)
class Model:
    """The chat server mem0's LLM calls go to, and the model it names."""

    url: str
    model: str
    api_key: str


def parsed(exchange: Exchange) -> str:
    """What mem0 embeds of an exchange to find its existing memories (``parse_messages``)."""
    return f"user: {exchange.turn.text}\nassistant: {exchange.reply}\n"


def texts_to_embed(dialogues: Sequence[Dialogue]) -> list[str]:
    """Every text mem0's LLM pipeline embeds, known before it runs: each exchange as it
    reads it, and the facts the replay answers."""
    out: list[str] = []
    for d in dialogues:
        for session in d.sessions:
            for speaker in d.speakers:
                out += [parsed(e) for e in chat(session, speaker)]
        out += [f for facts in d.observed.values() for f in facts]
    return out


def raw_messages(
    server: Server, emb: PrecomputedEmbedder, dialogues: Sequence[Dialogue], log: Path, turns: int
) -> Mem0Row:
    """Each turn a raw message of its speaker's user (``infer=False``)."""
    with Peer("mem0", log) as peer:
        peer.setup(server.database("e2e_mem0"), emb.dim, scratch())
        ms = 0.0
        for d in dialogues:
            for session in d.sessions:
                batch = [
                    {
                        "user": d.user_id(t.speaker),
                        "speaker": t.speaker,
                        "dia_id": t.dia_id,
                        "text": raw_text(session, t),
                        "observed_at": turn_instant(session, t).isoformat(),
                        "vector": emb.cache[raw_text(session, t)],
                    }
                    for t in session.turns
                ]
                ms += float(peer.call("add_turns", turns=batch)["ms"])
        return _recalled(peer, emb, dialogues, ms / 1000.0 / max(turns, 1))


def llm_pipeline(
    server: Server, emb: PrecomputedEmbedder, dialogues: Sequence[Dialogue], log: Path,
    turns: int, model: Model,
) -> Mem0Row:  # fmt: skip
    """Each exchange (the user's turn and the reply) added after it happened, as a chat app
    adds them, through mem0's extraction call to ``model`` and its dedup."""
    with Peer("mem0", log) as peer:
        llm = {"url": model.url, "model": model.model, "api_key": model.api_key}
        peer.setup(server.database("e2e_mem0_llm"), emb.dim, scratch(), llm=llm)
        ms = 0.0
        for d in dialogues:
            for session in d.sessions:
                for speaker in d.speakers:
                    batch = [_exchange(emb, d, session, e) for e in chat(session, speaker)]
                    ms += float(peer.call("add_exchanges", exchanges=batch)["ms"])
        return _recalled(peer, emb, dialogues, ms / 1000.0 / max(turns, 1))


def _exchange(
    emb: PrecomputedEmbedder, d: Dialogue, session: DialogueSession, e: Exchange
) -> dict[str, object]:
    texts = [parsed(e), *d.observed.get(e.turn.dia_id, ())]
    return {
        "user": d.user_id(e.turn.speaker),
        "messages": [
            {"role": "user", "content": e.turn.text},
            {"role": "assistant", "content": e.reply},
        ],
        "dia_id": e.turn.dia_id,
        "observed_at": turn_instant(session, e.turn).isoformat(),
        "vectors": {t: emb.cache[t] for t in texts},
    }


def _recalled(
    peer: Peer, emb: PrecomputedEmbedder, dialogues: Sequence[Dialogue], ingest: float
) -> Mem0Row:
    """Every question searched for each speaker's user, packed at each budget."""
    row = Mem0Row({b: [] for b in BUDGETS}, {}, ingest, [], {})
    for d in dialogues:
        users = [d.user_id(s) for s in d.speakers]
        row.memories.update(peer.call("count", users=users)["counts"])
        for _, question in d.queries:
            blocks = {b: Answer(ranked=()) for b in BUDGETS}
            for user in users:
                reply = peer.call("recall", user=user, query=question,
                                  vector=emb.cache[question], k=CANDIDATES)  # fmt: skip
                items = [(i["text"], frozenset(i["ids"])) for i in reply["items"]]
                row.returned.append(len(items))
                for b, got in packed(items).items():
                    blocks[b] = Answer((), [*blocks[b].block, *got.block],
                                       blocks[b].block_tokens + got.block_tokens)  # fmt: skip
            for b in BUDGETS:
                row.answers[b].append(blocks[b])
    row.events = peer.call("events")["events"]
    return row


def packed(items: Sequence[tuple[str, frozenset[str]]]) -> dict[int, Answer]:
    """A ranked list as a block at each budget: its leading items as ``- text`` lines under
    a one-line header, counted with the shared tokenizer."""
    count = default_token_counter().count
    out: dict[int, Answer] = {}
    for budget in BUDGETS:
        taken = pack([t for t, _ in items], count, budget, HEADER)
        text = HEADER + "".join(f"- {items[i][0]}\n" for i in taken)
        out[budget] = Answer((), [items[i][1] for i in taken], count(text) if taken else 0)
    return out
