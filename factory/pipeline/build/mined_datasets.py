"""Mined datasets: the entities of each topic (inferred from its tool schemas or taken from OpenAPI)
and seeded rows consistent across foreign keys (the draft env.json plus rows.json)."""

from __future__ import annotations

from pathlib import Path

from factory.envs.bundle import ENV_JSON
from factory.mining.datasets import draft_environment, seed_scale
from factory.models import Lineage, StateBackend, TaxonomyPath, Topic
from factory.pipeline.artifacts import ROWS_JSON, taxonomy_hash, topics_hash, topics_in_category
from factory.pipeline.registry import MINED_DATASETS, TAXONOMY, TOPICS
from factory.pipeline.runner import EnvOutcome, EnvWork, Progress, StageRun, run_stage
from factory.store import Store, hash_value, write_json_atomic


def mine_datasets(
    store: Store,
    category: str,
    *,
    seed: int = 0,
    backend: StateBackend = "sqlite",
    scale: float | None = None,
    progress: Progress | None = None,
) -> StageRun:
    """A mined dataset for every topic of the category; kept when at least one tool maps to an operation.

    `scale` multiplies the seeded row counts (None: $FACTORY_SEED_SCALE, read now, else 1.0); it is an
    input of every environment's work, so changing it rebuilds them."""
    scale = seed_scale(scale)

    def job(topic: Topic, path: TaxonomyPath) -> EnvWork:
        def make(out: Path) -> EnvOutcome:
            lineage = Lineage(
                stage=MINED_DATASETS.name, code_version=MINED_DATASETS.code_version, inputs={"topic": hash_value(topic)}
            )
            spec, rows = draft_environment(
                topic, seed=seed, backend=backend, taxonomy=path, lineage=lineage, scale=scale
            )
            write_json_atomic(out / ENV_JSON, spec)
            write_json_atomic(out / ROWS_JSON, rows)
            mapped = sum(1 for t in spec.tools if t.operation is not None)
            return EnvOutcome(
                env_id=spec.id,
                kept=mapped > 0,
                reason=None if mapped else "no tool could be mapped to an operation",
                counts={
                    "entities": len(spec.entities),
                    "rows": sum(len(r) for r in rows.values()),
                    "tools_mapped": mapped,
                    "tools_unmapped": len(spec.tools) - mapped,
                },
            )

        inputs = {"topic": topic, "taxonomy": path, "seed": seed, "backend": backend, "scale": scale}
        return EnvWork(topic.id, inputs, make)

    return run_stage(
        store,
        MINED_DATASETS,
        category,
        [job(t, p) for t, p in topics_in_category(store, category)],
        upstream={TAXONOMY.name: taxonomy_hash(store), TOPICS.name: topics_hash(store)},
        progress=progress,
    )
