"""One claimed job, from its turn to its write.

The turn's words and the user's candidates embedded (with what other jobs in flight ask
for, :class:`~.vectors.VectorBatch`), the user's most relevant and keyed beliefs shown to
the extractor under aliases, the ops it proposes screened (secrets out, whichever extractor
proposed them), then the turn's ops, episodes and completion handed to the group commit.
Before reading the candidates and before the write, the steps give way to the runs of this
process (:mod:`.foreground`). The worker (:mod:`.worker`) decides which jobs run and when.
"""

from __future__ import annotations

import asyncio

from ..embeddings import Vector
from ..engine import BeliefEngine
from ..engine.ops import Provenance, resolve_aliases
from ..engine.records import RecallRequest
from ..engine.small_talk import is_small_talk
from ..extraction.base import WAITING_AFTER, Candidate, Extraction, Extractor, Turn
from ..extraction.hygiene import screen
from ..logs import get_logger
from ..spans import job_note, op_kinds
from .carried_vectors import carried
from .completion import JobLostError
from .failed_jobs import Failures, utterances
from .foreground import FOREGROUND
from .group_commit import GroupCommit, Ready
from .job_records import Job
from .job_store import JobStore
from .policy import WorkerPolicy
from .vector_batch import VectorBatch

log = get_logger(__name__)


class JobProcessor:
    """The steps of one job, for a worker (``worker_id``) and its extractor."""

    def __init__(
        self,
        engine: BeliefEngine,
        extractor: Extractor,
        policy: WorkerPolicy,
        *,
        worker_id: str,
        extract_timeout: float,
        jobs: JobStore,
        commits: GroupCommit,
        failures: Failures,
    ) -> None:
        self.engine = engine
        self.extractor = extractor
        self.policy = policy
        self.worker_id = worker_id
        self.extract_timeout = extract_timeout
        self.jobs = jobs
        self.commits = commits
        self.failures = failures
        self._vectors = VectorBatch(engine.embedder)
        self.processed = 0
        self.gave_way_s = 0.0
        """Seconds spent waiting for the runs of this process (:mod:`.foreground`)."""

    async def give_way(self, job: Job | None = None) -> None:
        """Before a step: wait while a run of this process recalls or enqueues, at most
        ``yield_to_runs`` seconds, and for a job's step only until its turn was queued
        that long ago: giving way delays no turn's extraction by more than that."""
        limit = self.policy.yield_to_runs
        if job is not None:  # a clock behind the enqueuer's does not lengthen the wait
            limit -= max(0.0, (self.engine.clock() - job.created_at).total_seconds())
        self.gave_way_s += await FOREGROUND.give_way(limit)

    async def process(self, job: Job) -> None:
        """Extract ``job``'s turn and write what it yields (a failure is recorded)."""
        try:
            turn = job.turn()
            said = utterances(turn)
            query = " ".join(m.text for m in turn.messages if m.role == "user")
            kept = self.engine.episode_texts(said)
            vectors = self._carried(job, [query, *kept])
            vectors |= await self._vectors.embed(t for t in [query, *kept] if t not in vectors)
            await self.give_way(job)
            aliases: dict[str, int] = {}
            if self.policy.skip_small_talk and states_nothing(turn):
                extraction = SMALL_TALK
            else:
                candidates, aliases = await self._candidates(job.user_id, query, vectors.get(query))
                extraction = await self._extract(turn, candidates)
            # Whichever extractor proposed them: secrets out, text clean (see hygiene.py).
            screened = screen(extraction.ops)
            notes = extraction.notes + screened.notes
            ops = resolve_aliases(screened.ops, aliases)
            job_note(ops=len(ops), kinds=op_kinds([op.op for op in ops]))
            now = self.engine.clock()
            if not ops and not kept:
                await self.jobs.complete_without_ops(
                    job, self.worker_id, now=now, usage=extraction.usage, notes=notes
                )
            else:
                statements = [op.content for op in ops if op.content and op.op != "INVALIDATE"]
                if statements:
                    vectors = vectors | await self._vectors.embed(statements)
                first_ref = next((m.item_ref for m in turn.messages if m.role == "user"), None)
                batch = await self.engine.prepare(
                    job.user_id,
                    ops,
                    provenance=Provenance(
                        session_id=job.session_id,
                        item_ref=first_ref,
                        observed_at=turn.observed_at,
                        extractor=self.extractor.name,
                        job_id=job.id,
                    ),
                    utterances=said,
                    vectors=vectors,
                )
                # The turn's ops, its episodes and the job's completion: one transaction,
                # shared with other users' turns ready at the same time (.group_commit).
                await self.give_way(job)
                await self.commits.write(Ready(job, batch, extraction.usage, notes))
            self.processed += 1
            job_note(outcome="done")
        except JobLostError:
            job_note(outcome="lost")
            log.info("job %s was erased or reclaimed; dropping it", job.id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self.failures.fail(job, exc)

    async def _extract(self, turn: Turn, candidates: list[Candidate]) -> Extraction:
        # The extractor's "now" is when the turn was said: "yesterday" is the day before
        # that, however late the job runs (after an outage, or a backfill of old turns).
        said = turn.observed_at
        WAITING_AFTER.set(None)
        try:
            async with asyncio.timeout(self.extract_timeout):
                return await self.extractor.extract(turn, candidates, said)
        except TimeoutError:
            waiting = WAITING_AFTER.get()
            why = f"; it was waiting to try again after: {waiting}" if waiting else ""
            raise TimeoutError(
                f"the extraction did not finish within {self.extract_timeout:g} s "
                f"(MEM01_LLM_TIMEOUT){why}"
            ) from None

    def _carried(self, job: Job, texts: list[str]) -> dict[str, Vector]:
        """The vectors of ``texts`` the job carries from its run (:mod:`.carried`)."""
        embedder = self.engine.embedder
        have = carried(job.payload, embedder.name, embedder.dim)
        return {t: have[t] for t in texts if t in have}

    async def _candidates(
        self, user_id: str, query: str, vector: Vector | None
    ) -> tuple[list[Candidate], dict[str, int]]:
        """The most relevant active beliefs plus every keyed one, under aliases b1, b2…"""
        request = RecallRequest(query)
        searching = self.engine.search(
            user_id, request, limit=self.policy.candidates, vector=vector, sources=False
        )
        if self.policy.keyed:
            scored, keyed = await asyncio.gather(
                searching, self.engine.keyed(user_id, limit=self.policy.keyed)
            )
        else:
            scored, keyed = await searching, []
        found = [sb.belief for sb in scored]
        seen = {b.id for b in found}
        found += [b for b in keyed if b.id not in seen]
        candidates = [
            Candidate(alias=f"b{i}", content=b.content, key=b.key, valid_from=b.valid_from)
            for i, b in enumerate(found, start=1)
        ]
        return candidates, {c.alias: b.id for c, b in zip(candidates, found, strict=True)}


SMALL_TALK = Extraction(ops=(), notes=("small talk: not sent to the extractor",))


def states_nothing(turn: Turn) -> bool:
    """Whether the user's words in ``turn`` are small talk (:mod:`~..engine.small_talk`)
    answering no question: nothing to extract from them."""
    said = [m.text for m in turn.messages if m.role == "user"]
    return bool(said) and all(is_small_talk(text, turn.before) for text in said)


__all__ = ["JobProcessor", "states_nothing"]
