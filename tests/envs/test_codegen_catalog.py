"""tools.py of every catalog environment on both backends (plus a shop with awkward names and descriptions):
it compiles, is formatted as ruff formats it, passes the project's lint rules, has a function for every tool
with an operation, offers nothing else callable, and imports nothing beyond the standard library.

All sources are generated once for the module and ruff runs once per check over the whole directory."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from factory.envs.codegen import LINE_LENGTH, generate_tools, unsupported_tools
from factory.mining.datasets import draft_environment
from factory.models import EnvSpec, FieldSpec, ToolOperation, ToolSpec
from factory.topics import load_catalog

from .conftest import shop_spec

LINT_RULES = "E,F,W,B,I,UP,SIM,RUF"


def _awkward_shop(backend: str) -> EnvSpec:
    """The shop with descriptions that need escaping and wrapping, a long enum and a parameter named `class`."""
    spec = shop_spec(backend)
    categories = [f"category number {i} of the catalogue" for i in range(12)]
    entities = [
        e.model_copy(update={"fields": [*e.fields, FieldSpec(name="category", enum=categories)]})
        if e.name == "product"
        else e
        for e in spec.entities
    ]
    descriptions = ['Ends in a "quote"', 'Has """triple""" quotes and a \\ backslash\nand a newline', "long " * 60]
    tools = []
    for i, tool in enumerate(spec.tools):
        update: dict = {"description": descriptions[i % len(descriptions)]}
        if tool.name == "create_product":
            props = {**tool.parameters["properties"], "category": {"type": "string", "enum": categories}}
            update["parameters"] = {**tool.parameters, "properties": props}
        tools.append(tool.model_copy(update=update))
    odd = ToolSpec(
        name="get_product_by_sku",
        description="",
        parameters={"type": "object", "properties": {"product_id": {"type": "string"}, "class": {"type": "string"}}},
        operation=ToolOperation(kind="get", entity="product"),
    )
    return spec.model_copy(update={"entities": entities, "tools": [*tools, odd]})


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[EnvSpec, str]]]:
    out = tmp_path_factory.mktemp("tools")
    specs: dict[str, EnvSpec] = {}
    for backend in ("sqlite", "files"):
        for topic in load_catalog():
            specs[f"{topic.id}_{backend}"] = draft_environment(topic, backend=backend)[0]
        specs[f"awkward_shop_{backend}"] = _awkward_shop(backend)
    sources = {}
    for name, spec in specs.items():
        sources[name] = (spec, generate_tools(spec))
        (out / f"{name.replace('-', '_')}.py").write_text(sources[name][1])
    return out, sources


def _ruff(*args: str, where: Path) -> subprocess.CompletedProcess[str]:
    settings = ["--isolated", "--no-cache", "--line-length", str(LINE_LENGTH), "--target-version", "py311"]
    cmd = [sys.executable, "-m", "ruff", *args, *settings, str(where)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)


def test_every_tool_with_an_operation_gets_a_function(generated):
    _, sources = generated
    assert len(sources) == 2 * (len(load_catalog()) + 1)
    for name, (spec, source) in sources.items():
        tree = ast.parse(source)
        compile(tree, f"{name}.py", "exec")
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
        with_operation = {t.name for t in spec.tools if t.operation is not None}
        assert functions == with_operation - set(unsupported_tools(spec)), name
        if not name.startswith("awkward_shop"):
            assert functions == with_operation, name


def test_sources_are_already_formatted(generated):
    out, _ = generated
    result = _ruff("format", "--check", where=out)
    assert result.returncode == 0, result.stdout + result.stderr


def test_sources_pass_the_project_lint_rules(generated):
    out, _ = generated
    result = _ruff("check", "--select", LINT_RULES, "--output-format", "concise", where=out)
    assert result.returncode == 0, result.stdout[:4000] + result.stderr


def test_only_tools_are_public_callables_and_only_the_standard_library_is_imported(generated):
    _, sources = generated
    for name, (_, source) in sources.items():
        tree = ast.parse(source)
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert imported <= set(sys.stdlib_module_names), (name, imported - set(sys.stdlib_module_names))
        namespace: dict = {"__name__": "tools"}
        exec(compile(tree, f"{name}.py", "exec"), namespace)
        public = {k for k, v in namespace.items() if callable(v) and not k.startswith("_")}
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
        assert public == functions, name
