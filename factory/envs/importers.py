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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from factory.envs.bundle import ENV_JSON, REPORT_JSON, STATE_DIR, TESTS_JSON, TOOLS_PY
from factory.lexicon import WRITE_VERBS
from factory.models import (
    EntitySpec,
    EnvSpec,
    FieldSpec,
    FieldType,
    GateReport,
    Lineage,
    Model,
    TaxonomyPath,
    TestCase,
    TestExpect,
    ToolReport,
    ToolSpec,
)
from factory.naming import singular, slugify, snake_case, split_words
from factory.pipeline.code_versions import cached_code_version
from factory.store import atomic_dir, hash_file, hash_value, write_json_atomic, write_text_atomic
from factory.verify.state import ColumnFilter

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


def released_tools(checkpoint: Path) -> list[ToolSpec]:
    """Every tool the release's checkpoint declares, named as the release's loader names its function."""
    schemas = _tool_schemas(checkpoint, _read_json(checkpoint))
    return [
        ToolSpec(
            name=function_name(s["name"]),
            description=str(s.get("description") or "").strip(),
            parameters=_parameters(s.get("parameters")),
            mutates=infers_mutation(function_name(s["name"]), s["implementation"]),
        )
        for s in schemas
    ]


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


def _is_write_call(node: ast.AST) -> bool:
    """Whether one call writes files: open(..., 'w'/'a'/'x'/'+'), json.dump, os.replace, Path.write_text..."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute | ast.Name):
        return False
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


def _own_nodes(body: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of a body, not descending into the functions and classes it defines."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
                stack.append(child)
    return out


def _writes_state(tree: ast.AST, entry: str | None = None) -> bool:
    """Whether running `entry` (or, without one, any code of the module) can write files.

    A helper that writes (the release's `_save`, defined in every tool) counts only where it is called:
    the release defines it in read tools too, and a read that never calls it writes nothing.
    """
    defs: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            defs.setdefault(node.name, []).append(node)

    def called(nodes: list[ast.AST]) -> set[str]:
        return {n.func.id for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)} | {
            n.func.attr for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        }

    def writes(nodes: list[ast.AST], seen: set[str]) -> bool:
        if any(_is_write_call(n) for n in nodes):
            return True
        for name in called(nodes) - seen:
            seen.add(name)
            if any(writes(_own_nodes(d.body), seen) for d in defs.get(name, [])):
                return True
        return False

    module_body = tree.body if isinstance(tree, ast.Module) else []
    top = _own_nodes(module_body)
    if entry is not None and entry in defs:
        return writes(top, {entry}) or any(writes(_own_nodes(d.body), {entry}) for d in defs[entry])
    if writes(top, set()):
        return True
    return any(writes(_own_nodes(d.body), {d.name}) for ds in defs.values() for d in ds)


def infers_mutation(name: str, source: str) -> bool:
    """`mutates` of a tool: from what its implementation does, else from the verb its name starts with."""
    try:
        return _writes_state(ast.parse(source), function_name(name))
    except SyntaxError:
        return name_verb(name) in WRITE_VERBS


def name_verb(name: str) -> str:
    """The verb a tool name leads with, in any casing: `searchIssues` -> search, `slack_add_reaction` -> add
    (a namespace word first is skipped); the first word when none is a known verb."""
    words = split_words(name)
    return next((w for w in words if w in WRITE_VERBS or w in _READ_VERBS), words[0] if words else "")


def _parameters(schema: dict[str, Any] | None) -> dict[str, Any]:
    params = dict(schema or {})
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    return params


def _patterns_the_data_holds(params: dict[str, Any], records: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The parameters without a `pattern` that a value the data holds for them breaks: the released code does
    not check it (DynamoDB's `table_id` pattern wants 17 characters, the tables' ULIDs have 26; seeded read
    requests are `req_...` where the pattern says `rrq_...`), and the argument check must not refuse the data's
    own ids."""
    props = params.get("properties") or {}
    loosened = {}
    for name, schema in props.items():
        pattern = schema.get("pattern") if isinstance(schema, dict) else None
        if not isinstance(pattern, str):
            continue
        held = [v for table, r in records if isinstance(v := _lookup(name, r, table), str)]
        try:
            broken = not all(re.search(pattern, v) for v in held)
        except re.error:
            broken = True  # a pattern Python cannot read is no check the argument check can make
        if broken:
            loosened[name] = {k: v for k, v in schema.items() if k != "pattern"}
    return {**params, "properties": {**props, **loosened}} if loosened else params


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
    for table, data in collections.items():
        keyed = isinstance(data, dict)
        rows = _keyed_rows(table, data) if keyed else data
        if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
            continue
        names: list[str] = []
        for r in rows:
            names += [k for k in r if k not in names]
        pk = KEY_FIELD if keyed else _primary_key(table, rows)
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
    for table, data in collections.items():
        if _LOG_COLLECTION.search(table):
            out.append(f"{table}.*")
            continue
        names = {k for _, r in collection_records({table: data}) for k in r if k != KEY_FIELD}
        out += [f"{table}.{n}" for n in sorted(names) if _CLOCK_FIELD.search(n)]
    return out


def _taxonomy(value: Any) -> TaxonomyPath | None:
    """The release's taxonomy when it names three levels, else None.

    The release writes `{L1_id, L1_name, L2_id, L2_name, L3_name}` (with `_zh` twins); `{l1, l2, l3}`, a
    list of three or `a > b > c` are read too.
    """
    parts: list[Any] | None = None
    if isinstance(value, dict):
        for keys in (("L1_name", "L2_name", "L3_name"), ("l1", "l2", "l3"), ("L1", "L2", "L3")):
            if all(value.get(k) for k in keys):
                parts = [value[k] for k in keys]
                break
    elif isinstance(value, list) and len(value) == 3 and all(value):
        parts = value
    elif isinstance(value, str) and len(value.split(">")) == 3:
        parts = value.split(">")
    if parts is None:
        return None
    slugs = [slugify(str(p), fallback="") for p in parts]
    return TaxonomyPath(l1=slugs[0], l2=slugs[1], l3=slugs[2]) if all(slugs) else None


# --- tests from the data -------------------------------------------------------------------


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


KEY_FIELD = "__key__"  # where a record of a keyed collection carries its key (the sandbox snapshot names it too)
_QUERY_PARAM = re.compile(r"^(q|query|search|search_query|keywords?|term|text|phrase)$")
_CREDENTIAL_PARAM = re.compile(r"(api_?key|token|secret|password|passwd|credential|auth)", re.I)
# Parameters whose value is prose the caller words (a note, a cancel reason), not a value the data holds.
FREE_TEXT_PARAM = re.compile(r"(message|content|body|comment|note|reason|description|prompt|summary)s?$")


def collection_records(collections: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(collection, record) for every record: a list's items, a keyed object's values (their key under
    `__key__`), or a single state object as one record."""
    out: list[tuple[str, dict[str, Any]]] = []
    for table, data in collections.items():
        if isinstance(data, list):
            out += [(table, r) for r in data if isinstance(r, dict)]
        elif _is_keyed(data):
            out += [(table, {**v, KEY_FIELD: k}) for k, v in data.items()]
        elif isinstance(data, dict) and data:
            out.append((table, data))
    return out


def _keyed_rows(table: str, data: dict[str, Any]) -> list[dict[str, Any]]:
    """An object collection as the sandbox snapshots it: a row per record of a keyed object, its key under
    KEY_FIELD; a single state object as one row keyed by the collection's name."""
    if _is_keyed(data):
        return [{KEY_FIELD: k, **v} for k, v in data.items()]
    return [{KEY_FIELD: table, **data}] if data else []


def _is_keyed(data: Any) -> bool:
    """An object keyed by identifier (every value a record); the sandbox snapshots it as one row per record."""
    return isinstance(data, dict) and bool(data) and all(isinstance(v, dict) for v in data.values())


def sampling_records(collections: dict[str, Any], depth: int = 3) -> list[tuple[str, dict[str, Any]]]:
    """The collections' records and the records nested in them, each under the name of the list that holds
    it: a `world.json` keyed by system keeps its employees in `world["bamboohr"]["employees"]`, and an
    `employee_id` argument must be found there."""
    out = collection_records(collections)
    frontier = list(out)
    for _ in range(depth):
        nested = [
            (field, item)
            for _, record in frontier
            for field, value in record.items()
            if isinstance(value, list)
            for item in value
            if isinstance(item, dict)
        ]
        out += nested
        frontier = nested
    return out


def _owner(param: str, table: str) -> bool:
    """Whether `table` is the collection a `<thing>_id` parameter names (`paper_id` -> papers)."""
    thing = _norm(re.sub(r"_?(id|ids|key)$", "", param, flags=re.I))
    t = _norm(table)
    return bool(thing) and (thing in (t, _norm(singular(table))) or t.endswith(thing) or t.endswith(thing + "s"))


def _scalars(record: dict[str, Any]) -> dict[str, Any]:
    return {_norm(k): v for k, v in record.items() if isinstance(v, str | int | float) and not isinstance(v, bool)}


def _lookup(param: str, record: dict[str, Any], table: str | None = None) -> Any:
    """A record's value for a parameter: the field of that name; for a `<thing>_id`, the record's `id` (or
    key) only when the record is one of that thing's (an author's id is no paper id); for a `<thing>_<field>`
    (`message_ts`), that field of one of that thing's records."""
    by_norm = _scalars(record)
    want = _norm(param)
    if want in by_norm:
        return by_norm[want]
    if not want.endswith(("id", "name")) and want + "name" in by_norm:  # `collection` -> its `collection_name`
        return by_norm[want + "name"]
    if want.endswith("id") and (table is None or _owner(param, table)):
        return by_norm.get("id", by_norm.get(_norm(KEY_FIELD)))
    thing, _, field = param.rpartition("_")
    if thing and table is not None and _owner(thing + "_id", table):  # `message_ts` -> a message's `ts`
        return by_norm.get(_norm(field))
    return None


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    t = schema.get("type")
    if isinstance(t, list):
        return any(_fits(value, {**schema, "type": x}) for x in t)
    if schema.get("enum") and value not in schema["enum"]:
        return False
    if t == "string":
        return isinstance(value, str)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "array":
        return isinstance(value, list)
    if t == "object":
        return isinstance(value, dict)
    return t is None


def _schema_value(schema: dict[str, Any]) -> Any:
    """A value the schema alone vouches for: its first enum value, its default, or a numeric bound."""
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    if schema.get("type") in ("integer", "number"):
        return schema.get("minimum", schema.get("maximum"))
    return None


def _first_word(records: list[tuple[str, dict[str, Any]]], table: str | None) -> str | None:
    """A word of a title or name in the data: a search for it finds something."""
    for k in ("title", "name", "label", "subject", "description"):
        for t, r in records:
            v = r.get(k)
            if (table is None or t == table) and isinstance(v, str):
                words = re.findall(r"[A-Za-z][A-Za-z0-9]{3,}", v)
                if words:
                    return words[0]
    return None


_REVOKED = {"revoked", "expired", "disabled", "inactive", "suspended", "deleted", "invalid"}
_SECRET_FIELDS = ("key", "token", "secret", "value")


def _credential(param: str, records: list[tuple[str, dict[str, Any]]]) -> str | None:
    """A credential the data holds for `param`: a field of that name, else the key (or, stored only hashed, the
    id) of a record in the collection named for it (`api_key` -> `api_keys.json`'s `key`); records marked
    revoked come last."""
    want = _norm(param)
    found: list[tuple[bool, str]] = []
    for table, r in records:
        by_norm = _scalars(r)
        owner = _norm(singular(table)) in want or want in _norm(table)
        value = by_norm.get(want) or next((by_norm[f] for f in (*_SECRET_FIELDS, "id") if owner and f in by_norm), None)
        if isinstance(value, str) and value:
            found.append((str(r.get("status", "")).lower() in _REVOKED, value))
    return min(found, key=lambda f: f[0])[1] if found else None


def _record_object(param: str, schema: dict[str, Any], records: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """An object argument from ONE record that holds every property the schema requires (a record of the
    collection named for the parameter first: a `tuple` of `authz_tuples.json`); `{}` when none does."""
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    need = [p for p in schema.get("required", []) if p in props]
    for _, r in sorted(records, key=lambda tr: not _owner(param, tr[0])):
        got = {k: r[k] for k in props if k in r and isinstance(props[k], dict) and _fits(r[k], props[k])}
        if got and all(k in got for k in need):
            return got
    return {}


def _data_url(records: list[tuple[str, dict[str, Any]]]) -> str | None:
    """A web address the data holds (a session's `start_url`): a tool that looks its URL up finds it."""
    return next(
        (v for _, r in records for v in r.values() if isinstance(v, str) and re.match(r"https?://\S+$", v)), None
    )


def _plausible(param: str, schema: dict[str, Any], records: list[tuple[str, dict[str, Any]]], table: str | None) -> Any:
    """A value for a parameter the data does not hold: free text, a credential, an array, a format."""
    t = schema.get("type")
    t = next((x for x in t if x != "null"), None) if isinstance(t, list) else t
    if t == "array":
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
        for _, r in records:
            v = r.get(param)
            if isinstance(v, list) and v and all(_fits(x, items) for x in v):
                return v[:1]
        one = _schema_value(items)
        if one is None:
            one = next((r[k] for _, r in records for k in (singular(param),) if k in r and _fits(r[k], items)), None)
        if one is None:
            one = _plausible(singular(param), items, records, table) if items.get("type") else None
        return [one] if one is not None else []
    if t == "object":
        return _record_object(param, schema, records)
    if t == "boolean":
        return False
    if t not in (None, "string"):
        return None
    fmt = schema.get("format", "")
    name = snake_case(param)  # the release writes `taskDescription`, `startUrl` as often as `task_description`
    if fmt == "email" or name.endswith("email"):
        return "test.user@example.com"
    if fmt in ("uri", "url") or re.search(r"(url|uri)\d*$", name):
        return _data_url(records) or "https://example.com/item"
    if fmt == "date" or name.endswith("date"):
        return "2025-01-15"
    if fmt == "date-time":
        return "2025-01-15T09:00:00Z"
    if _CREDENTIAL_PARAM.search(name):
        found = _credential(param, records)
        if found is not None:
            return found
        return "Passw0rd!2025" if "pass" in name else f"test-{slugify(param, fallback='key')}-0001"
    if _QUERY_PARAM.match(name):
        return _first_word(records, table) or _first_word(records, None) or "test"
    if FREE_TEXT_PARAM.search(name):
        return "Checked by the import: a plain sentence of text."
    return None


def _field_value(
    param: str, schema: dict[str, Any], records: list[tuple[str, dict[str, Any]]], words: tuple[str, ...] = ()
) -> Any:
    """The first value of the data's field named like the parameter (a reaction's `name`, a `status`), else of
    a field that qualifies its name, one qualified by a word of the tool's name first (`type` of generate_chart
    -> a `chart_type`, before a `content_type`)."""
    want = _norm(param)
    found = next((v for _, r in records if (v := _scalars(r).get(want)) is not None and _fits(v, schema)), None)
    if found is not None:
        return found
    last = snake_case(param).rpartition("_")[2]
    if last != snake_case(param):  # `sourceSelector` of a drag: a record's `selector`
        found = next((v for _, r in records if (v := _scalars(r).get(last)) is not None and _fits(v, schema)), None)
        if found is not None:
            return found
    suffix = "_" + param.lower()
    qualified = [
        (k.lower()[: -len(suffix)] not in words, v)
        for _, r in records
        for k, v in r.items()
        if k.lower().endswith(suffix)
        and isinstance(v, str | int | float)
        and not isinstance(v, bool)
        and _fits(v, schema)
    ]
    return min(qualified, key=lambda q: q[0])[1] if qualified else None


def _described_value(schema: dict[str, Any], records: list[tuple[str, dict[str, Any]]]) -> Any:
    """A value of the field the parameter's description names: `actor` described as "handle like
    alice.bsky.social or DID" takes an actor's `handle`."""
    words = dict.fromkeys(_norm(w) for w in re.findall(r"[A-Za-z_]{3,}", str(schema.get("description") or "")))
    for w in words:
        found = next((v for _, r in records if (v := _scalars(r).get(w)) is not None and _fits(v, schema)), None)
        if found is not None:
            return found
    return None


def candidate_args(tool: ToolSpec, collections: dict[str, Any], limit: int = 4) -> list[dict[str, Any]]:
    """Up to `limit` distinct argument sets for realistic calls: the required parameters from ONE record
    (so an id and its companions name the same thing; a `<thing>_id` from that thing's collection), then
    the schema (enum, default, bound), then plausible values (free text, credentials, arrays, formats), then
    another record's field of the parameter's name. Records of the collection the tool's ids name come first;
    records nested in records (a keyed `world.json`'s employees) count as records of their list."""
    props: dict[str, Any] = tool.parameters.get("properties", {})
    required = [p for p in tool.parameters.get("required", []) if p in props]
    if not required:
        return [{}]
    records = sampling_records(collections)
    owned = [p for p in required if re.search(r"(_id|Id|_key)$", p)]
    home = next((t for p in owned for t in collections if _owner(p, t)), None)
    if home is None:  # a bare `id`: the collection the tool's noun (or a parameter) names (get_session -> sessions)
        nouns = [w for w in reversed(split_words(tool.name)) if w not in WRITE_VERBS and w not in _READ_VERBS]
        nouns += [snake_case(p) for p in required]
        home = next((t for w in nouns for t in collections if _owner(f"{w}_id", t)), None)
    records.sort(key=lambda tr: tr[0] != home)
    scored: list[tuple[int, int, dict[str, Any]]] = []
    for i, (table, record) in enumerate(records):
        got = {p: v for p in required if (v := _lookup(p, record, table)) is not None and _fits(v, props[p])}
        scored.append((-len(got), i, got))
    scored.sort(key=lambda x: (x[0], x[1]))
    out: list[dict[str, Any]] = []
    for _, _, got in scored or [(0, 0, {})]:
        args = dict(got)
        for p in required:
            if p not in args:
                value = _schema_value(props[p])
                if value is None:
                    value = _plausible(p, props[p], records, home)
                if value is None:
                    value = _field_value(p, props[p], records, tuple(split_words(tool.name)))
                if value is None:
                    value = _described_value(props[p], records)
                if value is not None:
                    args[p] = value
        if all(p in args for p in required) and args not in out:
            out.append(args)
        if len(out) >= limit:
            break
    return out


def sample_args(tool: ToolSpec, collections: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments for one realistic call (the first of `candidate_args`), or None when a required value has
    nothing behind it."""
    found = candidate_args(tool, collections, limit=1)
    return found[0] if found else None


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
and runs the implementation's module code inside the binding, then puts both back. During the call the
clock stands still at _NOW (datetime.now/utcnow/today, date.today, time.time), and ids and random draws
(uuid4/uuid1, the random module, secrets.token_*) come from a generator seeded by the call and the state it
meets, so a replay in a fresh session makes the same records the first run made. Error results in the
release's shapes ({{"status": "error", "message"}}, {{"error": {{...}}, ...}}, {{"error": "..."}}) become the
runtime's `{{"error": {{"code", "message"}}}}`. Everything here is reached through aliases and
`builtins`, so a tool named `exec`, `open`, `type` or `os` shadows nothing this code needs.
"""

import builtins as _builtins
import datetime as _datetime
import hashlib as _hashlib
import json as _json
import os as _os
import random as _random
import secrets as _secrets
import threading as _threading
import time as _time
import uuid as _uuid

_LOCK = _threading.Lock()
_CODE = {{}}
_NOW = _datetime.datetime.fromisoformat({now!r})  # naive, UTC
_REAL = (_datetime.datetime, _datetime.date, _time.time, _time.time_ns)
_REAL_CLOCKS = (_time.perf_counter, _time.perf_counter_ns, _time.monotonic, _time.monotonic_ns)
_REAL_DRAWS = (_uuid.uuid4, _uuid.uuid1, _secrets.token_hex, _secrets.token_urlsafe, _secrets.token_bytes, _os.urandom)
_DRAW_WORDS = ("uuid", "random", "secrets")


class _FixedDatetime(_datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        d = _NOW if tz is None else _NOW.replace(tzinfo=_datetime.timezone.utc).astimezone(tz)
        return cls(d.year, d.month, d.day, d.hour, d.minute, d.second, d.microsecond, d.tzinfo)

    @classmethod
    def utcnow(cls):
        return cls.now()

    @classmethod
    def today(cls):
        return cls.now()


class _FixedDate(_datetime.date):
    @classmethod
    def today(cls):
        return cls(_NOW.year, _NOW.month, _NOW.day)


def _fixed_time():
    return _NOW.replace(tzinfo=_datetime.timezone.utc).timestamp()


def _fixed_time_ns():
    return int(_fixed_time()) * 1_000_000_000


def _fix_clocks():
    """perf_counter and monotonic step 1 ms per reading from one start: a latency logged by a call is the same
    in every replay (a drifting one changed the state, and so the ids the next call drew)."""
    ticks = _builtins.iter(_builtins.range(1, 1 << 62))

    def seconds():
        return 1000.0 + _builtins.next(ticks) / 1000

    def nanos():
        return int(seconds() * 1_000_000_000)

    _time.perf_counter, _time.perf_counter_ns, _time.monotonic, _time.monotonic_ns = seconds, nanos, seconds, nanos


def _error_result(value):
    """The runtime's error shape for an error result in one of the release's shapes, else the value."""
    if not isinstance(value, dict):
        return value
    err = value.get("error")
    if isinstance(err, dict) and err:
        code = err.get("code") or err.get("type") or "error"
        return {{"error": {{"code": str(code), "message": str(err.get("message") or err.get("detail") or "")}}}}
    status = value.get("status")
    failed = (isinstance(status, str) and status.lower() in ("error", "failed", "failure")) or (
        value.get("success") is False and ("message" in value or "error" in value)
    )
    if isinstance(err, str) and err and (failed or len(value) <= 3):
        failed = True
    if failed:
        code = value.get("code") or value.get("error_code") or (err if isinstance(err, str) and " " not in err else "")
        message = value.get("message") or value.get("detail") or (err if isinstance(err, str) else "")
        return {{"error": {{"code": str(code or "error"), "message": str(message)}}}}
    return value


def _seed(fn, state, params):
    """The call and every byte of the state it meets: the same call on the same state draws the same values,
    a call on a changed state (a second insert) draws new ones."""
    h = _hashlib.sha256((fn + _json.dumps(params, sort_keys=True, default=str)).encode())
    for root, dirs, files in _os.walk(state):
        dirs.sort()
        for name in sorted(files):
            path = _os.path.join(root, name)
            h.update(_os.path.relpath(path, state).encode())
            with _builtins.open(path, "rb") as f:
                h.update(f.read())
    return int.from_bytes(h.digest()[:16], "big")


def _fix_draws(seed):
    """uuid, random, secrets and os.urandom draw from one generator seeded for this call (`_bound` puts them
    back)."""
    rng = _random.Random(seed)
    _random.seed(seed)
    _os.urandom = lambda n: rng.randbytes(n)
    _uuid.uuid4 = lambda: _uuid.UUID(int=rng.getrandbits(128), version=4)
    _uuid.uuid1 = lambda node=None, clock_seq=None: _uuid.UUID(int=rng.getrandbits(128), version=1)
    _secrets.token_bytes = lambda n=32: rng.randbytes(32 if n is None else n)
    _secrets.token_hex = lambda n=32: _secrets.token_bytes(n).hex()
    _secrets.token_urlsafe = lambda n=32: _builtins.__import__("base64").urlsafe_b64encode(
        _secrets.token_bytes(n)
    ).rstrip(b"=").decode()


def _bound(fn, source, state, params):
    code = _CODE.get(fn)
    if code is None:
        code = _CODE[fn] = _builtins.compile(source, "<agent-world " + fn + ">", "exec")
    draws = any(w in source for w in _DRAW_WORDS)
    with _LOCK:
        saved_dir = _os.environ.get("MCP_DB_DIR")
        saved_cwd = _os.getcwd()
        saved_random = _random.getstate()
        _os.environ["MCP_DB_DIR"] = state
        _os.chdir(state)
        _datetime.datetime, _datetime.date = _FixedDatetime, _FixedDate
        _time.time, _time.time_ns = _fixed_time, _fixed_time_ns
        _fix_clocks()
        if draws:
            _fix_draws(_seed(fn, state, params))
        try:
            namespace = {{"__name__": "agent_world_" + fn}}
            _builtins.exec(code, namespace)
            return _error_result(namespace[fn](**params))
        finally:
            _datetime.datetime, _datetime.date, _time.time, _time.time_ns = _REAL
            _time.perf_counter, _time.perf_counter_ns, _time.monotonic, _time.monotonic_ns = _REAL_CLOCKS
            _uuid.uuid4, _uuid.uuid1, _secrets.token_hex, _secrets.token_urlsafe, _secrets.token_bytes, _ = _REAL_DRAWS
            _os.urandom = _REAL_DRAWS[-1]
            _random.setstate(saved_random)
            _os.chdir(saved_cwd)
            if saved_dir is None:
                _os.environ.pop("MCP_DB_DIR", None)
            else:
                _os.environ["MCP_DB_DIR"] = saved_dir
'''

DEFAULT_NOW = "2025-01-01T12:00:00"
_NOT_NOW = re.compile(r"(expir|due|until|deadline|end|valid_to|scheduled|start|birth|publish|release)", re.I)


_EPOCH_FIELD = re.compile(r"^(ts|date|time|timestamp|internal_date)$|(_ts|_at|_time|_timestamp)$")
_EPOCH_RANGE = (946684800, 4102444800)  # 2000-01-01 .. 2100-01-01, in seconds


def _stamp(key: str, value: Any) -> str | None:
    """A record's value as the instant it was stamped at (naive UTC, seconds), or None: an ISO datetime, or an
    epoch in seconds or milliseconds (Slack's `ts`, Gmail's `internal_date`) under a timestamp-like name."""
    if _NOT_NOW.search(key):
        return None
    if isinstance(value, str) and _DATETIME.match(value):
        stamp = value[:19].replace(" ", "T")
        try:
            return datetime.fromisoformat(stamp).isoformat()
        except ValueError:
            return None
    if not _EPOCH_FIELD.search(key) or isinstance(value, bool):
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    for scale in (1, 1000):
        if _EPOCH_RANGE[0] <= seconds / scale < _EPOCH_RANGE[1]:
            return datetime.fromtimestamp(int(seconds / scale), UTC).replace(tzinfo=None).isoformat()
    return None


def clock_instant(collections: dict[str, Any]) -> str:
    """The instant the environment's clock stands at: the latest timestamp its records were stamped with
    (fields like `created_at`, `fetched_at`, epoch `ts`; not due dates or expiries), else DEFAULT_NOW.
    Cache-expiry rules then see the data as the original run did, and every replay sees the same time."""
    stamps = [s for _, r in sampling_records(collections) for k, v in r.items() if (s := _stamp(k, v))]
    return max(stamps, default=DEFAULT_NOW)


def render_tools(
    env_id: str, title: str, tools: list[ToolSpec], sources: dict[str, str], now: str = DEFAULT_NOW
) -> str:
    """tools.py: one `def name(state, **params)` per bindable tool, each wrapping the released source."""
    parts = [_TOOLS_HEADER.format(env_id=env_id, title=title.replace('"', "'"), now=now)]
    for t in tools:
        if t.name not in sources:
            continue
        const = f"_SOURCE_{t.name.upper()}"
        doc = t.description.replace("\\", "\\\\").replace('"""', "'''").strip() or t.name
        parts.append(
            f"\n\n{const} = {_py_string(sources[t.name])}\n\n\n"
            f"def {t.name}(_aw_state, /, **params):\n"
            f'    """{doc}"""\n'
            f"    return _bound({t.name!r}, {const}, _aw_state, params)\n"
        )
    return "".join(parts)


class Probe(Model):
    """What one realistic call did in a fresh session: its error code (None: it succeeded), the collections
    whose content it changed, and how."""

    args: dict[str, Any]
    code: str | None = None
    changed: list[str] = Field(default_factory=list)
    appended_only: bool = True  # every changed collection only gained records, or only moved counters
    grown: list[str] = Field(default_factory=list)  # collections that only gained records (counters aside)
    counters: list[str] = Field(default_factory=list)  # "table.field": numbers the call moved up by one


def _compared(tables: dict[str, list[Any]], cols: ColumnFilter) -> dict[str, list[Any]]:
    """Rows as a comparison sees them: a read that only stamps `last_used_at` changed nothing."""
    return {t: [cols.row(t, r) if isinstance(r, dict) else r for r in rows] for t, rows in tables.items()}


def _counted(old: list[Any], new: list[Any]) -> set[str] | None:
    """The fields a call moved up by exactly one in records it otherwise left alone (records paired by
    position, those it appended aside), or None when it changed anything else: a quota's `requests_used`."""
    if len(new) < len(old):
        return None
    moved: set[str] = set()
    for a, b in zip(old, new, strict=False):
        if a == b:
            continue
        if not isinstance(a, dict) or not isinstance(b, dict) or set(a) != set(b):
            return None
        for f in (f for f in a if a[f] != b[f]):
            x, y = a[f], b[f]
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (x, y)) or y != x + 1:
                return None
            moved.add(f)
    return moved


def call_effect(before: dict[str, list[Any]], after: dict[str, list[Any]]) -> Probe:
    """The changed collections, whether each only gained records or moved counters, and which did which."""
    probe = Probe(args={}, changed=sorted(t for t in set(before) | set(after) if before.get(t) != after.get(t)))
    for t in probe.changed:
        old, new = before.get(t, []), after.get(t, [])
        moved = _counted(old, new)
        if moved is None:
            keep = {json.dumps(r, sort_keys=True) for r in new}
            grew = len(new) > len(old) and all(json.dumps(r, sort_keys=True) in keep for r in old)
            probe.appended_only &= grew
        else:
            probe.counters += [f"{t}.{f}" for f in sorted(moved)]
            grew = len(new) > len(old)
        if grew:
            probe.grown.append(t)
    return probe


MAX_SUCCESSFUL_PROBES = 6  # calls that succeed, per tool: a tool may write on some arguments only


def probe_tools(
    bundle: Path, cases: dict[str, list[dict[str, Any]]], bookkeeping: list[str] | None = None
) -> dict[str, list[Probe]]:
    """Each tool called on its candidate arguments, each in a fresh session, in order, until
    MAX_SUCCESSFUL_PROBES succeeded; the state before and after, less the `bookkeeping` fields, shows what each
    call changed. A fetch writes only when given a ref it has not indexed: one call cannot tell. A tool whose
    bundle cannot load gets no probe."""
    from factory.envs.runtime import Environment, EnvironmentLoadError

    out: dict[str, list[Probe]] = {}
    cols = ColumnFilter(bookkeeping or ())
    try:
        with Environment.open(bundle) as env:
            for name, candidates in cases.items():
                tried = out.setdefault(name, [])
                for args in candidates:
                    with env.session() as s:
                        before = s.snapshot().tables
                        r = s.call(name, args)
                        after = s.snapshot().tables
                    effect = call_effect(_compared(before, cols), _compared(after, cols))
                    code = r.error.code if r.error is not None else None
                    tried.append(effect.model_copy(update={"args": args, "code": code}))
                    if sum(p.code is None for p in tried) >= MAX_SUCCESSFUL_PROBES:
                        break
    except EnvironmentLoadError:
        return {}
    return out


def tested_probe(tried: list[Probe]) -> Probe | None:
    """The call a tool's test repeats: its first that succeeded, else its last refusal."""
    return next((p for p in tried if p.code is None), tried[-1] if tried else None)


def judged_by_effect(tool: ToolSpec, tried: list[Probe], bookkeeping: list[str]) -> tuple[bool, list[str]]:
    """`mutates` over every call that succeeded: a write if one of them wrote; the bookkeeping they show."""
    ok = [p for p in tried if p.code is None]
    verdicts = [mutation_by_effect(tool, p, bookkeeping) for p in ok] or [mutation_by_effect(tool, None, [])]
    patterns = list(dict.fromkeys(x for _, found in verdicts for x in found))
    return any(m for m, _ in verdicts), patterns


def mutation_by_effect(tool: ToolSpec, probe: Probe | None, bookkeeping: list[str]) -> tuple[bool, list[str]]:
    """`mutates` judged by what a successful call did, and the bookkeeping patterns that effect shows.

    A read (by its name, or by its source) whose call only appended records and moved counters up by one is
    metering: the records it adds are bookkeeping ("table.+": the table's existing records still count, as a
    search job that a write cancels) and so are its counters (a key's `daily_requests_used`); the tool stays a
    read, and an extra read no longer fails a task. A call that changed only bookkeeping is a read. With no
    successful call to look at, the source's verdict stands.
    """
    if probe is None or probe.code is not None:
        return tool.mutates, []
    ignored = {b[:-2] for b in bookkeeping if b.endswith(".*")}
    logs = {b[:-2] for b in bookkeeping if b.endswith(".+")}

    def metered(table: str) -> bool:  # only what earlier reads showed to be metering: log records, counters
        counters = {c for c in probe.counters if c.rsplit(".", 1)[0] == table}
        return counters <= set(bookkeeping) and (table in logs if table in probe.grown else bool(counters))

    real = [t for t in probe.changed if t not in ignored and not metered(t)]
    verb = name_verb(tool.name)
    reads = verb not in WRITE_VERBS and (not tool.mutates or _reads_by_name(tool.name))
    if real and probe.appended_only and reads:
        grown = [f"{t}.+" for t in real if t in probe.grown]
        return False, [*grown, *(c for c in probe.counters if c.rsplit(".", 1)[0] not in ignored)]
    if real:
        return True, []
    if tool.mutates and verb in WRITE_VERBS:
        return True, []  # it changed nothing this time (same values, say); its name and source say it writes
    return False, []


_READ_VERBS = {
    "get",
    "list",
    "search",
    "find",
    "fetch",
    "lookup",
    "query",
    "read",
    "show",
    "view",
    "check",
    "describe",
    "count",
    "browse",
    "retrieve",
    "inspect",
    "preview",
    "compare",
    "calculate",
    "estimate",
}


def _reads_by_name(name: str) -> bool:
    return name_verb(name) in _READ_VERBS


def _expectations(tools: list[ToolSpec], probes: dict[str, list[Probe]]) -> list[TestCase]:
    """Test cases: a read must succeed on realistic arguments; a write is expected to succeed, or to refuse
    again with the same code when it refused on purpose (a conflict with the data is a legitimate answer;
    a crash is not)."""
    out: list[TestCase] = []
    for t in tools:
        probe = tested_probe(probes.get(t.name, []))
        if probe is None:
            continue
        code = probe.code
        if t.mutates and code is not None and code not in _BROKEN_CODES:
            expect = TestExpect(ok=False, error_code=code)
            name = f"{t.name}: refuses realistic arguments with {code} again"
        else:
            expect = TestExpect(ok=True)
            name = f"{t.name}: succeeds on arguments from the data"
        out.append(TestCase(tool=t.name, args=probe.args, expect=expect, name=name))
    return out


def _chain_args(env_dir: Path) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str]]:
    """The arguments the release's verified chains call each tool with, and the lineage input they come from:
    the probe that judges what a tool writes tries them after those the data gives, since 40% of the tools of
    a sample refuse every call made from the data alone (a dashboard id its cards need, a collection and an
    item of it). A questions file that does not read is the question import's to report; here it gives none."""
    from factory.tasks.agent_world import load_questions, questions_path

    path = questions_path(env_dir)
    if not path.is_file():
        return {}, {}
    try:
        questions = load_questions(path)
    except (ValueError, OSError, UnicodeDecodeError):
        return {}, {}
    out: dict[str, list[dict[str, Any]]] = {}
    for q in questions:
        for call in q.grading_rubric.verified_tool_chain:
            out.setdefault(function_name(call.tool), []).append(dict(call.args))
    return out, {"questions": hash_file(path)}


def _distinct(args: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return list({json.dumps(a, sort_keys=True, default=str): a for a in args}.values())


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

    records = sampling_records(collections)
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
                parameters=_patterns_the_data_holds(_parameters(s.get("parameters")), records),
                mutates=infers_mutation(fn, source),
            )
        )

    readme = next((p for p in sorted(env_dir.iterdir()) if p.is_file() and p.stem.lower() == "readme"), None)
    title = str(meta.get("name") or env_dir.name)
    chains, questions = _chain_args(env_dir)
    bookkeeping = bookkeeping_fields(collections)
    spec = EnvSpec(
        id=f"agent-world-{env_dir.name}",
        title=title,
        topic_id=f"agent-world-{env_dir.name}",
        taxonomy=_taxonomy(meta.get("taxonomy")),
        description=str(meta.get("description") or title),
        backend="files",
        argument_check="top_level",  # the released code judges its arguments itself, and takes more than declared
        tools=tools,
        entities=entities_from_collections(collections),
        bookkeeping=bookkeeping,
        lineage=Lineage(
            stage="import_agent_world",
            code_version=cached_code_version(__name__),
            inputs={"checkpoint": hash_file(checkpoint), "collections": hash_value(collections), **questions},
            generator=GENERATOR,
        ),
    )
    cases = {
        t.name: found
        for t in tools
        if t.name in sources and (found := _distinct([*candidate_args(t, collections), *chains.get(t.name, [])]))
    }

    with atomic_dir(Path(out)) as tmp:
        state = tmp / STATE_DIR
        state.mkdir()
        for p in sorted(env_dir.glob("*.json")):
            shutil.copyfile(p, state / p.name)
        if readme is not None:
            shutil.copyfile(readme, tmp / "README.md")
        write_json_atomic(tmp / ENV_JSON, spec)
        write_text_atomic(tmp / TOOLS_PY, render_tools(env_dir.name, title, tools, sources, clock_instant(collections)))
        probes = probe_tools(tmp, cases, bookkeeping)
        judged: list[ToolSpec] = []
        for t in tools:
            mutates, metering = judged_by_effect(t, probes.get(t.name, []), bookkeeping)
            bookkeeping += [p for p in metering if p not in bookkeeping]
            judged.append(t.model_copy(update={"mutates": mutates}))
        tools = judged
        spec = spec.model_copy(update={"tools": tools, "bookkeeping": bookkeeping})
        write_json_atomic(tmp / ENV_JSON, spec)
        tests = _expectations(tools, probes)
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
            else:
                by_tool[t.name] = ToolReport(cases=0, passed=0, accuracy=0.0, kept=False, failures=[problems[t.name]])
        elif tr is None:
            why = "no test case (no record of the data fills its required arguments)"
            reasons.append(f"{t.name}: dropped, {why}")
            by_tool[t.name] = ToolReport(cases=0, passed=0, accuracy=0.0, kept=False, failures=[why])
        elif not tr.kept:
            first = f"; first failure: {tr.failures[0]}" if tr.failures else ""
            reasons.append(f"{t.name}: dropped, {tr.passed}/{tr.cases} tests passed{first}")
    return report.model_copy(update={"reasons": reasons, "tools": by_tool})
