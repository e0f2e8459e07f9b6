"""Reading source files: JSON or YAML into plain data, with errors that name the file and the problem.

Nothing is parsed without bounds: a file is at most MAX_DOCUMENT_BYTES, nests at most MAX_DEPTH levels, and
YAML aliases may add at most MAX_ALIAS_NODES nodes when expanded (a 1 KB "billion laughs" document otherwise
expands to gigabytes in whatever walks it next).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

# libyaml's safe parser when the wheel has it: Okta's 3.4 MB document parses in half the time.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_DOCUMENT_BYTES = 64 << 20
MAX_DEPTH = 200  # far past any real API document; readers downstream walk the tree recursively
MAX_ALIAS_NODES = 1_000_000  # nodes that alias expansion may add beyond those written in the file


class SourceError(ValueError):
    """A source file that is not what it claims to be (bad syntax, missing keys, dangling references)."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class _BoundedLoader(_YAML_LOADER):
    """The safe loader, refusing a composed document that is too deep or whose aliases expand too far
    before any Python object is built from it."""

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        problem = _graph_problem(node)
        if problem:
            raise yaml.YAMLError(problem)
        return self.construct_document(node)


class _Refused(Exception):
    """The node graph is over a bound (the message says which)."""


def _graph_problem(root: yaml.Node) -> str | None:
    """Depth and alias expansion of the node graph, each collection measured once (aliases share nodes):
    a tenth of the time libyaml takes to compose the document."""
    measured: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded size, height); size -1 while open
    added = 0

    def walk(node: yaml.Node, level: int) -> tuple[int, int]:
        nonlocal added
        value = node.value
        if value.__class__ is str:
            return 1, 1
        key = id(node)
        got = measured.get(key)
        if got is not None:
            if got[0] < 0:
                raise _Refused("an alias refers to a node that contains it (recursive alias)")
            if level + got[1] > MAX_DEPTH:
                raise _Refused(f"nested deeper than {MAX_DEPTH} levels")
            added += got[0]
            if added > MAX_ALIAS_NODES:
                raise _Refused(f"aliases expand to more than {MAX_ALIAS_NODES:,} nodes beyond those written")
            return got
        if level >= MAX_DEPTH:
            raise _Refused(f"nested deeper than {MAX_DEPTH} levels")
        measured[key] = (-1, 0)
        size, height, below = 1, 0, level + 1
        for child in (n for pair in value for n in pair) if isinstance(node, yaml.MappingNode) else value:
            s, h = walk(child, below)
            size += s
            if h > height:
                height = h
        got = measured[key] = (size, height + 1)
        return got

    try:
        walk(root, 0)
    except _Refused as e:
        return str(e)
    return None


def _json_depth_ok(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = v.values()
        elif not isinstance(v, list):
            continue
        if d > MAX_DEPTH:
            return False
        stack.extend((x, d + 1) for x in v if isinstance(x, dict | list))
    return True


def parse_json(text: str, path: str | Path) -> Any:
    """JSON text of the file at `path`, nested at most MAX_DEPTH levels; SourceError says what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SourceError(path, f"invalid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise SourceError(path, f"nested deeper than {MAX_DEPTH} levels") from None
    if not _json_depth_ok(data):
        raise SourceError(path, f"nested deeper than {MAX_DEPTH} levels")
    return data


def read_text(path: str | Path, max_bytes: int = MAX_DOCUMENT_BYTES) -> str:
    """A UTF-8 text file of at most `max_bytes`; SourceError names the file and the problem."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > max_bytes:
            raise SourceError(p, f"is {size / (1 << 20):.1f} MB; source files are limited to {max_bytes >> 20} MB")
        return p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise SourceError(p, "no such file") from None
    except IsADirectoryError:
        raise SourceError(p, "is a directory, not a source file") from None
    except UnicodeDecodeError as e:
        raise SourceError(p, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise SourceError(p, f"cannot be read ({e.strerror or e})") from None


def read_document(path: str | Path) -> Any:
    """Parse a JSON or YAML file. JSON is tried first when the text looks like JSON or the suffix says so."""
    p = Path(path)
    text = read_text(p)
    if not text.strip():
        raise SourceError(p, "the file is empty")
    is_json = p.suffix.lower() == ".json"
    if is_json or text.lstrip()[:1] in "{[":
        try:
            return parse_json(text, p)
        except SourceError:
            if is_json:
                raise
    try:
        return yaml.load(text, Loader=_BoundedLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise SourceError(p, f"invalid YAML: {problem}{where}") from None
    except RecursionError:
        raise SourceError(p, f"invalid YAML: nested deeper than {MAX_DEPTH} levels") from None
