"""One job per asset group: discovery (unpartitioned), then build and tasks over the category partitions
(Dagster infers the partitions from the selected assets).

`factory run` executes them in this order; in the UI they launch a group for one category or many.
"""

import dagster as dg

from factory.pipeline.registry import GROUPS, in_group


def job_name(group: str) -> str:
    """The job of an asset group (`tasks_job`: a job may not share a name with an asset)."""
    return f"{group}_job"


jobs = [
    dg.define_asset_job(
        name=job_name(group),
        selection=dg.AssetSelection.assets(*(s.name for s in in_group(group))),
        description=f"Materialize the {group} assets: {', '.join(s.name for s in in_group(group))}.",
    )
    for group in GROUPS
]
