"""Non-finite numbers (`1e999`, `Infinity`, `NaN`, which Python's JSON parser reads as floats) are invalid
arguments: refused before the tool runs, the state left as it was. What is not JSON never comes back either: a
result holding a non-finite number or a lone surrogate is a tool error, and an error's text is Unicode."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factory.cli import app
from factory.envs.runtime import Environment
from factory.models import EnvSpec, ToolSpec
from factory.sandbox import Limits, SandboxPool, compile_schema

PRICE = {"type": "number", "minimum": 0}
NON_FINITE = ["1e999", "-1e999", "Infinity", "-Infinity", "NaN"]

TOOLS_PY = """
def set_price(state, product_id, price, extra=None):
    state.execute("UPDATE products SET price = ? WHERE id = ?", [price, product_id])
    return {"id": product_id, "price": price}

def inflate(state, product_id):
    (price,) = state.execute("SELECT price FROM products WHERE id = ?", [product_id]).fetchone()
    state.execute("UPDATE products SET price = ? WHERE id = ?", [price * 1e308 * 10, product_id])
    return {"id": product_id, "price": price * 1e308 * 10}

def rename(state, product_id, name):
    state.execute("UPDATE products SET price = price + 1 WHERE id = ?", [product_id])
    return {"id": product_id, "name": name}

def complain(state, product_id):
    raise ValueError("no product named " + chr(0xD800) + "x")

class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no str")

def unprintable(state, product_id):
    raise Unprintable()

def long_error(state, product_id):
    return {"error": {"code": "conflict" * 50, "message": "é" * 10_000_000}}
"""


@pytest.mark.parametrize("literal", NON_FINITE)
@pytest.mark.parametrize(
    ("schema", "args", "where"),
    [
        ({"type": "object", "properties": {"price": PRICE}}, '{"price": %s}', "'price'"),
        ({"type": "object", "properties": {"price": {"type": ["number", "null"]}}}, '{"price": %s}', "'price'"),
        ({"type": "object", "properties": {"price": {"minimum": 0}}}, '{"price": %s}', "'price'"),
        ({"type": "object", "properties": {"meta": {}}}, '{"meta": {"rates": [1, %s]}}', "'meta.rates[1]'"),
        ({"type": "object", "properties": {"meta": {"type": "object"}}}, '{"meta": {"x": %s}}', "'meta.x'"),
        ({"type": "object", "properties": {"xs": {"type": "array"}}}, '{"xs": [%s]}', "'xs[0]'"),
        ({"type": "object", "additionalProperties": True}, '{"anything": %s}', "'anything'"),
    ],
)
def test_schema_refuses_non_finite_numbers(schema, args, where, literal):
    validate = compile_schema(schema)
    problem = validate(json.loads(args % literal))
    assert problem is not None and where in problem and "finite number" in problem
    assert validate(json.loads(args % "12.5")) is None


def price_bundle(root: Path) -> Path:
    out = root / "prices"
    out.mkdir()
    spec = EnvSpec(
        id="prices",
        title="Prices",
        topic_id="prices",
        description="Products with prices (test fixture).",
        tools=[
            ToolSpec(
                name="set_price",
                description="set a product's price",
                parameters={
                    "type": "object",
                    "properties": {"product_id": {"type": "integer"}, "price": PRICE, "extra": {}},
                    "required": ["product_id", "price"],
                },
                mutates=True,
            ),
            ToolSpec(
                name="inflate",
                description="overflow a product's price",
                parameters={"type": "object", "properties": {"product_id": {"type": "integer"}}, "required": []},
                mutates=True,
            ),
            ToolSpec(
                name="rename",
                description="name a product (and touch its price)",
                parameters={
                    "type": "object",
                    "properties": {"product_id": {"type": "integer"}, "name": {"type": "string"}},
                    "required": ["product_id", "name"],
                },
                mutates=True,
            ),
            *(
                ToolSpec(
                    name=name,
                    description=f"fail: {name}",
                    parameters={"type": "object", "properties": {"product_id": {"type": "integer"}}, "required": []},
                )
                for name in ("complain", "unprintable", "long_error")
            ),
        ],
    )
    (out / "env.json").write_text(spec.model_dump_json())
    (out / "tools.py").write_text(TOOLS_PY)
    with sqlite3.connect(out / "seed.sqlite") as con:
        con.execute("CREATE TABLE products (id INTEGER PRIMARY KEY, price REAL NOT NULL)")
        con.execute("INSERT INTO products VALUES (1, 9.5)")
    con.close()
    return out


@pytest.fixture(scope="module")
def pool():
    pool = SandboxPool(size=1, limits=Limits(timeout_s=2.0, cpu_s=2, memory_bytes=1 << 30, grace_s=0.5))
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def prices(pool, tmp_path_factory):
    with Environment.open(price_bundle(tmp_path_factory.mktemp("b")), pool=pool) as env:
        yield env


@pytest.mark.parametrize("literal", NON_FINITE)
@pytest.mark.parametrize("args", ['{"product_id": 1, "price": %s}', '{"product_id": 1, "price": 3, "extra": [%s]}'])
def test_runtime_refuses_non_finite_arguments_and_keeps_the_state(prices, args, literal):
    with prices.session() as s:
        before = s.snapshot()
        r = s.call("set_price", json.loads(args % literal))
        assert not r.ok and r.error.code == "invalid_arguments" and "finite number" in r.error.message
        assert s.snapshot() == before
        assert s.call("set_price", {"product_id": 1, "price": 12.5}).ok
        assert s.snapshot().tables["products"] == [{"id": 1, "price": 12.5}]


def test_a_result_holding_infinity_is_a_tool_error_and_its_write_is_undone(prices):
    """Infinity is not JSON: such a result would reach an MCP client as a document it cannot parse."""
    with prices.session() as s:
        before = s.snapshot()
        r = s.call("inflate", {"product_id": 1})
        assert not r.ok and r.error.code == "tool_exception" and "JSON" in r.error.message, r.error
        assert s.snapshot() == before


def test_a_result_holding_a_lone_surrogate_is_a_tool_error_and_its_write_is_undone(prices):
    """A lone surrogate is not Unicode: no client could decode the JSON (nor `factory call` print it)."""
    with prices.session() as s:
        before = s.snapshot()
        r = s.call("rename", {"product_id": 1, "name": "a" + chr(0xD800)})
        assert not r.ok and r.error.code == "tool_exception" and "not Unicode" in r.error.message, r.error
        assert s.snapshot() == before
        named = s.call("rename", {"product_id": 1, "name": "ünï — ok"})  # text that is Unicode comes back as it was
        assert named.ok and named.value == {"id": 1, "name": "ünï — ok"}, named


def test_an_error_message_holding_a_lone_surrogate_arrives_as_unicode(prices):
    with prices.session() as s:
        r = s.call("complain", {"product_id": 1})
        assert not r.ok and r.error.code == "tool_exception"
        assert r.error.message == "ValueError: no product named ?x"
        r.error.message.encode()  # raises on a lone surrogate


def test_tool_errors_whatever_their_text_are_the_tools_own(prices):
    """An exception that cannot be printed, or an error text of 20 MB, is still the tool's failure (not a sandbox
    crash that replaces the process), with text capped as the runtime keeps it."""
    with prices.session() as s:
        process = s.proc
        unprintable = s.call("unprintable", {"product_id": 1})
        assert unprintable.error.code == "tool_exception" and not unprintable.env_error, unprintable
        assert unprintable.error.message == "Unprintable: (its message could not be read)"
        long = s.call("long_error", {"product_id": 1})
        assert not long.ok and not long.env_error and long.error.code.startswith("conflict"), long.error.code
        assert len(long.error.code) <= 100 and long.error.message == "é" * 2000
        assert s.proc is process  # no process was replaced


def test_a_function_result_or_error_holding_a_lone_surrogate_never_comes_back_as_text(pool):
    """Verifiers and task programs run as forked functions: their values reach JSON artifacts and clients."""
    result = pool.run_function("def f():\n    return {'k': 'v' + chr(0xD800)}\n", "f", {})
    assert not result.ok and "not Unicode" in result.error.message, result
    failed = pool.run_function("def f():\n    raise ValueError('bad ' + chr(0xD800))\n", "f", {})
    assert not failed.ok and failed.error.message == "ValueError: bad ?", failed.error
    fine = pool.run_function("def f():\n    return {'k': 'ünï \U0001f600'}\n", "f", {})
    assert fine.ok and fine.value == {"k": "ünï \U0001f600"}


def test_cli_call_refuses_infinity(tmp_path):
    bundle = price_bundle(tmp_path)
    result = CliRunner().invoke(app, ["call", str(bundle), "set_price", "--args", '{"product_id": 1, "price": 1e999}'])
    assert result.exit_code == 1, result.output
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "invalid_arguments" and "'price' must be number" in error["message"]
