"""End-to-end memory on real dialogue (LoCoMo): what users get from the real pipeline.

Each LoCoMo conversation has two users, one per speaker. For each session, in order, with
the memory's clock at the session's date, and for each speaker, one chat
(:func:`bench.locomo.chat`): that speaker's turns are the user messages, the other
speaker's turns the replies, given verbatim by :class:`ReplayModel`. Every turn goes
through the real ``Runner.run(agent, text, session=session, run_config=session.run_config())``
on ``Mem01Session(chat_id, user_id, memory=memory)`` (one shared ``Memory``: the rule
extractor in the background worker, the harness's embedder); each chat is flushed at its
end. The clock gives each turn its own instant (session date + turn index seconds), so
every stored item's observed time names its turn (:func:`bench.locomo.instants`).

The extractor (:data:`EXTRACTORS`): the offline rules (the default configuration), or this
library's model extractor (``OpenAIExtractor``) against a chat server on loopback
(:mod:`bench.replay_server`) that answers from LoCoMo's observations (``replay``) or passes
the requests on to the model ``OPENAI_BASE_URL``/``OPENAI_API_KEY``/``MEM01_LLM_MODEL``
name (``openai``); with a model, mem0 runs its own LLM pipeline (``infer=True``) against
the same server, and the server counts both systems' calls and tokens.

Then, for each question of categories 1-4 with evidence, both speakers' users recall at B
tokens each; a question is a hit at B when an item in either block came from a user turn
(never the reply) whose dia_id is in the evidence. Rows: this pipeline (what it recalls by
default, and each kind of record alone: :data:`PIPELINE_ROWS`), every turn stored
verbatim as a belief of its speaker's user (``engine.apply``), and mem0 (:mod:`bench.e2e_mem0`),
its results packed into B tokens as ``- text`` lines under a one-line header. One
tokenizer counts every block.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import sqlite3
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from agents import Agent, Runner, SQLiteSession, set_tracing_disabled
from agents.items import ItemHelpers, ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model
from agents.testing import assistant_message
from agents.usage import Usage

from mem01session import Mem01Session, Memory, Settings
from mem01session.engine import BeliefEngine, RecallRequest, RecallResult
from mem01session.engine.ops import Op, Provenance
from mem01session.engine.read import read_block
from mem01session.engine.records import RecallKinds
from mem01session.engine.scoring import TEXT_WEIGHT, Fusion
from mem01session.engine.small_talk import is_small_talk
from mem01session.extraction import Extractor, OpenAIExtractor
from mem01session.session.backfill import backfill
from mem01session.session.items import memory_texts

from . import e2e_mem0
from .common import PrecomputedEmbedder, Server, open_memory
from .e2e_mem0 import BUDGETS as BUDGETS
from .e2e_mem0 import Mem0Row
from .locomo import NO_REPLY, Dialogue, chat, instants, load_dialogues, raw_text, turn_instant
from .metrics import Answer, Query, Summary, summarize
from .peer_client import PeerError
from .quality import SettableClock
from .replay_server import ModelUsage, ReplayServer, Upstream

# The full-text list's weight in the fusion, compared on the pipeline's memory (first run).
TEXT_WEIGHTS = tuple(sorted({1.0, TEXT_WEIGHT, 3.0}))
RAW = "raw turns"
MEM0 = e2e_mem0.RAW
MEM0_LLM = e2e_mem0.LLM
EXTRACTORS = ("rules", "replay", "openai")
REPLAY_MODEL = "locomo-observations"  # the model the replaying server answers as
Turns = Mapping[tuple[str, datetime], str]  # (user, instant) -> dia_id


# This pipeline's rows and what each recalls: everything (the default), one kind alone.
PIPELINE_ROWS: dict[str, RecallKinds] = {
    "mem01session": "all",
    "beliefs only": "beliefs",
    "episodes only": "episodes",
}


class ReplayModel(Model):
    """Answers with :attr:`reply` verbatim (the other speaker's next turn) and keeps the
    input items of its last call, as the SDK gave them (their types mark recalled memory)."""

    def __init__(self) -> None:
        self.reply = NO_REPLY
        self.last_input: list[TResponseInputItem] = []
        self.calls = 0

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.calls += 1
        items = input if isinstance(input, list) else ItemHelpers.input_to_new_input_list(input)
        self.last_input = copy.copy(items)
        return ModelResponse(
            output=[assistant_message(self.reply)], usage=Usage(), response_id=None
        )

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("ReplayModel answers Runner.run, not streaming")


@dataclass
class Row:
    """One system's figures: per budget, one Answer per question; what it stored."""

    answers: dict[int, list[Answer]] = field(default_factory=dict)
    summaries: dict[int, Summary] = field(default_factory=dict)
    beliefs: dict[str, int] = field(default_factory=dict)  # user -> active beliefs
    episodes: dict[str, int] = field(default_factory=dict)  # user -> episodes
    ingest_s_per_turn: float = 0.0
    returned: list[int] = field(default_factory=list)  # results per search (peers)
    statuses: dict[str, int] = field(default_factory=dict)  # beliefs by status, every user
    # budget -> (quotes in the blocks, those from a turn LoCoMo observed no fact in)
    quotes: dict[int, tuple[int, int]] = field(default_factory=dict)


@dataclass
class Injection:
    runs: int = 0
    recalled: int = 0
    carried: int = 0


@dataclass
class E2EResult:
    extractor: str = "rules"
    dialogues: int = 0
    turns: int = 0
    questions: int = 0
    category_counts: dict[int, int] = field(default_factory=dict)  # questions per category
    ceiling: float = 0.0  # questions whose evidence names a turn of the dialogue
    rows: dict[str, Row] = field(default_factory=dict)
    # Runner.run calls in each dialogue's first session and after it: how many, how many
    # recalled a non-empty block, how many model inputs carried exactly that block.
    runs: dict[str, Injection] = field(default_factory=dict)
    jobs: dict[str, int] = field(default_factory=dict)  # the pipeline's jobs by status
    flush_failures: list[str] = field(default_factory=list)
    unmapped_sources: int = 0  # belief sources whose observed time names no turn
    failures: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    repeats: list[dict[str, dict[int, Summary]]] = field(default_factory=list)  # every run's
    # The mem01session row recalled with each of TEXT_WEIGHTS: evidence in block per budget.
    text_weights: dict[float, dict[int, float]] = field(default_factory=dict)
    # With a model: what each system asked of it (mem01session, mem0), counted by the server.
    usage: dict[str, ModelUsage] = field(default_factory=dict)
    # What the write path did: this pipeline's ledger ops, mem0's history events.
    lifecycle: dict[str, dict[str, int]] = field(default_factory=dict)
    observations: int = 0  # LoCoMo's observations the replay can answer
    unplaced_observations: int = 0  # about one speaker, drawn from the other's turn
    # Questions whose evidence names no turn an observation was drawn from: a belief the
    # replay wrote points at their evidence for none of them.
    unobserved_questions: int = 0
    # Turns the library takes for small talk, and how many of them LoCoMo observed a fact in.
    small_talk: tuple[int, int] = (0, 0)

    def agreed(self, name: str, budget: int, category: int | None = None) -> bool:
        """Whether every run gave this row the same figure (overall, or one category)."""
        values = {
            (run[name][budget].in_block if category is None
             else run[name][budget].by_category.get(category))
            for run in self.repeats if name in run
        }  # fmt: skip
        return len(values) <= 1


Provenances = Mapping[str, Mapping[int, frozenset[str]]]  # user -> belief -> dia_ids


async def _provenance(
    engine: BeliefEngine, dialogue: Dialogue, turns: Turns, out: E2EResult
) -> Provenances:
    """Each user's beliefs -> the dia_ids of the turns they came from (history holds the
    sources; the default recall block carries none)."""
    found: dict[str, dict[int, frozenset[str]]] = {}
    for user in (dialogue.user_id(s) for s in dialogue.speakers):
        mine = found[user] = {}
        for belief in await engine.history(user, limit=1_000_000):
            ids = {turns.get((user, s.observed_at)) for s in belief.sources}
            out.unmapped_sources += sum(
                1 for s in belief.sources if (user, s.observed_at) not in turns
            )
            mine[belief.id] = frozenset(i for i in ids if i is not None)
    return found


def recalled_ids(
    result: RecallResult, user: str, beliefs: Mapping[int, frozenset[str]], turns: Turns
) -> list[frozenset[str]]:
    """The dia_ids of each item in a recalled block: beliefs by their provenance, episodes
    by the instant they were said."""
    items = [beliefs.get(s.belief.id, frozenset()) for s in result.beliefs]
    for scored in result.episodes:
        dia = turns.get((user, scored.episode.said_at))
        items.append(frozenset({dia}) if dia else frozenset())
    return items


@dataclass
class _Recalled:
    """Each question's recalled items per budget; the blocks' quotes per budget, those of
    them from a turn LoCoMo observed no fact in, and those said before the dialogue (and of
    those, small talk); each recall's wall time and this process's CPU time in it (ms)."""

    answers: dict[int, list[Answer]] = field(default_factory=lambda: {b: [] for b in BUDGETS})
    quotes: dict[int, list[int]] = field(default_factory=lambda: {b: [0, 0] for b in BUDGETS})
    older: dict[int, int] = field(default_factory=lambda: dict.fromkeys(BUDGETS, 0))
    older_small_talk: dict[int, int] = field(default_factory=lambda: dict.fromkeys(BUDGETS, 0))
    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)


async def _answers(
    engine: BeliefEngine, dialogue: Dialogue, turns: Turns, provenance: Provenances,
    kinds: RecallKinds, fusion: Fusion | None = None,
) -> _Recalled:  # fmt: skip
    """Every question recalled for both speakers' users at each budget; ``fusion``: another
    than the library's."""
    users = [dialogue.user_id(s) for s in dialogue.speakers]
    out = _Recalled()
    for _, question in dialogue.queries:
        for budget in BUDGETS:
            block: list[frozenset[str]] = []
            tokens = 0
            for user in users:
                request = RecallRequest(question, max_tokens=budget, kinds=kinds)
                wall, cpu = time.perf_counter(), time.process_time()
                if fusion is None:
                    result = await engine.recall(user, request)
                else:
                    result, _ = await read_block(engine.parts, user, request, fusion=fusion)
                out.wall_ms.append((time.perf_counter() - wall) * 1000)
                out.cpu_ms.append((time.process_time() - cpu) * 1000)
                block += recalled_ids(result, user, provenance[user], turns)
                tokens += result.tokens
                said = [turns.get((user, e.episode.said_at)) for e in result.episodes]
                out.quotes[budget][0] += len(said)
                out.quotes[budget][1] += sum(1 for d in said if d not in dialogue.observed)
                older = [e.episode for e in result.episodes
                         if e.episode.said_at < dialogue.sessions[0].date]  # fmt: skip
                out.older[budget] += len(older)
                out.older_small_talk[budget] += sum(
                    1 for e in older if is_small_talk(e.content, e.context)
                )
            out.answers[budget].append(Answer(ranked=(), block=block, block_tokens=tokens))
    return out


async def _ingest_pipeline(
    dialogue: Dialogue, memory: Memory, clock: SettableClock, out: E2EResult
) -> None:
    """Every turn through ``Runner.run`` on ``Mem01Session``; each chat flushed at its end."""
    model = ReplayModel()
    agent = Agent(name="assistant", instructions="Reply as the other speaker.", model=model)
    for number, session in enumerate(dialogue.sessions):
        for speaker in dialogue.speakers:
            s = Mem01Session(
                dialogue.chat_id(session, speaker), dialogue.user_id(speaker), memory=memory
            )
            try:
                for exchange in chat(session, speaker):
                    clock.now = turn_instant(session, exchange.turn)
                    model.reply = exchange.reply
                    await Runner.run(
                        agent, exchange.turn.text, session=s, run_config=s.run_config()
                    )
                    block = s.last_recall.text if s.last_recall is not None else ""
                    phase = out.runs.setdefault("later" if number else "first", Injection())
                    phase.runs += 1
                    phase.recalled += bool(block)
                    phase.carried += bool(block) and memory_texts(model.last_input) == [block]
                if not await s.flush_memory():
                    out.flush_failures.append(f"{s.session_id}: {s.last_memory_error}")
            finally:
                await s.aclose()


async def _ingest_backfill(
    dialogue: Dialogue, memory: Memory, clock: SettableClock, out: E2EResult
) -> None:
    """The dialogue's chats as an application kept them (the SDK's ``SQLiteSession``, one
    file, each item dated when it was said), then ``backfill`` through ``memory``."""
    with tempfile.TemporaryDirectory(prefix="mem01-e2e-kept-") as folder:
        path = Path(folder) / "kept.sqlite"
        owners: dict[str, str] = {}
        for session in dialogue.sessions:
            for speaker in dialogue.speakers:
                chat_id = dialogue.chat_id(session, speaker)
                owners[chat_id] = dialogue.user_id(speaker)
                kept = SQLiteSession(chat_id, path)
                said = []
                for exchange in chat(session, speaker):
                    reply = {"type": "message", "role": "assistant", "status": "completed",
                             "content": [{"type": "output_text", "text": exchange.reply,
                                          "annotations": []}]}  # fmt: skip
                    await kept.add_items([{"role": "user", "content": exchange.turn.text}, reply])  # type: ignore[list-item]
                    said.append(turn_instant(session, exchange.turn))
                kept.close()
                with sqlite3.connect(path) as conn:
                    ids = [r[0] for r in conn.execute(
                        "SELECT id FROM agent_messages WHERE session_id = ? ORDER BY id",
                        (chat_id,),
                    )]  # fmt: skip
                    for n, item in enumerate(ids):
                        at = said[n // 2].astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
                        conn.execute(
                            "UPDATE agent_messages SET created_at = ? WHERE id = ?", (at, item)
                        )
        clock.now = dialogue.sessions[-1].date + timedelta(days=1)
        await backfill(memory, path, owners)


Ingest = Callable[[Dialogue, Memory, SettableClock, E2EResult], Awaitable[None]]


async def _pipeline(
    server: Server, emb: PrecomputedEmbedder, dialogues: Sequence[Dialogue], out: E2EResult,
    weigh: bool, extractor: Extractor | None, ingest: Ingest | None = None,
) -> None:  # fmt: skip
    """The pipeline's rows; ``weigh``: the text weights' comparison too; ``extractor``: the
    worker's (None: the rule extractor, the offline default); ``ingest``: how the turns
    reach memory (None: through ``Runner.run`` as they happen)."""
    clock = SettableClock()
    url = server.database("e2e_pipeline")
    memory = await open_memory(url, emb, clock=clock, extractor=extractor)
    rows = {name: Row() for name in PIPELINE_ROWS}
    weighed: dict[float, dict[int, list[Answer]]] = {w: {} for w in TEXT_WEIGHTS if weigh}
    try:
        started = time.perf_counter()
        for dialogue in dialogues:
            await (ingest or _ingest_pipeline)(dialogue, memory, clock, out)
        per_turn = (time.perf_counter() - started) / max(out.turns, 1)
        engine = await memory.engine()
        for dialogue in dialogues:
            clock.now = dialogue.sessions[-1].date + timedelta(days=1)
            turns = instants(dialogue)
            provenance = await _provenance(engine, dialogue, turns, out)
            for name, kinds in PIPELINE_ROWS.items():
                got = await _answers(engine, dialogue, turns, provenance, kinds)
                for b in BUDGETS:
                    rows[name].answers.setdefault(b, []).extend(got.answers[b])
                    had = rows[name].quotes.get(b, (0, 0))
                    rows[name].quotes[b] = (had[0] + got.quotes[b][0], had[1] + got.quotes[b][1])
            for weight, answers in weighed.items():
                fusion = Fusion(text_weight=weight)
                got = await _answers(engine, dialogue, turns, provenance, "all", fusion)
                for b in BUDGETS:
                    answers.setdefault(b, []).extend(got.answers[b])
    finally:
        await memory.aclose()
    queries = [q for d in dialogues for q, _ in d.queries]
    out.text_weights = {
        w: {b: summarize(queries, answers[b]).in_block for b in BUDGETS}
        for w, answers in weighed.items()
    }
    beliefs = _stored(url, "beliefs", "status = 'active'")
    episodes = _stored(url, "episodes")
    statuses = _stored(url, "beliefs", by="status")
    out.jobs = _stored(url, "memory_jobs", by="status")
    out.lifecycle[next(iter(PIPELINE_ROWS))] = _stored(url, "belief_events", by="op")
    for row in rows.values():
        row.beliefs, row.episodes, row.ingest_s_per_turn = beliefs, episodes, per_turn
        row.statuses = statuses
    out.rows.update(rows)


def _stored(url: str, table: str, where: str = "true", by: str = "user_id") -> dict[str, int]:
    """Rows per user (or per ``by``) in ``table``."""
    with psycopg.connect(url) as conn:
        sql = f"SELECT {by}, count(*) FROM {table} WHERE {where} GROUP BY {by}"
        return {str(u): int(n) for u, n in conn.execute(sql).fetchall()}


async def _raw(
    server: Server, emb: PrecomputedEmbedder, dialogues: Sequence[Dialogue], out: E2EResult
) -> None:
    """Every turn ADDed as a belief of its speaker's user, observed at the turn's instant."""
    clock = SettableClock()
    url = server.database("e2e_raw")
    memory = await open_memory(url, emb, clock=clock)
    row = out.rows[RAW] = Row()
    try:
        engine = await memory.engine()
        started = time.perf_counter()
        for d in dialogues:
            for session in d.sessions:
                for turn in session.turns:
                    clock.now = turn_instant(session, turn)
                    prov = Provenance(session_id=d.chat_id(session, turn.speaker),
                                      item_ref=turn.dia_id, observed_at=clock.now,
                                      extractor="verbatim")  # fmt: skip
                    await engine.apply(
                        d.user_id(turn.speaker), [Op.add(raw_text(session, turn))], provenance=prov
                    )
        row.ingest_s_per_turn = (time.perf_counter() - started) / max(out.turns, 1)
        for d in dialogues:
            clock.now = d.sessions[-1].date + timedelta(days=1)
            turns = instants(d)
            provenance = await _provenance(engine, d, turns, out)
            got = await _answers(engine, d, turns, provenance, "beliefs")
            for b in BUDGETS:
                row.answers.setdefault(b, []).extend(got.answers[b])
    finally:
        await memory.aclose()
    row.beliefs = _stored(url, "beliefs", "status = 'active'")


def _mem0_row(name: str, got: Mem0Row, out: E2EResult) -> None:
    out.rows[name] = Row(
        answers=got.answers,
        beliefs=got.memories,
        ingest_s_per_turn=got.ingest_s_per_turn,
        returned=got.returned,
    )
    out.lifecycle[name] = got.events


def small_talk_turns(dialogues: Sequence[Dialogue]) -> tuple[int, int]:
    """How many turns the library takes for small talk (each read after the turn before
    it), and how many of those carry a fact LoCoMo's observations name."""
    found = [
        (d, turn)
        for d in dialogues
        for s in d.sessions
        for before, turn in zip((None, *s.turns), s.turns, strict=False)
        if is_small_talk(turn.text, before.text if before is not None else None)
    ]
    return len(found), sum(1 for d, turn in found if turn.dia_id in d.observed)


def stripped(dialogues: list[Dialogue]) -> list[Dialogue]:
    """The questions as every row gets them: without surrounding whitespace."""
    return [
        dataclasses.replace(d, queries=[(q, t.strip()) for q, t in d.queries]) for d in dialogues
    ]


async def run(
    server: Server, emb: PrecomputedEmbedder, folder: Path, log: Path, runs: int = 2,
    extractor: str = "rules",
) -> E2EResult:  # fmt: skip
    """The whole protocol ``runs`` times on fresh databases, with ``extractor`` (one of
    :data:`EXTRACTORS`); the first run's figures, with every run's summaries in
    :attr:`E2EResult.repeats` (to mark what differed)."""
    if extractor not in EXTRACTORS:
        raise ValueError(f"extractor must be one of {', '.join(EXTRACTORS)}, not {extractor!r}")
    set_tracing_disabled(True)
    started = time.perf_counter()
    dialogues = stripped(load_dialogues(folder))
    # Vectors computed up front for what every row embeds as is (the turns as said, as
    # stored verbatim, the questions; what mem0's pipeline embeds): no row's ingest time
    # includes them.
    texts = [t.text for d in dialogues for s in d.sessions for t in s.turns]
    texts += [raw_text(s, t) for d in dialogues for s in d.sessions for t in s.turns]
    if extractor != "rules":
        texts += e2e_mem0.texts_to_embed(dialogues)
    await emb.aprefill(texts + [q for d in dialogues for _, q in d.queries])
    results = [await _one_run(server, emb, dialogues, log, n == 0, extractor) for n in range(runs)]
    out = results[0]
    out.repeats = [{name: row.summaries for name, row in r.rows.items()} for r in results]
    out.seconds = time.perf_counter() - started
    return out


@contextlib.contextmanager
def model_server(extractor: str, dialogues: Sequence[Dialogue]) -> Iterator[ReplayServer | None]:
    """The chat server both systems' extraction calls go to (None: the rule extractor)."""
    if extractor == "rules":
        yield None
        return
    upstream = None
    if extractor == "openai":
        settings = Settings.from_env()
        upstream = Upstream(
            settings.openai_base_url or "https://api.openai.com/v1",
            settings.openai_api_key,
            settings.llm_model,
        )
    with ReplayServer(dialogues, upstream) as server:
        yield server


def model_name(extractor: str) -> str:
    return Settings.from_env().llm_model if extractor == "openai" else REPLAY_MODEL


def _model_extractor(server: ReplayServer, model: str) -> OpenAIExtractor:
    """This library's model extractor, as configured by a user, pointed at ``server``."""
    settings = Settings(openai_base_url=server.url, openai_api_key="bench")
    return OpenAIExtractor(settings, model=model)


async def _one_run(
    server: Server, emb: PrecomputedEmbedder, dialogues: list[Dialogue], log: Path, weigh: bool,
    extractor: str,
) -> E2EResult:  # fmt: skip
    out = E2EResult(extractor=extractor, dialogues=len(dialogues))
    out.observations = sum(len(f) for d in dialogues for f in d.observed.values())
    out.unplaced_observations = sum(d.unplaced_observations for d in dialogues)
    out.unobserved_questions = sum(
        1
        for d in dialogues
        for q, _ in d.queries
        if q.evidence and not q.evidence & d.observed.keys()
    )
    out.small_talk = small_talk_turns(dialogues)
    out.turns = sum(len(s.turns) for d in dialogues for s in d.sessions)
    queries: list[Query] = [q for d in dialogues for q, _ in d.queries if q.evidence]
    out.questions = len(queries)
    for q in queries:
        out.category_counts[q.category] = out.category_counts.get(q.category, 0) + 1
    said = {t.dia_id for d in dialogues for s in d.sessions for t in s.turns}
    out.ceiling = sum(bool(q.evidence & said) for q in queries) / max(len(queries), 1)
    with model_server(extractor, dialogues) as model:
        name = model_name(extractor)
        ours = _model_extractor(model, name) if model is not None else None
        await _pipeline(server, emb, dialogues, out, weigh, ours)
        await _raw(server, emb, dialogues, out)
        try:
            if model is not None:
                llm = e2e_mem0.Model(model.url, name, "bench")
                got = e2e_mem0.llm_pipeline(server, emb, dialogues, log, out.turns, llm)
                _mem0_row(MEM0_LLM, got, out)
            _mem0_row(MEM0, e2e_mem0.raw_messages(server, emb, dialogues, log, out.turns), out)
        except (PeerError, OSError) as exc:
            out.failures["mem0"] = str(exc)
        if model is not None:
            out.usage = dict(model.usage)
    all_queries = [q for d in dialogues for q, _ in d.queries]
    for row in out.rows.values():
        row.summaries = {b: summarize(all_queries, row.answers[b]) for b in BUDGETS}
    return out


@dataclass
class BackfillParity:
    """The pipeline's default row fed live and fed by backfill, in one run."""

    in_block: dict[str, dict[int, float]] = field(default_factory=dict)  # way -> budget -> hit
    seconds_per_turn: dict[str, float] = field(default_factory=dict)
    turns: int = 0
    questions: int = 0
    dialogues: int = 0


async def backfill_parity(server: Server, emb: PrecomputedEmbedder, folder: Path) -> BackfillParity:
    """LoCoMo through ``Runner.run`` as it happens, and the same turns kept first in
    ``SQLiteSession`` files then backfilled: evidence in the block per budget, both ways."""
    set_tracing_disabled(True)
    dialogues = stripped(load_dialogues(folder))
    texts = [t.text for d in dialogues for s in d.sessions for t in s.turns]
    texts += [raw_text(s, t) for d in dialogues for s in d.sessions for t in s.turns]
    await emb.aprefill(texts + [q for d in dialogues for _, q in d.queries])
    out = BackfillParity(dialogues=len(dialogues))
    queries = [q for d in dialogues for q, _ in d.queries]
    out.questions = sum(1 for q in queries if q.evidence)
    for way, ingest in (("live", None), ("backfill", _ingest_backfill)):
        result = E2EResult(dialogues=len(dialogues))
        result.turns = sum(len(s.turns) for d in dialogues for s in d.sessions)
        out.turns = result.turns
        await _pipeline(server, emb, dialogues, result, False, None, ingest)
        row = result.rows["mem01session"]
        out.in_block[way] = {b: summarize(queries, row.answers[b]).in_block for b in BUDGETS}
        out.seconds_per_turn[way] = row.ingest_s_per_turn
    return out
