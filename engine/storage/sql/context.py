"""`ContextOps`: what a reviewer is shown beside one candidate (its episode and messages, the
prediction and the facts the extractor was shown, the fact it would replace): a read across the
knowledge, queue and capture rooms, so it stands in a room of its own that names all three.
"""

from __future__ import annotations

import json
from typing import Protocol

from ...errors import NotFoundError
from ...extraction.base import mark_ended_facts, pending_record
from ...models import (
    Candidate,
    CandidateContext,
)
from .capture import CaptureOps
from .knowledge import KnowledgeOps
from .queue import QueueOps


class ContextOps(KnowledgeOps, QueueOps, CaptureOps, Protocol):
    """A candidate with its context."""

    async def candidate_context(self, cand: Candidate) -> CandidateContext:
        ctx = CandidateContext(candidate=cand)
        if cand.run_id is not None:
            run = await (
                await self.conn.execute(
                    "SELECT prediction, mode, existing_ids FROM extraction_runs WHERE id = ?", (cand.run_id,)
                )
            ).fetchone()
            if run is not None:
                ctx.prediction, ctx.mode = run[0], run[1]
                ids = [int(i) for i in json.loads(run[2] or "[]")]
                found = await self.knowledge_by_ids([i for i in ids if i > 0])
                # Negative ids are the pending candidates the extractor was shown (extraction.base):
                # one still pending is shown as such, one approved since as the fact it became.
                for i in ids:
                    if i < 0:
                        try:
                            shown = await self.get_candidate(-i, cand.user_id)
                        except NotFoundError:
                            continue
                        if shown.status == "pending":
                            found[i] = pending_record(shown)
                        elif shown.knowledge_id is not None:
                            found.update(await self.knowledge_by_ids([shown.knowledge_id]))
                            ids[ids.index(i)] = shown.knowledge_id
                ctx.existing = [found[i] for i in ids if i in found and found[i].user_id == cand.user_id]
                ctx.prediction = mark_ended_facts(ctx.prediction, ctx.existing)
        if cand.episode_id is not None:
            ctx.episode = await self.episode_with_messages(cand.episode_id)
            if ctx.episode is not None:
                ctx.messages = ctx.episode.messages
        if cand.supersedes_id is not None:
            try:
                ctx.superseded = await self.get_knowledge(cand.user_id, cand.supersedes_id)
            except NotFoundError:
                ctx.superseded = None
        return ctx
