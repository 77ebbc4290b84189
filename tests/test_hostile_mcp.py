"""Property-based test of the MCP tools (issue 10), through the real MCP client over stdio.

Whatever arguments an agent sends (Unicode with lone surrogates and control characters, sizes
around the limits, huge or negative numbers, wrong types, unknown arguments), each call ends as a
result or as a tool error; the server stays up, never logs a traceback, and a call that errs
changes nothing in the database.

Each hypothesis example is a whole session of calls (starting a server per call would cost a
second each); hypothesis shrinks the list of calls to the one that breaks.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_mcp import session

from engine import DuplicateFactError, Memory
from engine.storage import is_postgres_url
from tests.engine_helpers import sql

# No lone surrogates here: the MCP client serialises its JSON as UTF-8 and cannot send one (the
# library and ingest refuse them; see test_hostile_engine.py and test_hostile_properties.py).
SPECIALS = ["\x1b]2;PWNED\x07", "\x00", "\x9b", "\u2028", "[b]x[/b]", "[@click=app.quit]", "🍵", "Porto"]
text = st.one_of(
    st.lists(st.one_of(st.characters(), st.sampled_from(SPECIALS)), max_size=10).map("".join),
    st.sampled_from([1, 999, 1_000, 1_001, 2_000, 2_001, 20_001]).map(lambda n: "q" * n),
)
numbers = st.one_of(st.integers(min_value=-3, max_value=12), st.sampled_from([0, 2**31, 2**63, 2**70, -(2**70)]))
anything: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), numbers, text, st.floats(allow_nan=True), st.lists(st.integers(), max_size=2)
)


def args(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """The tool's own arguments (each sometimes of a wrong type), sometimes one unknown argument."""
    typed = st.fixed_dictionaries({}, optional={k: st.one_of(v, v, v, anything) for k, v in fields.items()})
    return st.tuples(typed, st.dictionaries(st.sampled_from(["user_id", "extra"]), anything, max_size=1)).map(
        lambda pair: {**pair[0], **pair[1]}
    )


calls = st.one_of(
    st.tuples(st.just("search_memory"), args(query=text, top_k=numbers)),
    st.tuples(st.just("list_memories"), args(include_expired=st.booleans())),
    st.tuples(st.just("propose_memory"), args(statement=text)),
    st.tuples(st.just("forget_memory"), args(knowledge_id=numbers, reason=text)),
)

TABLES = ("knowledge", "candidates", "tombstones", "audit_log", "messages")


async def state(db: Path | str) -> dict[str, list[tuple[Any, ...]]]:
    async with Memory(db) as mem, sql(mem) as conn:
        return {
            t: [tuple(r) for r in await (await conn.execute(f"SELECT * FROM {t} ORDER BY 1")).fetchall()]
            for t in TABLES
        }


async def run_session(db: Path | str, errlog_path: Path, plan: list[tuple[str, dict[str, Any]]]) -> None:
    with errlog_path.open("w+") as errlog:
        async with session(db, "u1", errlog) as client:
            for tool, arguments in plan:
                before = await state(db)
                result = await asyncio.wait_for(client.call_tool(tool, arguments), timeout=60)
                if result.is_error:
                    assert await state(db) == before, (tool, arguments)
            listed = await client.call_tool("list_memories", {})  # the server is still up and answering
            assert not listed.is_error
        errlog.seek(0)
        logged = errlog.read()
    assert "Traceback" not in logged, logged[-3000:]


@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(plan=st.lists(calls, min_size=20, max_size=30))
def test_any_tool_arguments_give_a_result_or_a_tool_error_and_change_nothing_on_error(
    tmp_path: Path, store_target: str, plan: list[tuple[str, dict[str, Any]]]
) -> None:
    # SQLite: a new file per example; PostgreSQL: the test's one database, seeded again per example
    # (each call is checked against the state just before it, so earlier examples do not matter)
    db: Path | str = store_target if is_postgres_url(store_target) else tmp_path / "mcp-hostile.db"
    if isinstance(db, Path):
        db.unlink(missing_ok=True)

    async def seed() -> None:
        async with Memory(db) as mem:
            for user, statement in (("u1", "Lives in Porto near the river"), ("u2", "Keeps three quokkas in Tarnwick")):
                # seeded again per example on PostgreSQL: the gate (I2) refuses the second copy
                with contextlib.suppress(DuplicateFactError):
                    await mem.add_knowledge(user, statement, actor="seed")

    asyncio.run(seed())
    asyncio.run(run_session(db, tmp_path / "server.err", plan))
