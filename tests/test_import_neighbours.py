"""Imports ask about free text as the other ways in do (issue 26): a statement the claim model
cannot read, near an active fact by the embedder, is added with a "may replace #N" mark naming
that fact, whether the fact was there before the import or came earlier in the same call; an
unrelated statement gets no such mark. Both backends (the vectors are read back from storage)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import HashingEmbedder, Memory
from engine.claims import read_claim
from engine.gate import ImportNeighbours, _nearest
from tests.engine_helpers import sql
from tests.test_concurrency import fixed_clock

BEES = "User keeps bees on the allotment"
CHICKENS = "User keeps chickens on the allotment now"
POSTCARDS = "User collects vintage postcards"


def test_the_pairs_are_free_text() -> None:
    """The premise: the claim model reads none of them, so only the embedder can relate them."""
    assert {read_claim(s).slot for s in (BEES, CHICKENS, POSTCARDS)} == {None}


async def test_a_neighbour_in_the_same_call_is_marked_by_its_real_id(store_target: str) -> None:
    async with Memory(store_target, clock=fixed_clock, embedder=HashingEmbedder()) as mem:
        added = await mem.add_knowledge_many("ana", [BEES, POSTCARDS, CHICKENS], actor="import")
        assert len(added) == 3 and added.skipped == []
        bees_id = added[0].id
        marks = {(index, m.kind, m.target_id) for index, m in added.marked}
        assert (2, "may_replace", bees_id) in marks  # chickens may replace bees, named by its id
        assert not any(index == 1 for index, _, _ in marks)  # control: postcards is near nothing
        # the audit row of the chickens fact says so, with the real id
        async with sql(mem) as conn:
            cur = await conn.execute("SELECT note FROM audit_log WHERE entity_id = ?", (added[2].id,))
            [(note,)] = [tuple(r) for r in await cur.fetchall()]
        assert f"may replace fact #{bees_id}" in str(note) or f"#{bees_id}" in str(note)


async def test_a_fact_from_before_the_import_is_compared_too(store_target: str) -> None:
    async with Memory(store_target, clock=fixed_clock, embedder=HashingEmbedder()) as mem:
        [bees] = await mem.add_knowledge_many("bo", [BEES], actor="import")
        added = await mem.add_knowledge_many("bo", [POSTCARDS, CHICKENS], actor="import")
        assert [(i, m.kind, m.target_id) for i, m in added.marked] == [(1, "may_replace", bees.id)]
        # another user's fact is never a neighbour
        other = await mem.add_knowledge_many("cy", [CHICKENS], actor="import")
        assert other.marked == []


async def test_an_ended_fact_is_not_a_neighbour(store_target: str) -> None:
    async with Memory(store_target, clock=fixed_clock, embedder=HashingEmbedder()) as mem:
        [bees] = await mem.add_knowledge_many("di", [BEES], actor="import")
        await mem.retract("di", bees.id, actor="support", reason="wrong", tombstone=False)
        added = await mem.add_knowledge_many("di", [CHICKENS], actor="import")
        assert added.marked == []


def test_the_index_grows_and_compares_only_vectors_of_its_width() -> None:
    index = ImportNeighbours(similarity=0.5)
    first = index.marks([(-1, BEES), (-2, CHICKENS)], _rows([1.0, 0.0, 0.0], [0.9, 0.1, 0.0]), [set(), set()])
    assert first[0] == () and [m.target_id for m in first[1]] == [-1]
    # a look-alike already marked is not asked about again
    again = index.marks([(-3, "User keeps ducks on the allotment")], _rows([1.0, 0.0, 0.0]), [{-1}])
    assert [m.target_id for m in again[0]] == [-2]
    # below the threshold: no mark (control)
    far = index.marks([(-4, POSTCARDS)], _rows([0.0, 0.0, 1.0]), [set()])
    assert far == [()]
    # another width (a re-embed half done) is compared with nothing
    assert index.marks([(-5, CHICKENS)], _rows([1.0, 0.0]), [set()]) == [()]


def _rows(*vectors: list[float]) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.asarray(vectors, dtype=np.float32)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=1, max_value=12),
    st.integers(min_value=1, max_value=40),
    st.integers(min_value=1, max_value=4),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_each_rows_nearest_are_its_highest_values(rows: int, cols: int, k: int, seed: int) -> None:
    """`_nearest` against sorting each row: the same k highest values (ties included, rounded to a
    few values so that they occur), each named by a column that holds it."""
    sims = np.round(np.random.default_rng(seed).random((rows, cols), dtype=np.float32), 1)
    where, values = _nearest(sims.copy(), k, offset=100)
    expected = -np.sort(-sims, axis=1)[:, :k]
    assert np.array_equal(-np.sort(-values, axis=1), expected)
    assert np.array_equal(np.take_along_axis(sims, where - 100, axis=1), values)
    assert all(len(set(row)) == len(row) for row in where.tolist())
