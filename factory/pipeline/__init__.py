"""The stages in flow order, one module each, and the one registry of stages.

discovery/  topics -> taxonomy (unpartitioned)
build/      mined_datasets -> databases, tool_code -> tool_tests (the gate) -> tool_graphs (per category)
tasks/      tasks (synthesis + solvability filter) -> verifiers (the audit gate) (per category)

`registry` names every stage (asset key, store directory, code version); `runner` reuses an
environment's output when neither its inputs nor its stage's code changed. This package never
imports Dagster: the assets call these functions.
"""
