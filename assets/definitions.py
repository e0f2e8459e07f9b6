"""The Dagster code location of Agent World Factory (`dagster dev -m assets.definitions`)."""

from __future__ import annotations

import dagster as dg

from assets import build, discovery, tasks
from resources import default_resources

all_assets = dg.load_assets_from_modules([discovery, build, tasks])

defs = dg.Definitions(assets=all_assets, resources=default_resources())
