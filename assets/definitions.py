"""The Dagster code location of Agent World Factory (`dagster dev -m assets.definitions`)."""

from __future__ import annotations

import dagster as dg

from assets import build, discovery, evolve, tasks, training
from assets.evolve import arena_round_sensor, evolve_jobs, nightly_evolution, targeted_tasks_sensor
from assets.jobs import jobs
from resources import default_resources

all_assets = dg.load_assets_from_modules([discovery, build, tasks, evolve, training])

# Steps run in the run's own process: a category's stages are sequential anyway, and a process per
# step would spend more time importing than working on a 2-core machine.
defs = dg.Definitions(
    assets=all_assets,
    jobs=[*jobs, *evolve_jobs],
    sensors=[arena_round_sensor, targeted_tasks_sensor],
    schedules=[nightly_evolution],
    resources=default_resources(),
    executor=dg.in_process_executor,
)
