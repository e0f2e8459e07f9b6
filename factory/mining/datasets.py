"""The mined dataset of a topic: its entities (from the tool schemas) and seeded rows, before any code."""

from __future__ import annotations

from factory.environment import env_number
from factory.envs.entities import infer_entities
from factory.envs.state import Rows
from factory.lexicon import TIMESTAMP_COLUMNS
from factory.mining.procedural import generate_rows
from factory.models import EntitySpec, EnvSpec, Lineage, StateBackend, TaxonomyPath, Topic
from factory.pipeline.code_versions import cached_code_version
from factory.pipeline.registry import MINED_DATASETS
from factory.store import hash_value

SCALE_ENV = "FACTORY_SEED_SCALE"


def seed_scale(scale: float | None = None, *, what: str = "scale") -> float:
    """The row-count multiplier of seeded data: `scale` when given, else $FACTORY_SEED_SCALE, else 1.0.

    Read when a run starts, never at import; a value that is not a number above 0 is an error naming
    `what` (the argument or option it came from) or the variable.
    """
    if scale is None:
        value = env_number(SCALE_ENV, 1.0, float, "a number above 0")
        source = SCALE_ENV
    else:
        value, source = scale, what
    if not (isinstance(value, int | float) and value > 0 and value != float("inf")):
        raise ValueError(f"{source} must be a number above 0, not {value!r}")
    return float(value)


def bookkeeping_columns(entities: list[EntitySpec]) -> list[str]:
    """ "table.column" of the timestamp-like columns the tools maintain; verifiers ignore them."""
    return [f"{e.table}.{f.name}" for e in entities for f in e.fields if f.name in TIMESTAMP_COLUMNS]


def draft_environment(
    topic: Topic,
    *,
    lineage: Lineage | None = None,
    seed: int = 0,
    backend: StateBackend = "sqlite",
    taxonomy: TaxonomyPath | None = None,
    scale: float = 1.0,
) -> tuple[EnvSpec, Rows]:
    """The env.json of a topic before the gate (every tool) and its seeded rows (`scale` x the row counts)."""
    scale = seed_scale(scale)
    lineage = lineage or Lineage(
        stage=MINED_DATASETS.name, code_version=cached_code_version(__name__), inputs={"topic": hash_value(topic)}
    )
    entities, tools = infer_entities(topic)
    spec = EnvSpec(
        id=topic.id,
        title=topic.title,
        topic_id=topic.id,
        taxonomy=taxonomy or topic.taxonomy_hint,
        description=topic.description,
        backend=backend,
        tools=tools,
        entities=entities,
        seed=seed,
        scale=scale,
        bookkeeping=bookkeeping_columns(entities),
        lineage=lineage,
    )
    return spec, generate_rows(entities, seed, scale)
