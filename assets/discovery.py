"""Discovery: topics mined from the catalog and tool sources, organised into a taxonomy."""

import dagster as dg

from assets.partitions import category_partitions
from factory import discovery
from resources import StoreResource


class TopicsConfig(dg.Config):
    """Extra tool sources (MCP tools/list, registry server.json, OpenAPI files) and an optional catalog subset."""

    sources: list[str] = discovery.env_list("FACTORY_TOPIC_SOURCES")
    include: list[str] = discovery.env_list("FACTORY_TOPICS")


@dg.asset(group_name="discovery", code_version=discovery.TOPICS_CODE_VERSION, kinds={"json"})
def topics(context: dg.AssetExecutionContext, config: TopicsConfig, store: StoreResource) -> dg.MaterializeResult:
    """Topics: real-world services (tools with schemas) from the bundled catalog and any configured
    MCP / OpenAPI sources. Everything downstream is built from these."""
    artifact, written = discovery.discover_topics(store.get(), sources=config.sources, include=config.include)
    context.log.info(f"{len(artifact.topics)} topics ({'written' if written.wrote else 'unchanged'})")
    return dg.MaterializeResult(
        metadata={
            "topics": len(artifact.topics),
            "tools": sum(len(t.tools) for t in artifact.topics),
            "sources": dg.MetadataValue.json(artifact.sources),
        },
        data_version=dg.DataVersion(written.content_hash),
    )


@dg.asset(
    group_name="discovery",
    deps=[topics],
    code_version=discovery.TAXONOMY_CODE_VERSION,
    kinds={"json"},
    check_specs=[dg.AssetCheckSpec("taxonomy_is_sound", asset="taxonomy", blocking=True)],
)
def taxonomy(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    """Taxonomy: three levels (l1/l2/l3) over the topics, near-duplicates merged. Its L1 slugs become
    the `category` partitions that every later stage runs per."""
    tax, written = discovery.classify_topics(store.get())
    categories = tax.categories()
    existing = set(context.instance.get_dynamic_partitions(category_partitions.name))
    new = [c for c in categories if c not in existing]
    if new:
        context.instance.add_dynamic_partitions(category_partitions.name, new)
    problems = discovery.taxonomy_problems(tax)
    rows = ["| category | topics |", "|---|---|"]
    for c in categories:
        rows.append(f"| {c} | {sum(1 for p in tax.assignments.values() if p.l1 == c)} |")
    return dg.MaterializeResult(
        metadata={
            "categories": len(categories),
            "new_partitions": dg.MetadataValue.json(new),
            "merged_topics": dg.MetadataValue.json([m.model_dump() for m in tax.merges]),
            "per_category": dg.MetadataValue.md("\n".join(rows)),
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
