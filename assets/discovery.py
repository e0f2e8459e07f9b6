"""Discovery: topics mined from the catalog and tool sources, organised into a taxonomy."""

import dagster as dg

from assets.partitions import category_partitions
from factory.pipeline.discovery.taxonomy import classify_topics, taxonomy_problems, topics_per_category
from factory.pipeline.discovery.topics import discover_topics
from factory.pipeline.registry import TAXONOMY, TOPICS
from resources import StoreResource


class TopicsConfig(dg.Config):
    """Extra tool sources (MCP tools/list, registry server.json, OpenAPI files) and an optional catalog
    subset. Left empty, they come from FACTORY_TOPIC_SOURCES and FACTORY_TOPICS when the run starts."""

    sources: list[str] | None = None
    include: list[str] | None = None


@dg.asset(group_name=TOPICS.group, code_version=TOPICS.code_version, kinds={"json"})
def topics(context: dg.AssetExecutionContext, config: TopicsConfig, store: StoreResource) -> dg.MaterializeResult:
    """Topics: real-world services (tools with schemas) from the bundled catalog and any configured
    MCP / OpenAPI sources. Everything downstream is built from these."""
    artifact, written = discover_topics(store.get(), sources=config.sources, include=config.include)
    context.log.info(f"{len(artifact.topics)} topics ({'written' if written.wrote else 'unchanged'})")
    return dg.MaterializeResult(
        metadata={
            "topics": len(artifact.topics),
            "tools": sum(len(t.tools) for t in artifact.topics),
            "sources": dg.MetadataValue.json(artifact.sources),
            "dagster/row_count": len(artifact.topics),
        },
        data_version=dg.DataVersion(written.content_hash),
    )


@dg.asset(
    group_name=TAXONOMY.group,
    deps=[topics],
    code_version=TAXONOMY.code_version,
    kinds={"json"},
    check_specs=[dg.AssetCheckSpec("taxonomy_is_sound", asset=TAXONOMY.name, blocking=True)],
)
def taxonomy(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    """Taxonomy: three levels (l1/l2/l3) over the topics, near-duplicates merged. Its L1 slugs become
    the `category` partitions that every later stage runs per."""
    tax, written = classify_topics(store.get())
    existing = set(context.instance.get_dynamic_partitions(category_partitions.name))
    new = [c for c in tax.categories() if c not in existing]
    if new:
        context.instance.add_dynamic_partitions(category_partitions.name, new)
    problems = taxonomy_problems(tax)
    per_category = dg.MetadataValue.table(
        records=[dg.TableRecord({"category": c, "topics": n}) for c, n in topics_per_category(tax).items()],
        schema=dg.TableSchema(columns=[dg.TableColumn("category", "string"), dg.TableColumn("topics", "int")]),
    )
    return dg.MaterializeResult(
        metadata={
            "categories": len(tax.categories()),
            "new_partitions": dg.MetadataValue.json(new),
            "merged_topics": dg.MetadataValue.json([m.model_dump() for m in tax.merges]),
            "per_category": per_category,
        },
        data_version=dg.DataVersion(written.content_hash),
        check_results=[
            dg.AssetCheckResult(
                check_name="taxonomy_is_sound",
                passed=not problems,
                metadata={"problems": dg.MetadataValue.json(problems)},
            )
        ],
    )
