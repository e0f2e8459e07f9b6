"""The runtime benchmark: our Environment runtime next to the AWM serving design, measured in one run.

Same environment on both sides (a catalog bundle: schema.sql, seed rows, tools.py), same read tool,
same query. Ours: `Environment.open` / `session.call` / `session.reset` over pooled sandbox workers.
Baseline (benchmarks.awm_baseline): FastAPI app + MCP streamable HTTP, one server process per
instance, a new MCP session per call as AWM's agent loop does, reset = rebuild the file from SQL.

"One core": the harness pins itself to one CPU before it starts the 1-worker pool (or the baseline
server); children inherit the affinity, so client and server share that core on both sides.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, Field

from benchmarks.awm_baseline.instance import REPO_ROOT, AwmInstance, ReusedSession, call_fresh
from benchmarks.mcp_load import LoadResult, McpSession, open_idle_sessions, run_async, run_load
from benchmarks.measure import (
    Memory,
    machine_info,
    median,
    memory_of,
    pinned_to_one_core,
    process_tree,
    rates,
    timed_ms,
)
from factory.envs.build import build_env
from factory.envs.bundle import SEED_SQLITE, Bundle
from factory.envs.runtime import Environment
from factory.envs.state import build_seed_db, read_sqlite_state
from factory.mining.procedural import generate_rows
from factory.models import EntitySpec
from factory.naming import format_id
from factory.sandbox import SandboxPool
from factory.store import write_bytes_atomic


class RuntimeBenchConfig(BaseModel):
    """Sizes of one run; `quick()` is the smoke-test size."""

    topic: str = "online-shop"
    new_env_topics: list[str] = Field(default_factory=lambda: ["issue-tracker", "retail-banking", "flight-booking"])
    calls: int = 10_000
    raw_calls: int = 50_000
    repeats: int = 5
    baseline_fresh_calls: int = 60
    baseline_reused_calls: int = 600
    reset_db_mb: float = 5.0
    resets: int = 300
    baseline_resets: int = 5
    sessions: int = 1000
    baseline_starts: int = 3
    cpu: int | None = None  # the core to pin to; default: the highest one allowed
    mcp_sessions: list[int] = Field(default_factory=lambda: [100, 1000])
    mcp_calls: int = 6000  # per load, spread over its sessions (at least 2 calls each)
    baseline_mcp_sessions: int = 100
    mcp_rounds: int = 3  # loads at baseline_mcp_sessions, ours and the baseline's alternating; the best of each
    mcp_idle_sessions: int = 500
    mcp_cores: int = 2  # server(s) and load generator share this many cores, as on a 2-core machine

    @classmethod
    def quick(cls) -> RuntimeBenchConfig:
        return cls(
            new_env_topics=["issue-tracker"],
            calls=300,
            raw_calls=2000,
            repeats=1,
            baseline_fresh_calls=3,
            baseline_reused_calls=20,
            reset_db_mb=0.3,
            resets=20,
            baseline_resets=2,
            sessions=20,
            baseline_starts=1,
            mcp_sessions=[5, 20],
            mcp_calls=100,
            baseline_mcp_sessions=5,
            mcp_rounds=2,
            mcp_idle_sessions=10,
        )


class ReadProbe(BaseModel):
    """The read tool every side calls, its arguments, and the query the tool runs for them."""

    tool: str
    args: dict[str, Any]
    sql: str
    params: list[Any]


def read_probe(bundle_dir: Path, entity_name: str | None = None, key: Any = None) -> ReadProbe:
    """The bundle's first `get` tool (of `entity_name`, when given) for `key` (default: the first row's)."""
    bundle = Bundle.open(bundle_dir)
    spec = bundle.spec
    entities = {e.name: e for e in spec.entities}
    for tool in spec.tools:
        op = tool.operation
        if op is None or op.kind != "get" or op.entity not in entities or entity_name not in (None, op.entity):
            continue
        entity = entities[op.entity]
        param = tool.parameters.get("required", [f"{entity.name}_id"])[0]
        if key is None:
            key = read_sqlite_state(bundle.seed_bytes(), spec.entities)[entity.table][0][entity.primary_key]
        pk = entity.primary_key
        sql = f'SELECT * FROM "{entity.table}" WHERE "{pk}" = ? ORDER BY "{pk}"'
        return ReadProbe(tool=tool.name, args={param: key}, sql=sql, params=[key])
    raise ValueError(f"{bundle_dir}: no `get` tool to benchmark")


class WriteProbe(BaseModel):
    """A successful `update` from the bundle's tests.json, and the `get` that shows whether it is in the state."""

    tool: str
    args: dict[str, Any]
    check: ReadProbe


def write_probe(bundle_dir: Path) -> WriteProbe:
    """Something to undo before every timed reset, so a reset never restores an unchanged state."""
    bundle = Bundle.open(bundle_dir)
    tools = {t.name: t for t in bundle.spec.tools}
    for case in bundle.tests():
        op = tools[case.tool].operation if case.tool in tools else None
        if op is None or op.kind != "update" or not case.expect.ok:
            continue
        key_param = f"{op.entity}_id"
        if key_param in case.args:
            check = read_probe(bundle_dir, op.entity, case.args[key_param])
            return WriteProbe(tool=case.tool, args=case.args, check=check)
    raise ValueError(f"{bundle_dir}: no successful `update` case in tests.json")


# --- a bigger database ---------------------------------------------------------------------------


def scale_bundle(src: Path, dst: Path, target_mb: float, base_scale: float = 10.0) -> float:
    """Copy a bundle and grow its seed database to about `target_mb` MB; returns the size reached.

    Rows come from the procedural miner at `base_scale`, then are replicated with fresh keys (ids
    continue each entity's numbering; foreign keys follow their parent's copy; unique values get a
    copy prefix), which is much faster than mining 40k rows with unique-value checks.
    """
    shutil.copytree(src, dst)
    spec = Bundle.open(dst).spec
    base = generate_rows(spec.entities, spec.seed, scale=base_scale)
    copies = max(1, round(target_mb / (len(build_seed_db(spec.entities, base)) / 1e6)))
    image = build_seed_db(spec.entities, replicate_rows(spec.entities, base, copies))
    better = max(1, round(copies * target_mb / (len(image) / 1e6)))  # the first guess ignores fixed page overhead
    if better != copies:
        image = build_seed_db(spec.entities, replicate_rows(spec.entities, base, better))
    write_bytes_atomic(dst / SEED_SQLITE, image)
    return len(image) / 1e6


def replicate_rows(
    entities: list[EntitySpec], rows: dict[str, list[dict[str, Any]]], copies: int
) -> dict[str, list[dict[str, Any]]]:
    """`copies` copies of every table's rows with keys remapped so primary keys and unique values stay unique."""
    by_name = {e.name: e for e in entities}
    out = {table: list(table_rows) for table, table_rows in rows.items()}
    for k in range(1, copies):
        remap: dict[str, dict[Any, Any]] = {}
        for e in entities:
            table_rows = rows.get(e.table, [])
            remap[e.name] = {r[e.primary_key]: _new_key(e, r[e.primary_key], k, len(table_rows)) for r in table_rows}
        for e in entities:
            unique = {f.name for f in e.fields if f.unique and not f.primary_key}
            unique |= {name for rule in e.rules if rule.kind == "unique_together" for name in rule.fields or []}
            refs = {f.name: f.references.split(".")[0] for f in e.fields if f.references}
            for r in rows.get(e.table, []):
                new = dict(r)
                new[e.primary_key] = remap[e.name][r[e.primary_key]]
                for name, parent in refs.items():
                    if new.get(name) is not None and parent in by_name:
                        new[name] = remap[parent].get(new[name], new[name])
                for name in unique - set(refs) - {e.primary_key}:
                    if isinstance(new.get(name), str):
                        new[name] = f"r{k}.{new[name]}"
                    elif isinstance(new.get(name), int) and not isinstance(new.get(name), bool):
                        new[name] += k * 10_000_000
                out[e.table].append(new)
    return out


def _new_key(entity: EntitySpec, key: Any, k: int, n: int) -> Any:
    if isinstance(key, int) and not isinstance(key, bool):
        return key + k * n
    prefix = entity.id_prefix
    if prefix and isinstance(key, str) and key.startswith(prefix) and key[len(prefix) :].isdigit():
        return format_id(prefix, int(key[len(prefix) :]) + k * n)
    return f"{key}-r{k}"


# --- the measurements ------------------------------------------------------------------------------


def _raw_sqlite(seed: bytes, probe: ReadProbe) -> Callable[[], object]:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(seed)

    def query() -> object:
        cur = conn.execute(probe.sql, probe.params)
        cols = [c[0] for c in cur.description]
        rows = [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
        return rows[0]

    return query


def _in_process_tool(bundle: Bundle, seed: bytes, probe: ReadProbe) -> Callable[[], object]:
    """The tool function itself on an in-process connection: no sandbox, no validation, no IPC."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.deserialize(seed)
    namespace: dict[str, Any] = {"__name__": "tools"}
    exec(compile(bundle.tools_source, "tools.py", "exec"), namespace)
    fn = namespace[probe.tool]
    return lambda: fn(conn, **probe.args)


def measure_calls(bundle_dir: Path, probe: ReadProbe, cfg: RuntimeBenchConfig) -> dict[str, Any]:
    """Our calls/s on a 1-worker pool, the raw-sqlite limit and the tool in-process (run while pinned)."""
    bundle = Bundle.open(bundle_dir)
    seed = bundle.seed_bytes()
    raw_fn = _raw_sqlite(seed, probe)
    tool_fn = _in_process_tool(bundle, seed, probe)
    pool = SandboxPool(size=1).warm()
    try:
        with Environment.open(bundle_dir, pool=pool) as env, env.session() as session:
            first = session.call(probe.tool, probe.args)
            if not first.ok or raw_fn() != first.value or tool_fn() != first.value:
                raise RuntimeError(f"the runtime, the raw query and the tool in-process disagree: {first}")
            loops = {
                "calls_per_s": (lambda: session.call(probe.tool, probe.args), cfg.calls),
                "raw_sqlite_calls_per_s": (raw_fn, cfg.raw_calls),
                "in_process_tool_calls_per_s": (tool_fn, cfg.raw_calls),
            }
            measured = rates(loops, cfg.repeats)
    finally:
        pool.close()
    return {name: round(value) for name, value in measured.items()} | {"answer": first.value}


def measure_baseline_calls(bundle_dir: Path, probe: ReadProbe, cfg: RuntimeBenchConfig, work: Path) -> dict[str, Any]:
    """The AWM instance's calls/s: a new MCP session per call (AWM's way) and one reused session."""
    inst = AwmInstance(bundle_dir, work / "awm-calls")
    inst.start()
    try:
        first = anyio.run(inst.wait_ready, probe.tool, probe.args)
        if first.is_error:
            raise RuntimeError(f"baseline {probe.tool} failed: {first.content}")

        async def fresh() -> float:
            best = float("inf")
            for _ in range(cfg.repeats):
                started = time.perf_counter()
                for _ in range(cfg.baseline_fresh_calls):
                    await call_fresh(inst.url, probe.tool, probe.args)
                best = min(best, time.perf_counter() - started)
            return cfg.baseline_fresh_calls / best

        async def reused() -> float:
            best = float("inf")
            async with ReusedSession(inst.url) as session:
                for _ in range(cfg.baseline_fresh_calls):
                    await session.call(probe.tool, probe.args)
                for _ in range(cfg.repeats):
                    started = time.perf_counter()
                    for _ in range(cfg.baseline_reused_calls):
                        await session.call(probe.tool, probe.args)
                    best = min(best, time.perf_counter() - started)
            return cfg.baseline_reused_calls / best

        fresh_rate = anyio.run(fresh)
        reused_rate = anyio.run(reused)
        server = memory_of(process_tree(inst.pid))
    finally:
        inst.remove()
    return {
        "baseline_calls_per_s": round(fresh_rate, 1),
        "baseline_reused_session_calls_per_s": round(reused_rate, 1),
        "baseline_server_memory": server,
        "baseline_answer": first.content[0].text if first.content else None,
    }


def measure_reset(scaled_dir: Path, cfg: RuntimeBenchConfig, work: Path) -> dict[str, Any]:
    """Our session.reset() on the scaled database next to the baseline's rebuild from SQL."""
    write = write_probe(scaled_dir)
    pool = SandboxPool(size=1).warm()
    ours = []
    try:
        with Environment.open(scaled_dir, pool=pool) as env, env.session() as session:
            seed_row = session.call(write.check.tool, write.check.args).value
            for _ in range(cfg.resets):
                written = session.call(write.tool, write.args)
                if not written.ok:
                    raise RuntimeError(f"{write.tool} failed: {written.error}")
                ours += timed_ms(session.reset, 1)
            session.call(write.tool, write.args)
            changed = session.call(write.check.tool, write.check.args).value
            session.reset()
            restored = session.call(write.check.tool, write.check.args).value
            if changed == seed_row or restored != seed_row:
                raise RuntimeError(f"reset did not restore the seed state: {seed_row} -> {changed} -> {restored}")
    finally:
        pool.close()
    inst = AwmInstance(scaled_dir, work / "awm-reset")
    try:
        inst.reset()
        theirs = timed_ms(inst.reset, cfg.baseline_resets)
        with sqlite3.connect(inst.db_path) as conn:
            rebuilt_rows = sum(
                conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0]
                for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
            )
        seed_sql_mb = len(inst.seed_sql.encode()) / 1e6
    finally:
        inst.remove()
    ours_sorted = sorted(ours)
    return {
        "reset_ms": round(median(ours), 4),
        "reset_ms_p99": round(ours_sorted[min(len(ours) - 1, int(len(ours) * 0.99))], 4),
        "baseline_reset_ms": round(median(theirs), 2),
        "baseline_rebuilt_rows": rebuilt_rows,
        "baseline_seed_sql_mb": round(seed_sql_mb, 2),
    }


def measure_sessions(bundle_dir: Path, probe: ReadProbe, cfg: RuntimeBenchConfig) -> dict[str, Any]:
    """Memory of the orchestrator and all pool workers holding `cfg.sessions` live sessions (default pool)."""
    pool = SandboxPool().warm()
    try:
        before = memory_of(process_tree())
        started = time.perf_counter()
        with Environment.open(bundle_dir, pool=pool) as env:
            sessions = [env.session() for _ in range(cfg.sessions)]
            failed = sum(not s.call(probe.tool, probe.args).ok for s in sessions)
            opened_s = time.perf_counter() - started
            tree = process_tree()
            total = memory_of(tree)
            orchestrator = memory_of(tree[:1])
            for s in sessions:
                s.close()
    finally:
        pool.close()
    return {
        "rss_mb_1000_sessions": total.rss_mb,
        "pss_mb_1000_sessions": total.pss_mb,
        "sessions": cfg.sessions,
        "sessions_failed_calls": failed,
        "sessions_open_and_call_s": round(opened_s, 2),
        "pool_workers": pool.size,
        "memory_before_sessions": before,
        "memory_with_sessions": total,
        "memory_orchestrator": orchestrator,
        "pss_mb_per_session": round((total.pss_mb - before.pss_mb) / cfg.sessions, 3),
    }


def measure_first_call(bundle_dirs: list[Path]) -> dict[str, Any]:
    """Open a never-seen environment on a warm pool, start a session and make its first call."""
    pool = SandboxPool().warm()
    times = []
    try:
        for bundle_dir in bundle_dirs:
            probe = read_probe(bundle_dir)
            started = time.perf_counter()
            with Environment.open(bundle_dir, pool=pool) as env, env.session() as session:
                result = session.call(probe.tool, probe.args)
                times.append((time.perf_counter() - started) * 1000)
            if not result.ok:
                raise RuntimeError(f"{bundle_dir.name}: first call failed: {result.error}")
    finally:
        pool.close()
    return {"first_call_ms": round(max(times), 1), "first_call_ms_each": [round(t, 1) for t in times]}


def measure_baseline_start(bundle_dir: Path, probe: ReadProbe, cfg: RuntimeBenchConfig, work: Path) -> dict[str, Any]:
    """Process start to the first tool answer over MCP, for fresh baseline instances."""
    times = []
    for i in range(cfg.baseline_starts):
        inst = AwmInstance(bundle_dir, work / f"awm-start-{i}")
        try:
            inst.reset()  # the database is ready before the clock starts (AWM copies a prebuilt file)
            started = time.perf_counter()
            inst.start()
            anyio.run(inst.wait_ready, probe.tool, probe.args)
            times.append((time.perf_counter() - started) * 1000)
        finally:
            inst.remove()
    return {"baseline_start_ms": round(median(times), 1), "baseline_start_ms_each": [round(t, 1) for t in times]}


# --- MCP serving: `factory serve --http` next to the AWM-style server, same load generator -------------


@contextlib.contextmanager
def pinned_to_cores(n: int) -> Iterator[list[int]]:
    """This process and the servers it starts meanwhile on the `n` lowest allowed cores (restored after)."""
    before = os.sched_getaffinity(0)
    cores = sorted(before)[:n]
    os.sched_setaffinity(0, cores)
    try:
        yield cores
    finally:
        os.sched_setaffinity(0, before)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def factory_serve(bundle_dir: Path, log: Path) -> Iterator[tuple[str, int]]:
    """`factory serve BUNDLE --http` in its own process, with its default limits; yields (url, pid)."""
    port = _free_port()
    factory = Path(sys.executable).with_name("factory")
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [str(factory), "serve", str(bundle_dir), "--http", f"127.0.0.1:{port}"],
            cwd=REPO_ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    try:
        yield f"http://127.0.0.1:{port}/mcp", proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def first_answer(url: str, probe: ReadProbe, what: str, timeout_s: float = 60.0) -> Any:
    """Poll until the server answers the probe over MCP (it is still starting before that)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            session = await McpSession.open(url)
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not answer within {timeout_s:g}s") from None
            await anyio.sleep(0.05)
            continue
        try:
            return await session.call_tool(probe.tool, probe.args)
        finally:
            await session.close()


def _load(url: str, pid: int, probe: ReadProbe, expect: Any, sessions: int, cfg: RuntimeBenchConfig) -> LoadResult:
    """One load of `sessions` concurrent sessions, `cfg.mcp_calls` calls in all, on the server `pid` (and its
    descendants, counted apart: a process per session)."""

    def workers() -> list[int]:
        return [p for p in process_tree(pid) if p != pid]

    calls = max(2, cfg.mcp_calls // sessions)
    return run_async(run_load(url, probe.tool, probe.args, sessions, calls, expect, [pid], workers))


def _warm(url: str, pid: int, probe: ReadProbe, expect: Any, cfg: RuntimeBenchConfig) -> None:
    warm = run_async(run_load(url, probe.tool, probe.args, cfg.baseline_mcp_sessions, 5, expect, [pid]))
    if warm.failed_calls:
        raise RuntimeError(f"warm-up calls failed: {warm.first_error}")


def _idle_rss_kb(url: str, pid: int, probe: ReadProbe, count: int) -> float:
    """Memory (PSS of the server and its sandbox processes) added per session that made one call and then sat idle."""

    async def hold() -> float:
        before = _rss_kb(pid)
        sessions = await open_idle_sessions(url, count, probe.tool, probe.args)
        await anyio.sleep(0.5)
        after = _rss_kb(pid)
        for session in sessions:
            await session.close()
        return (after - before) / count

    return run_async(hold())


def _rss_kb(pid: int) -> int:
    """Resident memory of `pid` and its descendants in kB, as PSS (memory_of rounds to 0.1 MB, too coarse per
    session): each session is a process sharing its template's pages, which a VmRSS sum counts once per process."""
    total = 0
    for p in process_tree(pid):
        with contextlib.suppress(OSError):
            rollup = Path(f"/proc/{p}/smaps_rollup").read_text()
            total += next((int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0)
    return total


def _load_keys(prefix: str, loads: list[LoadResult]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for load in loads:
        out[f"{prefix}_p50_ms_{load.sessions}_sessions"] = load.p50_ms
        out[f"{prefix}_p99_ms_{load.sessions}_sessions"] = load.p99_ms
        out[f"{prefix}_calls_per_s_{load.sessions}_sessions"] = load.calls_per_s
        out[f"{prefix}_open_p99_ms_{load.sessions}_sessions"] = load.open_p99_ms
    calls = sum(load.calls for load in loads)
    out[f"{prefix}_server_cpu_ms_per_call"] = round(1000 * sum(load.server_cpu_s for load in loads) / calls, 3)
    out[f"{prefix}_workers_cpu_ms_per_call"] = round(1000 * sum(load.workers_cpu_s for load in loads) / calls, 3)
    out[f"{prefix}_failed_calls"] = sum(load.failed_calls for load in loads)
    out[f"{prefix}_loads"] = [load.model_dump() for load in loads]
    return out


def measure_mcp_serving(bundle_dir: Path, probe: ReadProbe, cfg: RuntimeBenchConfig, work: Path) -> dict[str, Any]:
    """Both MCP servers, each in its own process, under the same load generator: at `baseline_mcp_sessions`,
    `mcp_rounds` loads on each, alternating (a burst of noise from a neighbour then costs both sides alike, and
    each side's best load is its number, as for every other rate here); then ours at the other session counts."""
    out: dict[str, Any] = {}
    n = cfg.baseline_mcp_sessions
    with pinned_to_cores(cfg.mcp_cores) as cores:
        out["mcp_cores"] = cores
        with factory_serve(bundle_dir, work / "factory-serve.log") as (url, pid):
            expect = run_async(first_answer(url, probe, "factory serve"))
            # first, while no load has grown the heaps: freed memory would otherwise hide the sessions' own
            out["mcp_rss_kb_per_idle_session"] = round(_idle_rss_kb(url, pid, probe, cfg.mcp_idle_sessions), 1)
            inst = AwmInstance(bundle_dir, work / "awm-mcp")
            inst.start()
            try:
                run_async(first_answer(inst.url, probe, "the baseline server"))
                _warm(url, pid, probe, expect, cfg)
                _warm(inst.url, inst.pid, probe, expect, cfg)
                rounds = [
                    (_load(url, pid, probe, expect, n, cfg), _load(inst.url, inst.pid, probe, expect, n, cfg))
                    for _ in range(cfg.mcp_rounds)
                ]
            finally:
                inst.remove()
            others = [_load(url, pid, probe, expect, size, cfg) for size in sorted(set(cfg.mcp_sessions) - {n})]
    ours = [max((r[0] for r in rounds), key=lambda load: load.calls_per_s), *others]
    baseline = [max((r[1] for r in rounds), key=lambda load: load.calls_per_s)]
    out |= _load_keys("mcp", ours) | _load_keys("baseline_mcp", baseline)
    out["mcp_rounds_calls_per_s"] = [[ours_.calls_per_s, base.calls_per_s] for ours_, base in rounds]
    out["mcp_calls_per_s"] = ours[0].calls_per_s
    out["baseline_mcp_calls_per_s"] = baseline[0].calls_per_s
    out["mcp_ratio_vs_baseline"] = round(out["mcp_calls_per_s"] / out["baseline_mcp_calls_per_s"], 1)
    return out


# --- the run -------------------------------------------------------------------------------------------


def _target(value: float, limit: float, at_least: bool, text: str) -> dict[str, Any]:
    ok = value >= limit if at_least else value <= limit
    return {"target": text, "value": value, "pass": bool(ok)}


def targets(r: dict[str, Any]) -> dict[str, dict[str, Any]]:
    big = max(r["config"]["mcp_sessions"])
    return {
        "calls_per_s": _target(r["calls_per_s"], 5000, True, ">= 5000 calls/s on one core"),
        "calls_vs_raw_sqlite": _target(
            r["raw_sqlite_slowdown"], 10, False, "raw sqlite3 calls/s / ours <= 10 (within 10x of the limit)"
        ),
        "calls_vs_baseline": _target(r["ratio_vs_baseline"], 20, True, ">= 20x the baseline's calls/s"),
        "reset_ms": _target(r["reset_ms"], 1.0, False, f"reset of a {r['reset_db_mb']:.1f} MB database <= 1 ms"),
        "reset_vs_baseline": _target(r["reset_ratio_vs_baseline"], 100, True, ">= 100x faster than the rebuild"),
        "memory_1000_sessions": _target(  # PSS: a process per session shares its template's pages, RSS counts them
            r["pss_mb_1000_sessions"], 4096, False, f"{r['sessions']} sessions <= 4 GB (PSS sum of every process)"
        ),
        "first_call_ms": _target(r["first_call_ms"], 300, False, "first call on a new environment <= 300 ms"),
        "mcp_vs_baseline": _target(
            r["mcp_ratio_vs_baseline"], 10, True, ">= 10x the baseline's calls/s over MCP, same load generator"
        ),
        "mcp_server_cpu_ms_per_call": _target(
            r["mcp_server_cpu_ms_per_call"], 1.0, False, "MCP server process CPU <= 1 ms per tool call"
        ),
        f"mcp_p99_ms_{big}_sessions": _target(
            r[f"mcp_p99_ms_{big}_sessions"], 2000, False, f"p99 per call < 2 s at {big} concurrent MCP sessions"
        ),
    }


def run(cfg: RuntimeBenchConfig | None = None, work: Path | None = None) -> dict[str, Any]:
    """Run every measurement; returns the results (with machine info, method notes and targets)."""
    cfg = cfg or RuntimeBenchConfig()
    machine = machine_info()
    owned = work is None
    work = Path(tempfile.mkdtemp(prefix="bench-runtime-")) if work is None else Path(work)
    try:
        return _run(cfg, machine, work)
    finally:
        if owned:
            shutil.rmtree(work, ignore_errors=True)


def _run(cfg: RuntimeBenchConfig, machine: dict[str, Any], work: Path) -> dict[str, Any]:
    wall = time.perf_counter()
    main_dir = work / "bundles" / cfg.topic
    build_env(cfg.topic, main_dir)
    new_dirs = []
    for topic in cfg.new_env_topics:
        build_env(topic, work / "bundles" / topic)
        new_dirs.append(work / "bundles" / topic)
    scaled_dir = work / "bundles" / f"{cfg.topic}-scaled"
    db_mb = scale_bundle(main_dir, scaled_dir, cfg.reset_db_mb)
    probe = read_probe(main_dir)

    r: dict[str, Any] = {"benchmark": "runtime", "machine": machine, "config": cfg.model_dump()}
    with pinned_to_one_core(cfg.cpu) as core:
        r["pinned_core"] = core
        r.update(measure_calls(main_dir, probe, cfg))
        r.update(measure_baseline_calls(main_dir, probe, cfg, work))
    r.update(measure_reset(scaled_dir, cfg, work))
    r.update(measure_sessions(main_dir, probe, cfg))
    r.update(measure_first_call(new_dirs))
    r.update(measure_baseline_start(main_dir, probe, cfg, work))
    r.update(measure_mcp_serving(main_dir, probe, cfg, work))

    base_mem: Memory = r.pop("baseline_server_memory")
    r["baseline_rss_mb_per_instance"] = base_mem.rss_mb
    r["baseline_pss_mb_per_instance"] = base_mem.pss_mb
    r["baseline_rss_mb_1000_instances_extrapolated"] = round(base_mem.rss_mb * cfg.sessions)
    for key in ("memory_before_sessions", "memory_with_sessions", "memory_orchestrator"):
        r[key] = r[key].model_dump()
    r["read_tool"] = probe.model_dump()
    r["reset_db_mb"] = round(db_mb, 2)
    r["ratio_vs_baseline"] = round(r["calls_per_s"] / r["baseline_calls_per_s"], 1)
    r["ratio_vs_baseline_reused_session"] = round(r["calls_per_s"] / r["baseline_reused_session_calls_per_s"], 1)
    r["raw_sqlite_slowdown"] = round(r["raw_sqlite_calls_per_s"] / r["calls_per_s"], 1)
    r["reset_ratio_vs_baseline"] = round(r["baseline_reset_ms"] / max(r["reset_ms"], 1e-9), 1)
    r["first_call_vs_baseline_start"] = round(r["baseline_start_ms"] / r["first_call_ms"], 1)
    r["method"] = METHOD
    r["targets"] = targets(r)
    r["wall_s"] = round(time.perf_counter() - wall, 1)
    r["machine"]["loadavg_1m_at_end"] = os.getloadavg()[0]
    return r


METHOD = {
    "calls": "read tool (`get`) on the same bundle and key. Harness pinned to one core (sched_setaffinity) before "
    "starting a 1-worker pool / the baseline server, so caller and server share that core on both sides. "
    "Best of `repeats` timed loops after a warm-up loop; ours, raw and in-process loops interleaved round by round.",
    "raw_sqlite": "the same SELECT the generated tool runs, on an in-memory sqlite3 copy of the seed, "
    "in this process, rows turned into dicts (the limit). in_process_tool: the tools.py function itself.",
    "baseline": "FastAPI app (one async endpoint per tool, SQLAlchemy session per request, running OUR tools.py "
    "function on the session's sqlite3 connection) + the official mcp SDK's streamable HTTP server mounted "
    "at /mcp, forwarding tools/call to the endpoint over an in-process ASGI client (as AWM's fastapi_mcp "
    "does); one uvicorn process per instance. baseline_calls_per_s: a new MCP session per call (initialize, "
    "call, close) as AWM's MCPToolExecutor does; baseline_reused_session_calls_per_s: one session kept open.",
    "reset": "ours: session.reset() (a rollback of the session's own transaction in its process) after an "
    "`update` call (untimed) each time, median of `resets`; checked to bring the updated row back. "
    "baseline: delete the file and executescript(schema.sql) + executescript(seed INSERTs in one transaction), "
    "median; run in the harness, so no server restart is counted for the baseline.",
    "memory": "sum over the orchestrator process and all its descendants (pool workers, incl. the pid-namespace "
    "init wrappers) of VmRSS (/proc/PID/status) and Pss (/proc/PID/smaps_rollup). RSS counts shared pages "
    "(the interpreter) once per process; PSS splits them and is the honest total. The orchestrator here is "
    "the benchmark process itself (it also imported the baseline's client libraries).",
    "first_call": "warm default pool; Environment.open of a bundle not loaded before + session + first read "
    "call; the max over `new_env_topics`. baseline_start_ms: server process start to the first tool answer "
    "over MCP, database file already built (median of `baseline_starts`).",
    "mcp_serving": "`factory serve BUNDLE --http` (its default limits, 2-worker pool) and the baseline server, "
    "each in its own process, both up at once and loaded one at a time, with the load generator "
    "(benchmarks/mcp_load.py: raw asyncio HTTP/1.1, one keep-alive connection and one initialize-handshake "
    "session per simulated rollout) pinned with them to `mcp_cores` cores. Per load: all sessions opened first, "
    "then each calls the read tool `mcp_calls / sessions` times back to back, all at once; every answer is "
    "checked against the first. calls/s = calls / wall time of that phase; latencies per call; open_p99_ms: "
    "the initialize handshake of each session (50 at a time; our server opens the environment session there); "
    "server CPU = utime+stime (/proc/PID/stat) of the server process over the phase / calls (its sandbox "
    "workers apart). mcp_calls_per_s and baseline_mcp_calls_per_s are at `baseline_mcp_sessions` sessions: "
    "`mcp_rounds` loads on each server, alternating ours, baseline, ours, ... (mcp_rounds_calls_per_s lists "
    "every pair), and each side's best load is its number (the keys of that size describe that load); then "
    "ours at the other sizes. Idle RSS (measured first, on the fresh server): RSS of the server and its "
    "workers after `mcp_idle_sessions` sessions made one call each and sat idle, minus before, per session.",
}
