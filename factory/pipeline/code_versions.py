"""Code versions that follow the code: a stage's version is the content hash of the factory modules it runs.

A hand-written version is never bumped when a generator changes, so a rerun would answer changed code
with stale artifacts. Here the version of a stage is derived from the source of its module and of every
`factory` module it imports (at the top or inside a function, found by reading the source, not by
importing it), plus the data files shipped inside those packages (the topic catalog, word lists).
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable
from functools import cache
from pathlib import Path

PACKAGE = "factory"
SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the directory holding the `factory` package
VERSION_LENGTH = 16
# Modules that name stages and compute versions, not what a stage produces: editing them (adding a
# stage, say) must not rebuild the world.
NOT_STAGE_CODE = frozenset({"factory.pipeline.registry", "factory.pipeline.code_versions"})


def module_file(module: str, root: Path = SOURCE_ROOT) -> Path | None:
    """The file of a `factory` module (`a/b.py` or `a/b/__init__.py`), or None when there is none."""
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _is_package(module: str, root: Path) -> bool:
    f = module_file(module, root)
    return f is not None and f.name == "__init__.py"


def imported_modules(module: str, root: Path = SOURCE_ROOT) -> set[str]:
    """The `factory` modules that `module` imports anywhere in its source, with their parent packages."""
    path = module_file(module, root)
    if path is None:
        raise ModuleNotFoundError(f"no module {module!r} under {root}")
    tree = ast.parse(path.read_bytes(), filename=str(path))
    package = module if _is_package(module, root) else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    ours = {m for m in found if m == PACKAGE or m.startswith(PACKAGE + ".")}
    modules = {m for m in ours if module_file(m, root) is not None}
    return modules | {p for m in modules for p in _parents(m)}


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def module_closure(roots: Iterable[str], root: Path = SOURCE_ROOT) -> list[str]:
    """Every `factory` module reachable from `roots` through imports, sorted."""
    seen: set[str] = set()
    todo = [m for r in roots for m in (*_parents(r), r)]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo.extend(imported_modules(m, root) - seen)
    return sorted(seen)


def _data_files(package_dir: Path) -> list[Path]:
    """Files shipped with a package that are not Python: its own, and those of data folders below it."""
    files = [p for p in package_dir.iterdir() if p.is_file() and p.suffix not in (".py", ".pyc")]
    for sub in package_dir.iterdir():
        if sub.is_dir() and sub.name != "__pycache__" and not (sub / "__init__.py").exists():
            files += [p for p in sub.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return files


def source_files(roots: Iterable[str], root: Path = SOURCE_ROOT) -> list[Path]:
    """The module files of the closure of `roots` (less NOT_STAGE_CODE) and the data files of its packages."""
    files: set[Path] = set()
    for m in module_closure(roots, root):
        if m in NOT_STAGE_CODE:
            continue
        f = module_file(m, root)
        assert f is not None
        files.add(f)
        if f.name == "__init__.py":
            files.update(_data_files(f.parent))
    return sorted(files)


def code_version(roots: Iterable[str], root: Path = SOURCE_ROOT) -> str:
    """The content hash of everything `source_files` lists (relative paths and bytes)."""
    h = hashlib.sha256()
    for f in source_files(roots, root):
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:VERSION_LENGTH]


@cache
def cached_code_version(module: str) -> str:
    """`code_version` of one module in this process (the source does not change under a running process)."""
    return code_version([module])
