"""pyproject.toml declares what the code imports, and nothing it does not."""

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OURS = {"factory", "assets", "resources", "training", "benchmarks", "tests"}
TOOLS = {"dagster-webserver", "dagster-dg-cli", "pytest-timeout", "ruff"}  # commands, not imported
PINS = {"antlr4-python3-runtime"}  # declared to pin what others import (verl's hydra vs Dagster), never imported
OPTIONAL_IN_CORE = {"ray"}  # the core's one import of the train extra: the Ray rollout backend, imported lazily


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _imported(folders: list[str]) -> set[str]:
    """Top-level modules imported anywhere (lazily too) in the project's own code."""
    found: set[str] = set()
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            if "fixtures" in path.parts:
                continue  # tool code written by others, run only in the sandbox
            for node in ast.walk(ast.parse(path.read_bytes())):
                if isinstance(node, ast.Import):
                    found.update(a.name.split(".")[0] for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    found.add(node.module.split(".")[0])
    return found - OURS - set(sys.stdlib_module_names)


def _distributions(modules: set[str]) -> set[str]:
    mapping = packages_distributions()
    return {d.lower().replace("_", "-") for m in modules for d in mapping.get(m, [m])}


def test_pyproject_declares_exactly_what_is_imported():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = {_name(r) for r in project["dependencies"]}
    dev = {_name(r) for r in project["optional-dependencies"]["dev"]}
    train = {_name(r) for r in project["optional-dependencies"]["train"]}
    core = _distributions(_imported(["factory", "assets", "resources"]))
    training = _distributions(_imported(["training"]))
    used_anywhere = core | training | _distributions(_imported(["benchmarks", "tests"]))
    assert core - runtime <= OPTIONAL_IN_CORE, f"imported but not declared: {sorted(core - runtime)}"
    assert train >= OPTIONAL_IN_CORE
    assert training <= runtime | train, f"imported but not declared: {sorted(training - runtime - train)}"
    declared = runtime | dev | train
    assert used_anywhere <= declared, f"imported but not declared: {sorted(used_anywhere - declared)}"
    unused = declared - used_anywhere - TOOLS - PINS
    assert not unused, f"declared but never imported: {sorted(unused)}"
