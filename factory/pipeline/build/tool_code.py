"""Tool code: `tools.py` per environment, one function per tool the source offers."""

from __future__ import annotations

from pathlib import Path

from factory.envs.bundle import TOOLS_PY
from factory.envs.codegen import generate_tools
from factory.envs.state import Rows
from factory.models import EnvSpec
from factory.pipeline.artifacts import dataset_work
from factory.pipeline.registry import MINED_DATASETS, TOOL_CODE
from factory.pipeline.runner import Progress, StageRun, manifest_hashes, run_stage
from factory.store import Store, write_text_atomic


def write_tool_code(store: Store, category: str, *, progress: Progress | None = None) -> StageRun:
    """tools.py for every kept mined dataset."""

    def make(spec: EnvSpec, rows: Rows, out: Path) -> dict[str, float]:
        source = generate_tools(spec)
        write_text_atomic(out / TOOLS_PY, source)
        return {"tools": sum(1 for t in spec.tools if t.operation), "lines": source.count("\n")}

    work = dataset_work(store, category, make)
    upstream = manifest_hashes(store, category, MINED_DATASETS)
    return run_stage(store, TOOL_CODE, category, work, upstream=upstream, progress=progress)
