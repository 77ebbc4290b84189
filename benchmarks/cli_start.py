"""How long `memdesk search` takes from the shell, and what its interpreter loads.

    uv run python benchmarks/cli_start.py                 # 9 runs of each command, a demo store built once
    uv run python benchmarks/cli_start.py --runs 5 --no-save

Builds a small store (one user, 40 facts) in a temporary directory, then runs the installed console
script as a shell would: `memdesk search DB --user ana QUERY`, `memdesk search --help` (the start
alone: no store, no embedder) and `memdesk stats DB`. For each: the median and the spread of the
wall time and of the CPU time (user + system, which another job on the machine disturbs less),
whether Textual was loaded (it must not be: only `demo`, `review` and `serve` draw), and the ten
packages that cost the most to import (`python -X importtime`, cumulative: `engine` includes what
it imports). Bytecode is written on a first,
untimed run, as on any installed machine; with `PYTHONDONTWRITEBYTECODE=1` every run compiles
everything and the figures are those of a cold interpreter instead.

Prints JSON; writes it to results/cli_start-<date>.json unless --no-save. No assertion: the issue's
target (at most 0.5 s for `memdesk search` on the project's machine) is read from the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MEMDESK = Path(sys.executable).parent / "memdesk"


def _build(db: Path) -> None:
    from engine import Memory

    async def go() -> None:
        async with Memory(db) as mem:
            facts = [f"User's note {i}: Ana keeps {i} beehives in Lisbon" for i in range(40)]
            await mem.add_knowledge_many("ana", facts, actor="bench")

    asyncio.run(go())


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv}: exit {done.returncode}: {done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _imports(args: list[str], env: dict[str, str]) -> tuple[bool, list[str]]:
    code = "import sys\nfrom review_app.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
    code += "print('TEXTUAL', any(m == 'textual' or m.startswith('textual.') for m in sys.modules))\n"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, *args], capture_output=True, text=True, env=env, check=False
    )
    textual = "TEXTUAL True" in done.stdout
    rows: list[tuple[str, float]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
        if cumulative.isdigit() and name and not name.startswith(" "):
            rows.append((name, int(cumulative) / 1e6))
    top = sorted(((n, s) for n, s in rows if "." not in n), key=lambda r: -r[1])[:10]
    return textual, [f"{n} {s:.3f}" for n, s in top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--no-save", action="store_true")
    options = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMDESK_", "OPENAI_"))}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        _build(db)
        commands = {
            "search": ["search", str(db), "--user", "ana", "how", "many", "beehives"],
            "search --help": ["search", "--help"],
            "stats": ["stats", str(db)],
        }
        out: dict[str, Any] = {
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "bytecode": "cold" if env.get("PYTHONDONTWRITEBYTECODE") else "written once, then read",
            "load_average_before": os.getloadavg()[0],
            "commands": {},
        }
        for name, args in commands.items():
            _timed([str(MEMDESK), *args], env)  # writes bytecode, loads the page cache
            walls, cpus = zip(*(_timed([str(MEMDESK), *args], env) for _ in range(options.runs)), strict=True)
            textual, top = _imports(args, env)
            out["commands"][name] = {
                "wall_median_s": round(statistics.median(walls), 3),
                "wall_min_max_s": [round(min(walls), 3), round(max(walls), 3)],
                "cpu_median_s": round(statistics.median(cpus), 3),
                "textual_loaded": textual,
                "costliest_packages_s": top,  # cumulative: a package counts what it imports
            }
        out["load_average_after"] = os.getloadavg()[0]
    text = json.dumps(out, indent=2)
    print(text)
    if not options.no_save:
        results = Path(__file__).parent / "results"
        results.mkdir(exist_ok=True)
        (results / f"cli_start-{datetime.now(UTC).date().isoformat()}.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
