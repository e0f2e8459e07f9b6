"""Source documents are read within bounds: size, nesting depth and YAML alias expansion, each refusal naming
the file and the problem."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factory.cli import app
from factory.topics import SourceError, load_source
from factory.topics.documents import MAX_DEPTH, read_document

REPO = Path(__file__).resolve().parents[2]


def alias_bomb(path: Path) -> Path:
    """A ~500-byte OpenAPI document whose aliases expand nine levels of nine: 387 million nodes."""
    lines = [
        "openapi: 3.0.0",
        "info: {title: bomb, version: '1'}",
        "x-a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]",
    ]
    prev = "a"
    for name in "bcdefghi":
        lines.append(f"x-{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
        prev = name
    lines.append("paths: {/x: {get: {responses: {'200': {description: ok, x-bomb: *i}}}}}")
    path.write_text("\n".join(lines) + "\n")
    return path


# The peak is the process's high-water RSS (VmHWM: ru_maxrss would carry pytest's own peak over the exec).
PROBE = """
import json, re, resource, sys, time
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # a regression fails here, not in the machine's swap
from factory.topics import SourceError, load_source
start = time.perf_counter()
try:
    load_source(sys.argv[1])
    error = None
except SourceError as e:
    error = str(e)
seconds = time.perf_counter() - start
hwm_kb = int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1))
print(json.dumps({"s": seconds, "error": error, "peak_mb": hwm_kb / 1024}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak RSS from /proc")
def test_alias_bomb_is_refused_within_a_second_and_100_mb(tmp_path):
    bomb = alias_bomb(tmp_path / "bomb.yaml")
    assert bomb.stat().st_size < 1024
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(bomb)], capture_output=True, text=True, timeout=30, cwd=REPO, check=True
    )
    probe = json.loads(out.stdout)
    assert probe["error"] is not None and str(bomb) in probe["error"] and "aliases expand" in probe["error"]
    assert probe["s"] < 1.0, probe
    assert probe["peak_mb"] < 100, probe


def test_a_few_aliases_still_load(tmp_path):
    p = tmp_path / "anchors.yaml"
    p.write_text(
        "openapi: 3.0.0\ninfo: {title: Pets, version: '1'}\n"
        "x-page: &page [{name: limit, in: query, schema: {type: integer}}]\n"
        "paths:\n  /pets: {get: {operationId: listPets, parameters: *page, responses: {'200': {description: ok}}}}\n"
        "  /toys: {get: {operationId: listToys, parameters: *page, responses: {'200': {description: ok}}}}\n"
    )
    data = read_document(p)
    assert data["paths"]["/toys"]["get"]["parameters"][0]["name"] == "limit"
    assert {t.name for t in load_source(p)[0].tools} >= {"list_pets", "list_toys"}


def test_recursive_alias_is_refused(tmp_path):
    p = tmp_path / "loop.yaml"
    p.write_text("openapi: 3.0.0\nx-loop: &loop [1, *loop]\n")
    with pytest.raises(SourceError, match="recursive alias") as e:
        read_document(p)
    assert e.value.path == str(p)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.json", "[" * 100_000 + "]" * 100_000),
        ("deep-flow.yaml", "a: " + "[" * 100_000 + "]" * 100_000),
        ("deep-json.yaml", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        (
            "deep-block.yaml",
            "".join("  " * i + f"k{i}:\n" for i in range(MAX_DEPTH + 5)) + "  " * (MAX_DEPTH + 5) + "x\n",
        ),
        ("deep-alias.yaml", "a: &a " + "[" * 120 + "]" * 120 + "\nb: " + "[" * 100 + "*a" + "]" * 100 + "\n"),
    ],
)
def test_deep_nesting_is_refused(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(SourceError, match="nest") as e:
        read_document(p)
    assert e.value.path == str(p)


def test_nesting_within_the_bound_loads(tmp_path):
    p = tmp_path / "nested.json"
    depth = MAX_DEPTH - 1
    p.write_text("[" * depth + "]" * depth)
    value = read_document(p)
    for _ in range(depth - 1):
        (value,) = value
    assert value == []


@pytest.mark.parametrize("name", ["latin1.json", "latin1.yaml"])
def test_non_utf8_source_is_refused(tmp_path, name):
    p = tmp_path / name
    p.write_bytes('{"openapi": "3.0.0", "info": {"title": "Caf\u00e9"}}'.encode("latin-1"))
    with pytest.raises(SourceError, match="not UTF-8 text") as e:
        read_document(p)
    assert e.value.path == str(p)


def test_oversized_source_is_refused_before_reading(tmp_path):
    p = tmp_path / "huge.json"
    with p.open("wb") as f:
        f.truncate(65 << 20)  # sparse: the size is all that is looked at
    with pytest.raises(SourceError, match="limited to 64 MB") as e:
        read_document(p)
    assert e.value.path == str(p)


def test_cli_prints_the_refusal_without_a_traceback(tmp_path):
    bomb = alias_bomb(tmp_path / "bomb.yaml")
    result = CliRunner().invoke(app, ["topics", "--source", str(bomb)])
    assert result.exit_code == 2
    assert f"error: {bomb}: invalid YAML: aliases expand" in result.output
    assert "Traceback" not in result.output
