"""Embedding the texts of the jobs a worker runs at once, in one call.

Each job needs vectors for its query (the user's words, which pick the candidate beliefs
shown to the extractor), its episodes' passages, and the statements its extractor
proposed. Asked one job at a time, that is two or three calls per job: a round trip each
to an embedding server, or one inference each of the local model, which costs less per
text in a batch. So the jobs in flight ask a :class:`VectorBatch`, which gathers what
they ask for while the event loop runs the ready tasks, and embeds it all in one call
(the same text once: a short message's query and its passage are one text).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from ..embeddings import Embedder, Vector

Vectors = dict[str, Vector]


class VectorBatch:
    """Gathers the texts asked for in one turn of the event loop; embeds them in one call.

    Used on one event loop (the worker's). If the embedder fails, every caller of that
    call gets its exception.
    """

    def __init__(self, embedder: Embedder, *, max_texts: int = 256) -> None:
        self.embedder = embedder
        self.max_texts = max_texts
        self._asked: list[tuple[list[str], asyncio.Future[Vectors]]] = []
        self._scheduled = False
        self._running: set[asyncio.Task[None]] = set()
        self.calls = 0  # embedder calls made (for tests and benchmarks)

    async def embed(self, texts: Iterable[str]) -> Vectors:
        """Vectors of ``texts`` (empty texts are skipped), embedded with whatever else the
        jobs in flight ask for now."""
        wanted = [t for t in dict.fromkeys(texts) if t]
        if not wanted:
            return {}
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Vectors] = loop.create_future()
        self._asked.append((wanted, answer))
        if not self._scheduled:
            self._scheduled = True
            # After the callbacks already ready: the other jobs resumed in this turn of
            # the loop add their texts first.
            loop.call_soon(self._flush)
        return await answer

    def _flush(self) -> None:
        self._scheduled = False
        asked, self._asked = self._asked, []
        asked = [(texts, answer) for texts, answer in asked if not answer.done()]
        if not asked:
            return
        task = asyncio.get_running_loop().create_task(self._embed(asked))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _embed(self, asked: list[tuple[list[str], asyncio.Future[Vectors]]]) -> None:
        texts = list(dict.fromkeys(t for wanted, _ in asked for t in wanted))
        try:
            found: Vectors = {}
            for start in range(0, len(texts), self.max_texts):
                chunk = texts[start : start + self.max_texts]
                self.calls += 1
                vectors = await self.embedder.embed(chunk)
                if len(vectors) != len(chunk):
                    raise RuntimeError(
                        f"embedder returned {len(vectors)} vectors for {len(chunk)} texts"
                    )
                found.update(zip(chunk, vectors, strict=True))
        except asyncio.CancelledError:
            for _, answer in asked:
                answer.cancel()
            raise
        except Exception as exc:
            for _, answer in asked:
                if not answer.done():
                    answer.set_exception(exc)
            return
        for wanted, answer in asked:
            if not answer.done():
                answer.set_result({t: found[t] for t in wanted})


__all__ = ["VectorBatch", "Vectors"]
