"""Import environments released by other systems as bundles.

Agent-World release format: `environment_mix/<id>/` holds the JSON
collections and a README of rules; `environment_mix/<id>_step4_checkpoint.json` holds the tools in
`data.ToolDesignAgent.tool_schemas` as `{name, description, parameters, implementation}`, where each
implementation is the Python source of one function that finds its data through the process-wide
environment variable `MCP_DB_DIR`.

The import keeps every implementation verbatim and binds it to the session instead: the generated
`tools.py` points `MCP_DB_DIR` (and the working directory) at the session's private state directory for
the duration of one call and runs the implementation's module code afresh inside that binding, so even
a module-level `DB_DIR = os.environ[...]` sees the session's copy. The sandbox worker runs one call at a
time, which makes a process-wide variable safe to borrow; a lock in `tools.py` keeps it safe if a
runtime ever calls from threads. Rewriting the references instead would miss the many ways code reads
the environment (`os.environ[...]`, `.get`, `os.getenv`, at import or at call time).
"""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path
from typing import Any

from factory.envs.bundle import ENV_JSON, REPORT_JSON, STATE_DIR, TESTS_JSON, TOOLS_PY
from factory.lexicon import WRITE_VERBS
from factory.models import (
    EntitySpec,
    EnvSpec,
    FieldSpec,
    FieldType,
    GateReport,
    Lineage,
    TaxonomyPath,
    TestCase,
    TestExpect,
    ToolSpec,
)
from factory.naming import singular, slugify
from factory.pipeline.code_versions import cached_code_version
from factory.store import atomic_dir, hash_file, hash_value, write_json_atomic, write_text_atomic

CHECKPOINT_SUFFIX = "_step4_checkpoint.json"
GENERATOR = "import:agent-world"

# Calls that write files: methods nothing but a file or path has, and functions of os/shutil/json.
_WRITE_METHODS = {"write", "writelines", "write_text", "write_bytes", "unlink", "mkdir", "touch", "truncate"}
_WRITE_FUNCTIONS = {
    "os": {"replace", "rename", "remove", "unlink", "makedirs", "mkdir", "rmdir", "truncate", "write"},
    "shutil": {"copy", "copy2", "copyfile", "copytree", "move", "rmtree"},
    "json": {"dump"},
    "pickle": {"dump"},
}
_ENV_ERROR_CODES = {"timeout", "worker_crashed", "resource_limit"}
# Codes that mean the implementation is broken, not that it refused the input on purpose.
_BROKEN_CODES = {"tool_exception", "not_implemented", "invalid_arguments", "unknown_tool"} | _ENV_ERROR_CODES
# Record fields the tools stamp from the clock: a verifier must not compare them.
_CLOCK_FIELD = re.compile(r"(_at|_time|_timestamp)$|^timestamp$")
_LOG_COLLECTION = re.compile(r"(^|_)(logs?|audit|history|requests?_log)$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


class AgentWorldImportError(ValueError):
    """The release directory cannot be imported; the message names the file and the problem."""


def function_name(tool_name: str) -> str:
    """The Python name the release gives a tool's function (the release's own loader does the same)."""
    name = re.sub(r"[^0-9A-Za-z_]", "_", tool_name)
    return f"_{name}" if not name or name[0].isdigit() else name


# --- reading the release -------------------------------------------------------------------


def _read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError as e:
        raise AgentWorldImportError(f"{path}: missing") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise AgentWorldImportError(f"{path}: malformed JSON: {e}") from e


def _tool_schemas(checkpoint: Path, data: Any) -> list[dict[str, Any]]:
    try:
        schemas = data["data"]["ToolDesignAgent"]["tool_schemas"]
    except (KeyError, TypeError) as e:
        raise AgentWorldImportError(f"{checkpoint}: no data.ToolDesignAgent.tool_schemas") from e
    if not isinstance(schemas, list) or not schemas:
        raise AgentWorldImportError(f"{checkpoint}: data.ToolDesignAgent.tool_schemas is not a non-empty list")
    seen: set[str] = set()
    for i, s in enumerate(schemas):
        where = f"{checkpoint}: tool_schemas[{i}]"
        if not isinstance(s, dict) or not isinstance(s.get("name"), str) or not s["name"]:
            raise AgentWorldImportError(f"{where}: a tool needs a string name")
        if not isinstance(s.get("implementation"), str):
            raise AgentWorldImportError(f"{where} ({s['name']}): implementation is not Python source text")
        params = s.get("parameters") or {"type": "object", "properties": {}}
        if not isinstance(params, dict) or not isinstance(params.get("properties", {}), dict):
            raise AgentWorldImportError(f"{where} ({s['name']}): parameters is not a JSON object schema")
        fn = function_name(s["name"])
        if fn in seen:
            raise AgentWorldImportError(f"{where}: tool name {s['name']!r} repeats")
        seen.add(fn)
    return schemas


def _collections(env_dir: Path) -> dict[str, Any]:
    """Every `*.json` of the environment directory, parsed (a list of records per collection)."""
    out: dict[str, Any] = {}
    for p in sorted(env_dir.glob("*.json")):
        data = _read_json(p)
        if not isinstance(data, list | dict):
            raise AgentWorldImportError(f"{p}: a collection must be a JSON list of records (or an object)")
        out[p.stem] = data
    if not out:
        raise AgentWorldImportError(f"{env_dir}: no JSON collections")
    return out


# --- understanding the tools ---------------------------------------------------------------


def _compile_problem(source: str, fn: str) -> str | None:
    """Why an implementation cannot be bound, or None: it must compile and define `fn` at top level."""
    try:
        tree = ast.parse(source)
        compile(tree, f"<{fn}>", "exec")
    except SyntaxError as e:
        return f"implementation does not compile: SyntaxError: {e.msg} (line {e.lineno})"
    if not any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == fn for n in tree.body):
        return f"implementation defines no function named {fn!r}"
    if any(isinstance(n, ast.AsyncFunctionDef) and n.name == fn for n in tree.body):
        return f"implementation of {fn!r} is a coroutine; tools are plain functions"
    return None


def _writes_state(tree: ast.AST) -> bool:
    """Whether the source writes files: open(..., 'w'/'a'/'x'/'+'), json.dump, os.replace, Path.write_text..."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute | ast.Name):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
        if owner in _WRITE_FUNCTIONS:
            if name in _WRITE_FUNCTIONS[owner]:
                return True
        elif isinstance(func, ast.Attribute) and name in _WRITE_METHODS:
            return True
        if name == "open":
            pos = 1 if isinstance(func, ast.Name) or owner in ("io", "os", "codecs") else 0
            mode = next((k.value for k in node.keywords if k.arg == "mode"), None)
            if mode is None and len(node.args) > pos:
                mode = node.args[pos]
            if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and set(mode.value) & set("wax+"):
                return True
    return False


def infers_mutation(name: str, source: str) -> bool:
    """`mutates` of a tool: from what its implementation does, else from the verb its name starts with."""
    try:
        return _writes_state(ast.parse(source))
    except SyntaxError:
        return re.split(r"[^a-z]", name.lower())[0] in WRITE_VERBS


def _parameters(schema: dict[str, Any] | None) -> dict[str, Any]:
    params = dict(schema or {})
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    return params


def _field_type(values: list[Any]) -> tuple[FieldType, str | None]:
    seen = [v for v in values if v is not None]
    if not seen:
        return "string", None
    if all(isinstance(v, bool) for v in seen):
        return "boolean", None
    if all(isinstance(v, int) and not isinstance(v, bool) for v in seen):
        return "integer", None
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in seen):
        return "number", None
    if all(isinstance(v, str) for v in seen):
        if all(_DATE.match(v) for v in seen):
            return "date", None
        if all(_DATETIME.match(v) for v in seen):
            return "datetime", None
        return "string", None
    return "string", "json"  # lists and objects: the files backend keeps them as they are


def _primary_key(table: str, rows: list[dict[str, Any]]) -> str | None:
    """The field that identifies a record: `id`, `<entity>_id`, else the first unique `*_id` field."""
    keys = list(rows[0])
    unique = [k for k in keys if len({json.dumps(r.get(k), sort_keys=True) for r in rows}) == len(rows)]
    for candidate in ("id", f"{singular(table)}_id", f"{table}_id"):
        if candidate in unique:
            return candidate
    return next((k for k in unique if k.endswith("_id") or k.endswith("Id")), None)


def entities_from_collections(collections: dict[str, Any]) -> list[EntitySpec]:
    """An entity per collection of records, typed from the values and keyed by its id field.

    The runtime sorts snapshot rows by the primary key, and later stages read fields from here.
    """
    out: list[EntitySpec] = []
    for table, rows in collections.items():
        if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
            continue
        names: list[str] = []
        for r in rows:
            names += [k for k in r if k not in names]
        pk = _primary_key(table, rows)
        fields = []
        for n in names:
            ftype, fmt = _field_type([r.get(n) for r in rows])
            fields.append(
                FieldSpec(name=n, type=ftype, format=fmt, primary_key=n == pk, unique=n == pk, required=n == pk)
            )
        out.append(EntitySpec(name=singular(table), table=table, fields=fields, primary_key=pk or names[0]))
    return out


def bookkeeping_fields(collections: dict[str, Any]) -> list[str]:
    """State a verifier ignores: clock-stamped fields and whole log collections (they change on every call)."""
    out: list[str] = []
    for table, rows in collections.items():
        if _LOG_COLLECTION.search(table):
            out.append(f"{table}.*")
            continue
        if isinstance(rows, list):
            names = {k for r in rows if isinstance(r, dict) for k in r}
            out += [f"{table}.{n}" for n in sorted(names) if _CLOCK_FIELD.search(n)]
    return out


def _taxonomy(value: Any) -> TaxonomyPath | None:
    """The release's taxonomy when it names three levels (`{l1,l2,l3}`, a list, or `a > b > c`), else None."""
    if isinstance(value, dict) and all(value.get(k) for k in ("l1", "l2", "l3")):
        parts = [value["l1"], value["l2"], value["l3"]]
    elif isinstance(value, list) and len(value) == 3 and all(value):
        parts = value
    elif isinstance(value, str) and len(value.split(">")) == 3:
        parts = value.split(">")
    else:
        return None
    slugs = [slugify(str(p), fallback="") for p in parts]
    return TaxonomyPath(l1=slugs[0], l2=slugs[1], l3=slugs[2]) if all(slugs) else None


# --- tests from the data -------------------------------------------------------------------


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


def _records(collections: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for rows in collections.values() if isinstance(rows, list) for r in rows if isinstance(r, dict)]


def _lookup(param: str, record: dict[str, Any]) -> Any:
    """A record's value for a parameter: the field of that name, or the record's `id` for a `<thing>_id`."""
    by_norm = {_norm(k): v for k, v in record.items() if isinstance(v, str | int | float) and not isinstance(v, bool)}
    want = _norm(param)
    if want in by_norm:
        return by_norm[want]
    return by_norm.get("id") if want.endswith("id") else None


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    t = schema.get("type")
    if schema.get("enum") and value not in schema["enum"]:
        return False
    if t == "string":
        return isinstance(value, str)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return t is None


def _schema_value(schema: dict[str, Any]) -> Any:
    """A value the schema alone vouches for: its first enum value, its default, or a numeric bound."""
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    if schema.get("type") in ("integer", "number"):
        return schema.get("minimum", schema.get("maximum"))
    return None


def sample_args(tool: ToolSpec, collections: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments for a realistic call: required parameters from ONE record of the data (so an id and its
    companions name the same thing), enums from the schema. None when a required value has nothing behind it.
    """
    props: dict[str, Any] = tool.parameters.get("properties", {})
    required = [p for p in tool.parameters.get("required", []) if p in props]
    if not required:
        return {}
    best: tuple[int, dict[str, Any]] = (-1, {})
    for record in _records(collections):
        got = {p: v for p in required if (v := _lookup(p, record)) is not None and _fits(v, props[p])}
        if len(got) > best[0]:
            best = (len(got), got)
        if len(got) == len(required):
            break
    args = best[1]
    for p in required:
        if p not in args and (value := _schema_value(props[p])) is not None:
            args[p] = value
    return args if all(p in args for p in required) else None


# --- writing the bundle --------------------------------------------------------------------


def _py_string(source: str) -> str:
    """A triple-quoted literal holding `source` exactly, readable in the generated file."""
    body = source.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    literal = f'"""{body}"""' if not body.endswith('"') else f'"""{body}\\\n"""'
    if ast.literal_eval(literal) != source:
        literal = repr(source)
    return literal


_TOOLS_HEADER = '''"""Tools of the Agent-World environment {env_id} ({title}), imported by factory.envs.importers.

Each implementation is the released source, unchanged. It reads MCP_DB_DIR to find its data; `_bound`
points that variable and the working directory at this session's private state directory for one call
and runs the implementation's module code inside the binding, then puts both back.
"""

import os
import threading

_LOCK = threading.Lock()
_CODE = {{}}


def _bound(fn, source, state, params):
    code = _CODE.get(fn)
    if code is None:
        code = _CODE[fn] = compile(source, "<agent-world " + fn + ">", "exec")
    with _LOCK:
        saved_dir = os.environ.get("MCP_DB_DIR")
        saved_cwd = os.getcwd()
        os.environ["MCP_DB_DIR"] = state
        os.chdir(state)
        try:
            namespace = {{"__name__": "agent_world_" + fn}}
            exec(code, namespace)
            return namespace[fn](**params)
        finally:
            os.chdir(saved_cwd)
            if saved_dir is None:
                os.environ.pop("MCP_DB_DIR", None)
            else:
                os.environ["MCP_DB_DIR"] = saved_dir
'''


def render_tools(env_id: str, title: str, tools: list[ToolSpec], sources: dict[str, str]) -> str:
    """tools.py: one `def name(state, **params)` per bindable tool, each wrapping the released source."""
    parts = [_TOOLS_HEADER.format(env_id=env_id, title=title.replace('"', "'"))]
    for t in tools:
        if t.name not in sources:
            continue
        const = f"_SOURCE_{t.name.upper()}"
        doc = t.description.replace("\\", "\\\\").replace('"""', "'''").strip() or t.name
        parts.append(
            f"\n\n{const} = {_py_string(sources[t.name])}\n\n\n"
            f"def {t.name}(state, **params):\n"
            f'    """{doc}"""\n'
            f"    return _bound({t.name!r}, {const}, state, params)\n"
        )
    return "".join(parts)


def _probe_expectations(bundle: Path, cases: list[tuple[ToolSpec, dict[str, Any]]]) -> list[TestCase]:
    """Test cases: a read must succeed on realistic arguments; a write is run once in a fresh session and
    expected to succeed, or to refuse again with the same code when it refused on purpose (a conflict
    with the data is a legitimate answer; a crash is not)."""
    from factory.envs.runtime import Environment, EnvironmentLoadError

    out: list[TestCase] = []
    writes = [(t, a) for t, a in cases if t.mutates]
    observed: dict[str, str | None] = {}
    if writes:
        try:
            with Environment.open(bundle) as env:
                for t, args in writes:
                    with env.session() as s:
                        r = s.call(t.name, args)
                    observed[t.name] = r.error.code if r.error is not None else None
        except EnvironmentLoadError:
            observed = {}
    for t, args in cases:
        code = observed.get(t.name)
        if t.mutates and code is not None and code not in _BROKEN_CODES:
            expect = TestExpect(ok=False, error_code=code)
            name = f"{t.name}: refuses realistic arguments with {code} again"
        else:
            expect = TestExpect(ok=True)
            name = f"{t.name}: succeeds on arguments from the data"
        out.append(TestCase(tool=t.name, args=args, expect=expect, name=name))
    return out


def import_agent_world(env_dir: str | Path, out: str | Path) -> GateReport:
    """Turn `environment_mix/<id>/` (+ its step-4 checkpoint) into a gated files-backend bundle at `out`."""
    from factory.envs.gate import run_gate

    env_dir = Path(env_dir).resolve()
    if not env_dir.is_dir():
        raise AgentWorldImportError(f"{env_dir}: not a directory")
    checkpoint = env_dir.parent / f"{env_dir.name}{CHECKPOINT_SUFFIX}"
    if not checkpoint.is_file():
        raise AgentWorldImportError(f"{checkpoint}: missing (the tool schemas and implementations live there)")
    data = _read_json(checkpoint)
    schemas = _tool_schemas(checkpoint, data)
    collections = _collections(env_dir)
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}

    tools: list[ToolSpec] = []
    sources: dict[str, str] = {}
    problems: dict[str, str] = {}
    for s in schemas:
        fn = function_name(s["name"])
        source = s["implementation"]
        problem = _compile_problem(source, fn)
        if problem:
            problems[fn] = problem
        else:
            sources[fn] = source
        tools.append(
            ToolSpec(
                name=fn,
                description=str(s.get("description") or "").strip(),
                parameters=_parameters(s.get("parameters")),
                mutates=infers_mutation(fn, source),
            )
        )

    readme = next((p for p in sorted(env_dir.iterdir()) if p.is_file() and p.stem.lower() == "readme"), None)
    title = str(meta.get("name") or env_dir.name)
    spec = EnvSpec(
        id=f"agent-world-{env_dir.name}",
        title=title,
        topic_id=f"agent-world-{env_dir.name}",
        taxonomy=_taxonomy(meta.get("taxonomy")),
        description=str(meta.get("description") or title),
        backend="files",
        tools=tools,
        entities=entities_from_collections(collections),
        bookkeeping=bookkeeping_fields(collections),
        lineage=Lineage(
            stage="import_agent_world",
            code_version=cached_code_version(__name__),
            inputs={"checkpoint": hash_file(checkpoint), "collections": hash_value(collections)},
            generator=GENERATOR,
        ),
    )
    cases = [(t, a) for t in tools if (a := sample_args(t, collections)) is not None]

    with atomic_dir(Path(out)) as tmp:
        state = tmp / STATE_DIR
        state.mkdir()
        for p in sorted(env_dir.glob("*.json")):
            shutil.copyfile(p, state / p.name)
        if readme is not None:
            shutil.copyfile(readme, tmp / "README.md")
        write_json_atomic(tmp / ENV_JSON, spec)
        write_text_atomic(tmp / TOOLS_PY, render_tools(env_dir.name, title, tools, sources))
        tests = _probe_expectations(tmp, cases)
        write_json_atomic(tmp / TESTS_JSON, [c.model_dump(mode="json") for c in tests])
        report = _explain(run_gate(tmp, tests), tools, problems)
        kept = set(report.kept_tools)
        write_json_atomic(tmp / ENV_JSON, spec.model_copy(update={"tools": [t for t in spec.tools if t.name in kept]}))
        write_json_atomic(tmp / REPORT_JSON, report)
    return report


def _explain(report: GateReport, tools: list[ToolSpec], problems: dict[str, str]) -> GateReport:
    """Reasons in the importer's words, one per dropped tool: a released tool has no typed operation, so
    the gate's codegen-based wording does not apply; say why an implementation could not be bound, which
    test failed, or that the data could not fill a tool's arguments."""
    names = {t.name for t in tools}
    reasons = [r for r in report.reasons if r.split(":", 1)[0] not in names]
    by_tool = dict(report.tools)
    for t in tools:
        tr = by_tool.get(t.name)
        if t.name in problems:
            reasons.append(f"{t.name}: dropped, {problems[t.name]}")
            if tr is not None:
                by_tool[t.name] = tr.model_copy(update={"failures": [problems[t.name], *tr.failures]})
        elif tr is None:
            reasons.append(f"{t.name}: dropped, no test case (no record of the data fills its required arguments)")
        elif not tr.kept:
            first = f"; first failure: {tr.failures[0]}" if tr.failures else ""
            reasons.append(f"{t.name}: dropped, {tr.passed}/{tr.cases} tests passed{first}")
    return report.model_copy(update={"reasons": reasons, "tools": by_tool})
