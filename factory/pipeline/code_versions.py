"""Code versions that follow the code: a stage's version is the content hash of the factory modules it runs.

A hand-written version is never bumped when a generator changes, so a rerun would answer changed code
with stale artifacts. Here the version of a stage is derived from the source of its module and of every
`factory` or `training` module it imports (at the top or inside a function, found by reading the source, not by
importing it) or runs as a script by file name (the sandbox worker), plus the data files shipped
inside those packages (the topic catalog) and the versions of the libraries they import.
"""

from __future__ import annotations

import ast
import hashlib
import sys
from collections.abc import Iterable
from functools import cache
from importlib.metadata import PackageNotFoundError, packages_distributions, version
from pathlib import Path

PACKAGES = ("factory", "training")  # our code: a stage closure follows imports into these
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


@cache
def _scan(module: str, path: Path, mtime_ns: int, size: int) -> tuple[frozenset[str], frozenset[str]]:
    """The module names `module` imports anywhere (relative ones made absolute) and the `.py` file names
    its string constants name; the stat arguments key the cache, so an edited file is read again."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    imports: set[str] = set()
    py_names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            imports.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            imports.add(base)
            imports.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(".py"):
            py_names.add(node.value)
    return frozenset(imports), frozenset(py_names)


def _facts(module: str, root: Path) -> tuple[Path, frozenset[str], frozenset[str]]:
    path = module_file(module, root)
    if path is None:
        raise ModuleNotFoundError(f"no module {module!r} under {root}")
    stat = path.stat()
    return path, *_scan(module, path, stat.st_mtime_ns, stat.st_size)


def imported_modules(module: str, root: Path = SOURCE_ROOT) -> set[str]:
    """The `factory` modules that `module` imports anywhere in its source, or runs as a script by file
    name (`Path(__file__).with_name("_worker.py")`), with their parent packages."""
    path, imports, py_names = _facts(module, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    scripts = {f"{package}.{n.removesuffix('.py')}" for n in py_names if "/" not in n and (path.parent / n).is_file()}
    ours = {m for m in imports | scripts if m.split(".")[0] in PACKAGES}
    modules = {m for m in ours if module_file(m, root) is not None}
    return modules | {p for m in modules for p in _parents(m)}


_distributions = cache(packages_distributions)


def library_versions(roots: Iterable[str], root: Path = SOURCE_ROOT) -> dict[str, str]:
    """The installed version of every third-party distribution the closure of `roots` imports: a library
    upgrade (Faker's word lists, say) changes outputs as surely as our own code does."""
    return _library_versions(module_closure(roots, root), root)


def _library_versions(modules: list[str], root: Path) -> dict[str, str]:
    top: set[str] = set()
    for m in modules:
        top |= {name.split(".")[0] for name in _facts(m, root)[1]}
    top -= {*PACKAGES, "", *sys.stdlib_module_names}
    mapping = _distributions()
    out: dict[str, str] = {}
    for name in sorted(top):
        for dist in mapping.get(name, []):
            try:
                out[dist] = version(dist)
            except PackageNotFoundError:
                continue
    return out


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
    return _source_files(module_closure(roots, root), root)


def _source_files(modules: list[str], root: Path) -> list[Path]:
    files: set[Path] = set()
    for m in modules:
        if m in NOT_STAGE_CODE:
            continue
        f = module_file(m, root)
        assert f is not None
        files.add(f)
        if f.name == "__init__.py":
            files.update(_data_files(f.parent))
    return sorted(files)


def code_version(roots: Iterable[str], root: Path = SOURCE_ROOT) -> str:
    """The content hash of everything `source_files` lists (relative paths and bytes) and of the
    `library_versions` it runs on."""
    modules = module_closure(roots, root)
    h = hashlib.sha256()
    for f in _source_files(modules, root):
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    for dist, v in _library_versions(modules, root).items():
        h.update(f"{dist}=={v}\0".encode())
    return h.hexdigest()[:VERSION_LENGTH]


@cache
def cached_code_version(module: str) -> str:
    """`code_version` of one module in this process (the source does not change under a running process)."""
    return code_version([module])
