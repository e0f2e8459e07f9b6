"""Reading source files: JSON or YAML into plain data, with errors that name the file and the problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

# libyaml's safe parser when the wheel has it: Okta's 3.4 MB document parses in half the time.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SourceError(ValueError):
    """A source file that is not what it claims to be (bad syntax, missing keys, dangling references)."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")


def read_document(path: str | Path) -> Any:
    """Parse a JSON or YAML file. JSON is tried first when the text looks like JSON or the suffix says so."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SourceError(p, "no such file") from None
    except IsADirectoryError:
        raise SourceError(p, "is a directory, not a source file") from None
    except UnicodeDecodeError as e:
        raise SourceError(p, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    if not text.strip():
        raise SourceError(p, "the file is empty")
    looks_json = p.suffix.lower() == ".json" or text.lstrip()[:1] in "{["
    if looks_json:
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            if p.suffix.lower() == ".json":
                raise SourceError(p, f"invalid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    try:
        return yaml.load(text, Loader=_YAML_LOADER)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise SourceError(p, f"invalid YAML: {problem}{where}") from None
