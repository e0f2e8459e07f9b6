"""The MCP serving benchmark at tiny sizes: both servers come up, the load generator drives them, every key lands."""

from __future__ import annotations

from pathlib import Path

from benchmarks.mcp_load import LoadResult, run_async, run_load
from benchmarks.runtime_bench import RuntimeBenchConfig, factory_serve, first_answer, measure_mcp_serving, read_probe


def test_quick_mcp_serving_measures_both_sides(shop_bundle: Path, tmp_path: Path) -> None:
    cfg = RuntimeBenchConfig.quick()
    r = measure_mcp_serving(shop_bundle, read_probe(shop_bundle), cfg, tmp_path)
    assert r["mcp_failed_calls"] == 0 and r["baseline_mcp_failed_calls"] == 0
    assert r["mcp_calls_per_s"] > 0 and r["baseline_mcp_calls_per_s"] > 0
    assert r["mcp_ratio_vs_baseline"] == round(r["mcp_calls_per_s"] / r["baseline_mcp_calls_per_s"], 1)
    rounds = r["mcp_rounds_calls_per_s"]  # each side's best of its alternating loads
    assert len(rounds) == cfg.mcp_rounds == 2
    assert r["mcp_calls_per_s"] == max(ours for ours, _ in rounds)
    assert r["baseline_mcp_calls_per_s"] == max(base for _, base in rounds)
    assert r["mcp_server_cpu_ms_per_call"] > 0 and r["baseline_mcp_server_cpu_ms_per_call"] > 0
    assert r["mcp_workers_cpu_ms_per_call"] > 0  # our tools run in sandbox workers, not in the server
    for n in cfg.mcp_sessions:
        assert 0 < r[f"mcp_p50_ms_{n}_sessions"] <= r[f"mcp_p99_ms_{n}_sessions"]
    assert isinstance(r["mcp_rss_kb_per_idle_session"], float)  # at 10 sessions the value is noise; the key is there


def test_a_wrong_answer_counts_as_a_failed_call(shop_bundle: Path, tmp_path: Path) -> None:
    probe = read_probe(shop_bundle)
    with factory_serve(shop_bundle, tmp_path / "serve.log") as (url, pid):
        answer = run_async(first_answer(url, probe, "factory serve"))
        # enough calls for the server's CPU time to pass a clock tick (10 ms) however fast one call is
        right = run_async(run_load(url, probe.tool, probe.args, 3, 40, answer, [pid]))
        wrong = run_async(run_load(url, probe.tool, probe.args, 3, 2, {"not": "it"}, [pid]))
    assert isinstance(right, LoadResult) and right.failed_calls == 0 and right.server_cpu_s > 0
    assert wrong.failed_calls == 6 and "unexpected answer" in (wrong.first_error or "")
