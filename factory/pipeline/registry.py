"""The one registry of stages, in flow order: asset key, group, store directory and code version.

Assets, the CLI and the tests all read it, so a stage is named in one place. The code version of a
stage is derived from the source of the module that runs it (factory.pipeline.code_versions); the
reuse check of the stage runner and the Dagster asset's `code_version` read the same value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from factory.pipeline.code_versions import cached_code_version
from factory.store import Store

Group = Literal["discovery", "build", "tasks", "evolve", "train"]


@dataclass(frozen=True)
class Stage:
    """One stage: `name` is its asset key and its directory under `artifacts/`."""

    name: str
    group: Group
    module: str  # the factory module holding the stage function; its import closure is the stage's code
    partitioned: bool = True
    row_count: str | None = None  # the manifest count shown as the asset's `dagster/row_count`

    @property
    def code_version(self) -> str:
        return cached_code_version(self.module)

    def dir(self, store: Store, category: str | None = None) -> Path:
        return store.artifact_dir(self.name, category if self.partitioned else None)


TOPICS = Stage("topics", "discovery", "factory.pipeline.discovery.topics", partitioned=False)
TAXONOMY = Stage("taxonomy", "discovery", "factory.pipeline.discovery.taxonomy", partitioned=False)
MINED_DATASETS = Stage("mined_datasets", "build", "factory.pipeline.build.mined_datasets", row_count="rows")
DATABASES = Stage("databases", "build", "factory.pipeline.build.databases", row_count="rows")
TOOL_CODE = Stage("tool_code", "build", "factory.pipeline.build.tool_code", row_count="tools")
TOOL_TESTS = Stage("tool_tests", "build", "factory.pipeline.build.tool_tests", row_count="tests")
TOOL_GRAPHS = Stage("tool_graphs", "build", "factory.pipeline.build.tool_graphs", row_count="tools")
TASKS = Stage("tasks", "tasks", "factory.pipeline.tasks.tasks", row_count="candidates")
VERIFIERS = Stage("verifiers", "tasks", "factory.pipeline.tasks.verifiers", row_count="tasks")
ROLLOUTS = Stage("rollouts", "evolve", "factory.pipeline.evolve.rollouts", row_count="episodes")
DIAGNOSES = Stage("diagnoses", "evolve", "factory.pipeline.evolve.diagnoses", partitioned=False)
TARGETED_TASKS = Stage("targeted_tasks", "evolve", "factory.pipeline.evolve.targeted", row_count="tasks")
TRAINING_DATASET = Stage("training_dataset", "train", "training.prepare", partitioned=False)
POLICY_CHECKPOINT = Stage("policy_checkpoint", "train", "training.launch", partitioned=False)

STAGES: tuple[Stage, ...] = (
    TOPICS,
    TAXONOMY,
    MINED_DATASETS,
    DATABASES,
    TOOL_CODE,
    TOOL_TESTS,
    TOOL_GRAPHS,
    TASKS,
    VERIFIERS,
    ROLLOUTS,
    DIAGNOSES,
    TARGETED_TASKS,
    TRAINING_DATASET,
    POLICY_CHECKPOINT,
)
CATEGORY_GROUPS: tuple[Group, ...] = ("build", "tasks")  # partitioned by category, run in this order
# One job per group; the evolve group mixes partitioned and unpartitioned stages, so it has a job per stage, and
# the train group (verl, the `train` extra) is materialized on its own or by `factory train`.
GROUPS: tuple[Group, ...] = ("discovery", *CATEGORY_GROUPS)


def stage(name: str) -> Stage:
    """The stage called `name`, or a clear error listing the stages there are."""
    for s in STAGES:
        if s.name == name:
            return s
    raise KeyError(f"no stage {name!r} (stages: {', '.join(s.name for s in STAGES)})")


def in_group(group: Group) -> list[Stage]:
    return [s for s in STAGES if s.group == group]
