"""Discovery: topics from the catalog and tool sources, then the taxonomy that partitions the rest."""
