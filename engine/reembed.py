"""Moving a store to another embedder (`memdesk reembed DB [--embedder NAME]`).

A database's vectors are only comparable with query vectors of the same model, so the store records
which embedder built them (meta `embedder`, `embedding_dimensions`) and `Memory` refuses another
one. This module re-embeds every fact, whatever its status (active, superseded, retracted: an
as-of query reads them all), from the statements stored in `knowledge`.

How it survives an interruption (Ctrl-C, a kill, a power cut):
- The new vectors go to a plain staging table, `reembed_staging` (knowledge_id -> float32 blob),
  one transaction per batch, each also writing meta `reembed_last_id`. The live vector table is
  untouched meanwhile, so the store keeps answering with its old embedder while a reembed is
  half done, and a batch is either staged whole or not at all.
- meta `reembed_target` ("name:dimensions") says which embedder the staged vectors come from. Running
  again with the same target resumes after `reembed_last_id`; with another target the staged
  vectors are discarded and it starts over.
- The switch is one transaction: the facts still without a staged vector (written, or given a
  reused id, after their turn) are embedded in it, the vec0 table is re-created at the new width
  (its width is fixed at creation: `schema.create_vec_table`) and filled from the staged vectors
  and the old rows' metadata (user, status, time bounds), meta names the new embedder, the
  staging table is dropped, and ONE audit row records the move.
- Staged rows reference `knowledge(id) ON DELETE CASCADE`: erasing a user midway removes their
  staged vectors with their facts.

The audit row is operational and store-wide: action `reembed`, entity `store`, no entity id, and
`user_id` '' (no user; user ids are never empty), with the old and new embedder in before/after.

Run it while nothing else writes to the store: a process that opened the store before the switch
still holds the old embedder and would write vectors of the old width into the new table.
"""

from __future__ import annotations

from collections.abc import Callable

from .embedders import Embedder
from .memory import Memory
from .models import ReembedReport
from .storage.sql.reembed import reembed_store
from .timeutil import to_us

DEFAULT_BATCH = 256
Progress = Callable[[int, int], None]


async def reembed(
    path: str,
    embedder: Embedder,
    *,
    actor: str,
    batch_size: int = DEFAULT_BATCH,
    progress: Progress | None = None,
) -> ReembedReport:
    """Re-embed every fact of the store at `path` with `embedder`, resuming an interrupted run."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    mem = Memory(path, embedder=embedder)
    await mem.open(check_embedder=False)
    try:
        return await reembed_store(
            mem.store,
            mem.store.vector_swap(),
            embedder,
            actor=actor,
            now=lambda: to_us(mem.now()),
            batch_size=batch_size,
            progress=progress,
        )
    finally:
        await mem.close()
