"""`SqlTx`: every operation the engine performs on its store, as methods of one transaction.

A service never writes SQL: it opens `store.transaction()` (or `store.reading()`) and calls these
methods, so a decision and its audit rows commit together or not at all, on either backend. The
statements are portable (SQLite and PostgreSQL run them as written; `?` placeholders become `$n`
in the PostgreSQL connection) and live in rooms, one module of this package per entity:

- sql/core.py: the connection, the user's write lock, ids, the audit log, `meta`;
- sql/knowledge.py: facts and the vector arm;
- sql/queue.py: candidates, the queue's filter and orders, claims, chains;
- sql/tombstones.py: tombstones, the gate views and duplicates;
- sql/capture.py: messages, episodes, leases, extraction runs, discarded statements;
- sql/context.py: a candidate with what a reviewer is shown beside it;
- sql/text_arm.py, sql/team.py, sql/stats.py, sql/policies.py: the text arm, the team's
  statements, the dashboard's counts, review policies.

`SqlTx` composes them. What only one backend can do (SQLite's FTS5 and sqlite-vec mirror tables,
PostgreSQL's pgvector and tsvector columns, how each hands out ids and claims rows) is declared in
the rooms and written in `engine/storage/sqlite/tx.py` and `engine/storage/postgres/tx.py`.
Services annotate their `tx` with the rooms they use (engine/storage/rooms.py).
"""

from __future__ import annotations

from ..events import Audited
from .capture import CaptureOps
from .conn import SqlConn
from .context import ContextOps
from .core import TxCore
from .guard import guarded
from .knowledge import KnowledgeOps
from .policies import PolicyOps
from .queue import QueueOps
from .stats import StatsOps
from .team import TeamOps
from .text_arm import TextArmOps, _UserStats
from .tombstones import TombstoneOps


class SqlTx(
    ContextOps, KnowledgeOps, QueueOps, TombstoneOps, CaptureOps, TxCore, TextArmOps, TeamOps, StatsOps, PolicyOps
):
    """One transaction (or one consistent read) on a store: the engine's operations on it.

    `conn` is the transaction's connection (`SqlConn`: aiosqlite's cursor API, which the SQLite
    backend passes as it is and the PostgreSQL backend provides over asyncpg). `text_stats` is the
    store's per-connection cache of BM25 statistics (`user_text_stats`). The connection is wrapped
    in the credential guard (sql/guard.py): no write of any room can store a secret."""

    backend = "sql"

    def __init__(self, conn: SqlConn, text_stats: dict[str, _UserStats] | None = None) -> None:
        self.conn = guarded(conn)
        self.events: list[Audited] = []
        self.text_stats: dict[str, _UserStats] = {} if text_stats is None else text_stats
