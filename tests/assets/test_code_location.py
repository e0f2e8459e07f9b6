"""`dagster` and `dg` find the code location from pyproject.toml alone, run from the project root."""

import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("cmd", "expected"),
    [
        (["dagster", "definitions", "validate"], "passed validation"),
        (["dg", "list", "defs"], "verifier_audit"),
    ],
)
def test_tools_find_the_code_location_without_flags(cmd: list[str], expected: str, factory_home: Path):
    result = subprocess.run(
        [str(BIN / cmd[0]), *cmd[1:]], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert expected in result.stdout + result.stderr
