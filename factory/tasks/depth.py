"""How deep a task set is: the distribution of gold calls, and the shares that mutate and need pagination,
overall, per kind and per difficulty level. The CLI, the tasks asset's metadata and the benchmark read it."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence

from pydantic import Field

from factory.models import Model, Task

LONG_CHAIN = 20  # gold calls above which a task counts as long (the Agent-World paper's average turn count)
BUCKETS = ((1, 3), (4, 6), (7, 12), (13, 20), (21, 40), (41, None))  # gold-call histogram bins, inclusive


class Depth(Model):
    """Depth of one group of tasks."""

    tasks: int = 0
    gold_calls_mean: float = 0.0
    gold_calls_p50: float = 0.0
    gold_calls_p90: float = 0.0
    gold_calls_max: int = 0
    share_over_20: float = 0.0
    share_mutate: float = 0.0
    share_need_pagination: float = 0.0
    histogram: dict[str, int] = Field(default_factory=dict)  # "1-3", "4-6", ..., "41+" -> tasks


class DepthReport(Model):
    """Depth overall, per kind (graph, program) and per difficulty level."""

    overall: Depth = Field(default_factory=Depth)
    by_kind: dict[str, Depth] = Field(default_factory=dict)
    by_level: dict[str, Depth] = Field(default_factory=dict)


def _bucket(calls: int) -> str:
    for low, high in BUCKETS:
        if high is None or calls <= high:
            return f"{low}+" if high is None else f"{low}-{high}"
    raise AssertionError("the last bucket is open")


def _quantile(values: list[int], q: float) -> float:
    if len(values) == 1:
        return float(values[0])
    return round(statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1], 2)


def depth(tasks: Sequence[Task]) -> Depth:
    """The depth of `tasks` (zeros for none)."""
    if not tasks:
        return Depth()
    calls = [t.gold_calls for t in tasks]
    n = len(tasks)
    counts = Counter(_bucket(c) for c in calls)
    return Depth(
        tasks=n,
        gold_calls_mean=round(statistics.mean(calls), 2),
        gold_calls_p50=float(statistics.median(calls)),
        gold_calls_p90=_quantile(calls, 0.9),
        gold_calls_max=max(calls),
        share_over_20=round(sum(c > LONG_CHAIN for c in calls) / n, 3),
        share_mutate=round(sum(t.mutates for t in tasks) / n, 3),
        share_need_pagination=round(sum(t.needs_pagination for t in tasks) / n, 3),
        histogram={_bucket(low): counts[_bucket(low)] for low, _ in BUCKETS},
    )


def depth_report(tasks: Sequence[Task]) -> DepthReport:
    kinds = sorted({t.kind for t in tasks})
    levels = sorted({t.difficulty.level or "unset" for t in tasks})
    return DepthReport(
        overall=depth(tasks),
        by_kind={k: depth([t for t in tasks if t.kind == k]) for k in kinds},
        by_level={lv: depth([t for t in tasks if (t.difficulty.level or "unset") == lv]) for lv in levels},
    )


def depth_line(tasks: Sequence[Task]) -> str:
    """One line for a terminal: gold calls (mean, p90, most), long share, mutate and pagination shares."""
    d = depth(tasks)
    if not d.tasks:
        return "no tasks"
    return (
        f"gold calls mean {d.gold_calls_mean:.1f}, p90 {d.gold_calls_p90:g}, max {d.gold_calls_max}, "
        f"over {LONG_CHAIN}: {d.share_over_20:.0%}; mutate {d.share_mutate:.0%}, "
        f"need pagination {d.share_need_pagination:.0%}"
    )
