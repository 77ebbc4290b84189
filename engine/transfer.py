"""Copying a whole store to another backend (`memdesk migrate SRC DST`).

A team that outgrows the single SQLite file moves to PostgreSQL, and a PostgreSQL store can come
back to a file (for a laptop, a bug report, an archive). The copy goes through the `Store` seam
only (`dump` / `load` / `counts`), so it works between any two backends, and keeps everything a
store holds: messages, episodes, extraction runs, candidates, facts with every version, interval
and vector, tombstones, what the gates discarded, the team tables and the audit log, each row with
its id, so audit rows, `superseded_by` chains and the ids reviewers wrote down stay true.

The rules:
- The destination must be empty (no row in any table but `meta`): copying into a store that
  already holds rows would merge two histories under colliding ids. It is refused before anything
  is written, with `UserInputError` (exit 2 from the CLI).
- The destination is opened with the source's embedding width, so the copied vectors fit its
  vector column and the source's embedder name comes along in `meta`.
- A store with an interrupted `memdesk reembed` is refused: its staged vectors live in a table
  the copy does not carry; resume the reembed first.
- After the copy both sides are counted and checksummed (rows, max id, sum of ids per table)
  and every copied row is compared with its source row through a digest of the whole table, so
  a type that does not round-trip (a float narrowed, a time shifted) fails the copy loudly
  (`TransferError`), naming the first row and column that differ.

All or nothing: before the first row, the destination's `meta` gets `migrate_incomplete` (naming
the source); it is deleted only once the verification has passed. Until then every command and
`Memory` refuse to open the destination (IncompleteStoreError, naming how to restart), so a copy
killed half way is never taken for a store whose next ids would be other rows' ids in the source.
Running migrate again into such a destination starts the copy over: a SQLite file is made anew,
a PostgreSQL database has its memdesk tables emptied (`clear_copy`).

Run it while nothing writes to the source: a row written mid-copy is either missed or copied,
and the verification then fails rather than report a copy that is not one.
"""

from __future__ import annotations

import hashlib
import json
import time
from array import array
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import MemdeskError, UserInputError
from .storage import MIGRATE_INCOMPLETE, Store, inspect, is_postgres_url, masked, open_store
from .storage.base import TABLES

Progress = Callable[[int, int], None]
DEFAULT_BATCH = 1000

# The order the copy loads tables in: a table after the tables its rows name, where that is
# possible (candidates and facts name each other; the stores defer those checks), and the audit
# log last, so each id counter can be moved past every id the log names.
COPY_ORDER: tuple[str, ...] = (
    "meta",
    "episodes",
    "messages",
    "extraction_runs",
    "candidates",
    "knowledge",
    "tombstones",
    "discarded",
    "flags",
    "second_reviews",
    "assignments",
    "audit_log",
)
assert sorted(COPY_ORDER) == sorted(TABLES), "COPY_ORDER must name every logical table once"

# meta keys that belong to one store, not to its contents: an interrupted reembed (its staged
# vectors are in a table of the source only) must be finished before a copy.
_REEMBED_KEYS = ("reembed_target", "reembed_last_id")


class TransferError(MemdeskError):
    """The copy could not be verified: the destination does not hold what the source holds."""


@dataclass(frozen=True, slots=True)
class TableCopy:
    table: str
    source_rows: int
    copied: int
    destination_rows: int
    max_id: int
    id_sum: int


@dataclass(frozen=True, slots=True)
class TransferReport:
    source: str
    destination: str
    tables: list[TableCopy] = field(default_factory=list)
    seconds: float = 0.0
    settled: bool = True
    """False when the destination's statistics could not be refreshed (`Store.settle()`: on
    PostgreSQL, VACUUM ANALYZE needs the owner); the copy is complete either way."""

    @property
    def rows(self) -> int:
        return sum(t.copied for t in self.tables)


async def copy_store(
    source: str,
    destination: str,
    *,
    batch: int = DEFAULT_BATCH,
    progress: Progress | None = None,
) -> TransferReport:
    """Copy every row of the store at `source` into the empty store at `destination` (a path or a
    postgresql:// URL each), then verify the copy; see the module docstring for the rules."""
    if batch < 1:
        raise UserInputError("the batch size must be at least 1")
    started = time.perf_counter()
    # refused before anything is opened: opening would create (and write) a store at a typo
    exists, version = await inspect(source)
    if not exists or version == 0:
        raise UserInputError(f"{masked(source)}: {'no such database' if not exists else 'holds no memdesk store'}")
    # `dimensions` and `embedder` describe a NEW store only; the source has its own
    src = await open_store(source, dimensions=1, embedder="none")
    try:
        meta = {str(r["key"]): str(r["value"]) async for rows in src.dump("meta") for r in rows}
        pending = [k for k in _REEMBED_KEYS if k in meta]
        if pending:
            raise UserInputError(
                f"{src.target} has an interrupted `memdesk reembed` (meta {', '.join(pending)}): run"
                " `memdesk reembed` on it to finish the move first, then migrate"
            )
        width = meta.get("embedding_dimensions")
        if width is None:
            raise UserInputError(f"{src.target} records no embedding width: is it a memdesk store?")
        dst = await _open_destination(destination, int(width), meta.get("embedder", "hashing"))
        try:
            return await _copy(src, dst, meta, batch=batch, progress=progress, started=started)
        finally:
            await dst.close()
    finally:
        await src.close()


async def _open_destination(destination: str, width: int, embedder: str) -> Store:
    """The destination, emptied first when an interrupted migrate left it incomplete."""
    dst = await open_store(destination, dimensions=width, embedder=embedder, allow_incomplete=True)
    async with dst.reading() as tx:
        incomplete = await tx.meta_value(MIGRATE_INCOMPLETE)
    if incomplete is None:
        return dst
    if is_postgres_url(destination):
        from .storage.postgres.store import PostgresStore

        assert isinstance(dst, PostgresStore)
        await dst.clear_copy()
        return dst
    await dst.close()
    for suffix in ("", "-wal", "-shm"):  # a file of our own making: made anew
        Path(f"{destination}{suffix}").unlink(missing_ok=True)
    return await open_store(destination, dimensions=width, embedder=embedder)


async def _copy(
    src: Store,
    dst: Store,
    meta: dict[str, str],
    *,
    batch: int,
    progress: Progress | None,
    started: float,
) -> TransferReport:
    if src.target == dst.target:
        raise UserInputError(f"the source and the destination are the same store ({src.target})")
    if not await dst.is_empty():
        held = {t: n for t, n in (await dst.counts()).items() if n and t != "meta"}
        listed = ", ".join(f"{t} {n}" for t, n in held.items())
        raise UserInputError(
            f"{dst.target} is not empty ({listed}); migrate copies into an empty store only, so that no"
            " two histories share ids: give a new file or an empty database"
        )
    dst_meta = {str(r["key"]): str(r["value"]) async for rows in dst.dump("meta") for r in rows}
    if dst_meta.get("embedding_dimensions", meta["embedding_dimensions"]) != meta["embedding_dimensions"]:
        raise UserInputError(
            f"{dst.target} was created for {dst_meta['embedding_dimensions']}-dimensional vectors and"
            f" {src.target} holds {meta['embedding_dimensions']}-dimensional ones: give an empty database"
        )
    async with dst.transaction() as tx:  # before the first row: refused by every opener until verified
        await tx.set_meta(MIGRATE_INCOMPLETE, masked(src.target))
    expected = await src.counts()
    # the bar counts every row twice: once copied, once read back from the destination to verify it
    rows_total = sum(expected.values())
    total = 2 * rows_total
    done = 0
    if progress is not None:
        progress(0, total)
    digests: dict[str, str] = {}
    copied: dict[str, tuple[int, int, int]] = {}
    for table in COPY_ORDER:
        digest = hashlib.blake2b(digest_size=16)
        n = max_id = id_sum = 0
        async for rows in src.dump(table, batch=batch):
            try:
                await dst.load(table, rows)
            except MemdeskError:
                raise
            except Exception as exc:  # a driver's error: say what state the destination is in
                raise TransferError(
                    f"the copy stopped in table {table} after {done} of {rows_total} rows: {exc}\n"
                    f"{dst.target} holds a partial copy: empty it (or delete the file) and run migrate again"
                ) from exc
            for row in rows:
                digest.update(_canonical(row))
            n += len(rows)
            if table != "meta":
                ids = [int(r["id"]) for r in rows]
                max_id, id_sum = max(max_id, *ids), id_sum + sum(ids)
            done += len(rows)
            if progress is not None:
                progress(done, max(total, done))
        digests[table] = digest.hexdigest()
        copied[table] = (n, max_id, id_sum)
    settled = await dst.settle()  # statistics and visibility for the copied rows, before anyone reads them
    tick = None if progress is None else (lambda n: progress(done + n, max(total, done + n)))
    tables = await _verify(src, dst, expected, copied, digests, batch=batch, tick=tick)
    async with dst.transaction() as tx:
        await tx.conn.execute("DELETE FROM meta WHERE key = ?", (MIGRATE_INCOMPLETE,))
    if progress is not None:
        progress(total, total)
    return TransferReport(src.target, dst.target, tables, round(time.perf_counter() - started, 2), settled)


def _canonical(row: dict[str, Any]) -> bytes:
    """One row as bytes that are equal exactly when the values are (types included: 1 != 1.0
    != "1"), whichever backend produced it. A fact's embedding goes in as its doubles' bytes
    (exact, and fifty times faster than writing 256 floats as JSON text)."""
    plain = {k: [type(v).__name__, v] for k, v in row.items() if k != "embedding"}
    out = json.dumps(plain, sort_keys=True, separators=(",", ":")).encode("utf-8")
    if "embedding" in row:
        out += b"|" + array("d", row["embedding"]).tobytes()
    return out + b"\n"


async def _id_stats(store: Store, table: str) -> tuple[int, int, int]:
    async with store.reading() as tx:
        cur = await tx.conn.execute(f"SELECT count(*), coalesce(max(id), 0), coalesce(sum(id), 0) FROM {table}")
        row = await cur.fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


async def _verify(
    src: Store,
    dst: Store,
    expected: dict[str, int],
    copied: dict[str, tuple[int, int, int]],
    digests: dict[str, str],
    *,
    batch: int,
    tick: Callable[[int], None] | None = None,
) -> list[TableCopy]:
    """Counts, id checksums and row digests on both sides; TransferError naming what differs.
    `tick(rows read back so far)` feeds the progress bar."""
    src_counts, dst_counts = await src.counts(), await dst.counts()
    read = 0
    problems: list[str] = []
    tables: list[TableCopy] = []
    for table in COPY_ORDER:
        n, max_id, id_sum = copied[table]
        if table == "meta":
            dst_meta = {r["key"]: r["value"] async for rows in dst.dump("meta") for r in rows}
            src_meta = {r["key"]: r["value"] async for rows in src.dump("meta") for r in rows}
            lost = {k: v for k, v in src_meta.items() if dst_meta.get(k) != v}
            if lost:
                problems.append(f"meta: {sorted(lost)} differ in the destination")
            tables.append(TableCopy(table, src_counts[table], n, dst_counts[table], 0, 0))
            continue
        if not src_counts[table] == expected[table] == n:
            problems.append(
                f"{table}: the source held {expected[table]} rows when the copy started, {n} were read and"
                f" it holds {src_counts[table]} now (did something write to it during the copy?)"
            )
        src_ids, dst_ids = await _id_stats(src, table), await _id_stats(dst, table)
        if src_ids != (n, max_id, id_sum) or dst_ids != src_ids:
            problems.append(
                f"{table}: (rows, max id, sum of ids) source {src_ids}, copied {(n, max_id, id_sum)},"
                f" destination {dst_ids}"
            )
        else:
            digest = hashlib.blake2b(digest_size=16)
            async for rows in dst.dump(table, batch=batch):
                for row in rows:
                    digest.update(_canonical(row))
                read += len(rows)
                if tick is not None:
                    tick(read)
            if digest.hexdigest() != digests[table]:
                problems.append(f"{table}: {await _first_difference(src, dst, table, batch)}")
        tables.append(TableCopy(table, src_counts[table], n, dst_counts[table], max_id, id_sum))
    if problems:
        raise TransferError(
            f"the copy in {dst.target} does not match {src.target}:\n  "
            + "\n  ".join(problems)
            + f"\nDo not use {dst.target}: empty it (or delete the file) and run migrate again."
        )
    return tables


async def _rows(store: Store, table: str, batch: int) -> AsyncIterator[dict[str, Any]]:
    async for rows in store.dump(table, batch=batch):
        for row in rows:
            yield row


async def _first_difference(src: Store, dst: Store, table: str, batch: int) -> str:
    """Where two tables with the same ids first differ: the row id and the column, both values.
    Both tables are read side by side, a batch at a time (a table of facts with their vectors does
    not fit in memory whole)."""
    left, right = _rows(src, table, batch), _rows(dst, table, batch)
    while True:
        a = await anext(left, None)
        b = await anext(right, None)
        if a is None or b is None:
            return "the rows differ" if a is b else f"row {(a or b or {}).get('id')} is on one side only"
        if _canonical(a) != _canonical(b):
            for column in sorted(set(a) | set(b)):
                va, vb = a.get(column), b.get(column)
                if type(va) is not type(vb) or va != vb:
                    return f"row {a.get('id')} column {column}: source {_short(va)}, destination {_short(vb)}"
            return f"row {a.get('id')} differs"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
