"""The `category` partitions: one per taxonomy L1 slug, registered when the taxonomy is materialized."""

import dagster as dg

category_partitions = dg.DynamicPartitionsDefinition(name="category")
