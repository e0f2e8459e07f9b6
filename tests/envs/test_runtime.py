"""The environment runtime against hand-written bundles, misbehaving tools included."""

from __future__ import annotations

import json
import shutil
import socket
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from factory.envs.runtime import Environment, EnvironmentLoadError
from factory.sandbox import Limits, SandboxPool, capabilities

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bundles"
LIMITS = Limits(timeout_s=1.0, cpu_s=2, memory_bytes=1 << 30, grace_s=0.5)


def make_bundle(name: str, dest: Path) -> Path:
    """Copy a fixture bundle; build seed.sqlite from schema.sql (the bundle builder's job in the factory)."""
    out = dest / name
    shutil.copytree(FIXTURES / name, out)
    if (out / "schema.sql").exists():
        con = sqlite3.connect(out / "seed.sqlite")
        con.executescript((out / "schema.sql").read_text())
        con.commit()
        con.close()
    return out


@pytest.fixture(scope="module")
def pool():
    p = SandboxPool(size=2, limits=LIMITS)
    yield p
    p.close()


@pytest.fixture(scope="module")
def shop(pool, tmp_path_factory):
    with Environment.open(make_bundle("shop", tmp_path_factory.mktemp("b")), pool=pool) as env:
        yield env


def test_read_calls_errors_and_snapshot_shape(shop):
    with shop.session() as s:
        r = s.call("list_orders", {"limit": 2})
        assert r.ok and [o["id"] for o in r.value["items"]] == [1, 2]
        assert s.call("list_orders", {"status": "shipped"}).value["items"][0]["amount"] == 25
        missing = s.call("get_order", {"order_id": 99})
        assert not missing.ok and missing.error.code == "not_found" and not missing.env_error
        snap = s.snapshot()
    assert set(snap.tables) == {"customers", "orders"}
    assert [r["id"] for r in snap.tables["orders"]] == [1, 2, 3]
    assert snap.tables["customers"][0] == {"id": 1, "name": "ada", "balance": 100}


@pytest.mark.parametrize(
    ("tool", "args", "code", "needle"),
    [
        ("nope", {}, "unknown_tool", "nope"),
        ("get_order", {}, "invalid_arguments", "order_id"),
        ("get_order", {"order_id": 1, "extra": 2}, "invalid_arguments", "extra"),
        ("get_order", {"order_id": "1"}, "invalid_arguments", "order_id"),
        ("get_order", {"order_id": True}, "invalid_arguments", "order_id"),
        ("list_orders", {"status": "lost"}, "invalid_arguments", "status"),
        ("list_orders", {"limit": 0}, "invalid_arguments", "limit"),
        ("shout", {"text": "x" * (10 << 20)}, "invalid_arguments", "text"),
        ("ghost", {}, "not_implemented", "ghost"),
    ],
)
def test_bad_calls_are_agent_errors(shop, tool, args, code, needle):
    with shop.session() as s:
        r = s.call(tool, args)
        assert not r.ok and r.error.code == code and not r.env_error
        assert needle in r.error.message
        assert s.call("get_order", {"order_id": 1}).ok


def test_failed_mutations_leave_state_unchanged(shop):
    with shop.session() as s:
        before = s.snapshot()
        poor = s.call("create_order", {"customer_id": 3, "amount": 5})
        assert poor.error.code == "insufficient_balance"
        dangling = s.call("create_order", {"customer_id": 42, "amount": 5})
        assert dangling.error.code == "invalid_reference"
        referenced = s.call("delete_customer", {"customer_id": 1})
        assert referenced.error.code == "conflict"
        raised = s.call("explode")
        assert raised.error.code == "tool_exception" and "boom" in raised.error.message and not raised.env_error
        assert s.snapshot() == before
        ok = s.call("create_order", {"customer_id": 1, "amount": 30})
        assert ok.ok and ok.value["id"] == 4
        assert s.snapshot().tables["customers"][0]["balance"] == 70


def test_reset_restores_seed_and_sessions_are_isolated(shop):
    with shop.session() as a, shop.session() as b:
        seed = a.snapshot()
        assert a.call("create_order", {"customer_id": 2, "amount": 7}).ok
        assert len(a.snapshot().tables["orders"]) == 4
        assert b.snapshot() == seed
        a.reset()
        assert a.snapshot() == seed
        assert a.call("create_order", {"customer_id": 2, "amount": 7}).value["id"] == 4


@pytest.mark.parametrize(("tool", "code"), [("spin", "timeout"), ("hog", "resource_limit"), ("fork_bomb", None)])
def test_runaway_tools_are_env_errors(shop, tool, code):
    with shop.session() as s:
        before = s.snapshot()
        r = s.call(tool)
        assert not r.ok and r.env_error
        assert r.error.code == (code or r.error.code) and r.error.code in {"timeout", "resource_limit"}
        assert s.snapshot() == before
        assert s.call("get_order", {"order_id": 1}).ok


@pytest.mark.parametrize(("tool", "code"), [("crash", "worker_crashed"), ("stubborn", "timeout")])
def test_killed_worker_is_replaced_and_neighbours_keep_state(pool, shop, tool, code):
    sessions = [shop.session() for _ in range(4)]
    victim = sessions[0]
    neighbours = [s for s in sessions[1:] if s.slot is victim.slot]
    assert neighbours, "sessions spread over 2 slots: one shares the victim's worker"
    for i, s in enumerate(sessions):
        assert s.call("create_order", {"customer_id": 1, "amount": i + 1}).ok
    expected = {s.id: s.snapshot() for s in sessions}
    generation = victim.slot.generation
    r = victim.call(tool)
    assert not r.ok and r.env_error and r.error.code == code
    assert victim.slot.generation == generation + 1
    for s in sessions:
        assert s.snapshot() == expected[s.id]
        s.close()


def test_network_is_unreachable(shop):
    if not capabilities(shop.pool).network_namespace:
        pytest.skip("no network namespace on this machine (capabilities says so)")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    with shop.session() as s:
        r = s.call("connect", {"port": port})
    assert not r.ok and r.error.code == "tool_exception"
    with pytest.raises(TimeoutError):
        listener.accept()
    listener.close()


def test_writes_outside_the_state_fail(shop, tmp_path):
    if not capabilities(shop.pool).mount_isolation:
        pytest.skip("no mount isolation on this machine (capabilities says so)")
    target = Path(__file__).parent / "escaped.txt"
    with shop.session() as s:
        r = s.call("write_file", {"path": str(target)})
    # Read-only where the worker sees the path; under /tmp (a checkout there) its private scratch hides it.
    assert not r.ok and any(m in r.error.message for m in ("Read-only file system", "No such file or directory"))
    assert not target.exists()


def test_tools_do_not_see_the_orchestrator_environment(shop, monkeypatch):
    monkeypatch.setenv("FACTORY_TEST_SECRET", "hunter2")
    shop.pool.slots[0].recover()  # a fresh worker, started while the secret is set
    with shop.session() as s:
        r = s.call("read_env")
    assert r.ok
    assert "FACTORY_TEST_SECRET" not in r.value and "hunter2" not in str(r.value)


def test_files_backend_sessions(pool, tmp_path):
    with Environment.open(make_bundle("notes", tmp_path), pool=pool) as env, env.session() as a, env.session() as b:
        snap = a.snapshot()
        assert [n["note_id"] for n in snap.tables["notes"]] == [1, 2]
        assert a.call("add_note", {"title": "third"}).value == {"note_id": 3, "title": "third"}
        failed = a.call("add_then_fail", {"title": "fourth"})
        assert failed.error.code == "conflict"
        assert [n["title"] for n in a.call("list_notes").value] == ["first", "second", "third"]
        assert b.snapshot() == snap
        a.reset()
        assert a.snapshot() == snap


def test_run_program_forwards_tool_calls(shop):
    program = (
        "def solve(tools):\n"
        "    open_orders = tools.list_orders(status='open')['items']\n"
        "    made = tools.create_order(customer_id=2, amount=3)\n"
        "    bad = tools.get_order(order_id='x')\n"
        "    return {'open': len(open_orders), 'made': made['id'], 'bad': bad['error']['code']}\n"
    )
    with shop.session() as s:
        run = s.run_program(program)
        assert run.error is None
        assert run.answer == {"open": 2, "made": 4, "bad": "invalid_arguments"}
        assert [c.tool for c in run.calls] == ["list_orders", "create_order", "get_order"]
        assert len(s.snapshot().tables["orders"]) == 4


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ("def solve(tools):\n    while True:\n        pass\n", "timeout"),
        ("import os\ndef solve(tools):\n    tools.list_orders()\n    os._exit(9)\n", "worker_crashed"),
        ("def solve(tools):\n    return 1 / 0\n", "ZeroDivisionError"),
    ],
)
def test_run_program_failures(shop, source, needle):
    with shop.session() as s:
        run = s.run_program(source, timeout_s=0.5)
        assert run.answer is None and run.error is not None and needle in run.error
        assert s.call("get_order", {"order_id": 1}).ok


@pytest.mark.parametrize(
    ("tools_py", "needle"),
    [("def broken(:\n", "does not compile"), ("raise ImportError('no such thing')\n", "no such thing")],
)
def test_bad_tools_py_is_a_load_error(pool, tmp_path, tools_py, needle):
    bundle = make_bundle("shop", tmp_path)
    (bundle / "tools.py").write_text(tools_py)
    with pytest.raises(EnvironmentLoadError, match=needle):
        Environment.open(bundle, pool=pool)


def test_concurrent_threads_on_separate_sessions(shop):
    errors: list[str] = []

    def work(i: int) -> None:
        with shop.session() as s:
            for j in range(20):
                if not s.call("create_order", {"customer_id": 1, "amount": 1}).ok:
                    errors.append(f"{i}:{j}")
            if len(s.snapshot().tables["orders"]) != 23:
                errors.append(f"{i}: wrong count")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


SNEAKY_TOOLS = """

def peek_and_write(state):
    state.execute("INSERT INTO orders (customer_id, amount, status) VALUES (1, 9, 'open')")
    return "wrote"


def peek_then_fail(state):
    state.execute("INSERT INTO orders (customer_id, amount, status) VALUES (1, 9, 'open')")
    raise ValueError("read tool wrote, then failed")


def alter_then_fail(state):
    state.execute("ALTER TABLE orders ADD COLUMN note TEXT")
    return {"error": {"code": "conflict", "message": "schema changed, then refused"}}


def begin_and_leave(state):
    state.execute("BEGIN")
    state.execute("INSERT INTO orders (customer_id, amount, status) VALUES (2, 4, 'open')")
    return "left open"


def begin_then_fail(state):
    state.execute("BEGIN")
    state.execute("DELETE FROM orders")
    raise RuntimeError("rolled back")


def write_and_commit(state):
    state.execute("INSERT INTO orders (customer_id, amount, status) VALUES (2, 5, 'open')")
    state.commit()
    return "committed"


def write_commit_begin(state):
    state.execute("INSERT INTO orders (customer_id, amount, status) VALUES (2, 6, 'open')")
    state.execute("COMMIT")
    state.execute("BEGIN")
    return "committed, then began"


def rebuild_orders(state):
    state.execute("CREATE TABLE orders_copy AS SELECT * FROM orders")
    state.execute("DROP TABLE orders")
    state.execute("ALTER TABLE orders_copy RENAME TO orders")
    state.execute("INSERT INTO orders (id, customer_id, amount, status) VALUES (50, 2, 7, 'open')")
    return "rebuilt"


def lock_read_only(state):
    state.execute("PRAGMA query_only = ON")
    return "read-only now"


def like_case_on(state):
    state.execute("PRAGMA case_sensitive_like = ON")
    state.row_factory = lambda cursor, row: "not a tuple"
    return "case-sensitive LIKE"


def like_probe(state):
    return state.execute("SELECT 'ABC' LIKE 'abc'").fetchone()[0]


def commit_scratch(state):
    state.execute("CREATE TEMP TABLE scratch (x)")
    state.execute("INSERT INTO scratch VALUES (42)")
    state.execute("CREATE TEMP VIEW scratch_view AS SELECT x FROM scratch")
    state.execute("COMMIT")
    state.execute("BEGIN")
    return "committed a temp table"


def scratch_rows(state):
    names = [r[0] for r in state.execute("SELECT name FROM sqlite_temp_master WHERE name LIKE 'scratch%'")]
    return {"objects": sorted(names)}


def untrack_and_write(state):
    for (name,) in state.execute("SELECT name FROM sqlite_temp_master WHERE type = 'trigger'").fetchall():
        state.execute(f'DROP TRIGGER temp."{name}"')
    state.execute("INSERT INTO orders (customer_id, amount, status) VALUES (2, 77, 'open')")
    return "wrote untracked"


def odd_json(state):
    nested = []
    for _ in range(500):
        nested = [nested]
    return {"nested": nested, "text": "\\u00fcn\\u00ef \\u2014 \\U0001f600", "big": 10**30}
"""


@pytest.fixture(scope="module")
def sneaky(pool, tmp_path_factory):
    """The shop plus tools declared read-only (no savepoint in the worker) that write anyway."""
    bundle = make_bundle("shop", tmp_path_factory.mktemp("sneaky"))
    spec = json.loads((bundle / "env.json").read_text())
    names = ["peek_and_write", "peek_then_fail", "alter_then_fail", "begin_and_leave", "begin_then_fail", "odd_json"]
    names += ["lock_read_only", "like_case_on", "like_probe", "scratch_rows"]
    spec["tools"] += [{"name": n, "description": n, "mutates": False} for n in [*names, "write_and_commit"]]
    writers = ["write_commit_begin", "rebuild_orders", "commit_scratch", "untrack_and_write"]
    spec["tools"] += [{"name": n, "description": n} for n in writers]
    (bundle / "env.json").write_text(json.dumps(spec))
    (bundle / "tools.py").write_text((bundle / "tools.py").read_text() + SNEAKY_TOOLS)
    with Environment.open(bundle, pool=pool) as env:
        yield env


@pytest.mark.parametrize("tool", ["peek_then_fail", "alter_then_fail", "begin_then_fail", "begin_and_leave"])
def test_failed_read_tool_that_wrote_leaves_state_unchanged(sneaky, tool):
    with sneaky.session() as s:
        assert s.call("create_order", {"customer_id": 1, "amount": 30}).ok
        before = s.snapshot()
        r = s.call(tool)
        assert not r.ok and r.error.code in {"tool_exception", "conflict"}
        assert s.snapshot() == before  # rebuilt from seed + journal: the create_order is still there
        assert s.call("get_order", {"order_id": 4}).value["amount"] == 30


def test_read_tool_that_wrote_is_journaled(sneaky):
    with sneaky.session() as s:
        assert s.call("peek_and_write").value == "wrote"
        assert s.call("write_and_commit").value == "committed"  # it ended the session's transaction
        assert [t for t, _ in s.journal] == ["peek_and_write", "write_and_commit"]
        expected = s.snapshot()
        assert len(expected.tables["orders"]) == 5
        s.slot.recover()  # a replacement worker: the session is rebuilt from its journal
        assert s.snapshot() == expected
        assert s.call("create_order", {"customer_id": 1, "amount": 1}).value["id"] == 6


@pytest.mark.parametrize("tool", ["write_and_commit", "write_commit_begin", "rebuild_orders"])
def test_reset_restores_the_seed_whatever_a_tool_did_to_the_transaction(sneaky, tool):
    """A reset is a rollback of the session's own transaction; tool code that committed it, began another
    or rebuilt a table must still find the seed after a reset, and later writes in the snapshot."""
    with sneaky.session() as fresh:
        assert fresh.call("create_order", {"customer_id": 1, "amount": 3}).ok
        expected = fresh.snapshot().tables
    with sneaky.session() as s:
        assert s.call(tool).ok
        assert s.snapshot().tables["orders"] != sneaky.seed_state().tables["orders"]
        for _ in range(2):  # twice: the second reset starts from the transaction the first one opened
            s.reset()
            assert s.call("create_order", {"customer_id": 1, "amount": 3}).ok
            assert s.snapshot().tables == expected


def test_a_reset_session_behaves_as_a_new_one_whatever_tool_code_set_on_its_connection(sneaky):
    """Connection settings outlive a rollback: a reset puts back the seed's, and tool code that committed temp
    tables or views finds them gone (a snapshot shows no temp table, so they would leak into the next episode)."""
    with sneaky.session() as s:
        assert s.call("like_probe").value == 1
        assert s.call("commit_scratch").ok
        assert s.call("scratch_rows").value == {"objects": ["scratch", "scratch_view"]}
        assert s.call("like_case_on").ok and s.call("like_probe").value == "n"  # its own row factory, until the reset
        assert s.call("lock_read_only").ok
        assert not s.call("create_order", {"customer_id": 1, "amount": 3}).ok  # query_only refuses the write
        s.reset()
        assert s.call("like_probe").value == 1
        assert s.call("scratch_rows").value == {"objects": []}
        assert s.call("create_order", {"customer_id": 1, "amount": 3}).value["id"] == 4
        assert [o["amount"] for o in s.snapshot().tables["orders"]] == [10, 25, 5, 3]


def test_writes_of_tool_code_that_dropped_the_tracking_triggers_still_show(sneaky):
    with sneaky.session() as s:
        assert s.call("untrack_and_write").ok
        assert s.call("create_order", {"customer_id": 1, "amount": 3}).ok
        assert [o["amount"] for o in s.snapshot().tables["orders"]] == [10, 25, 5, 77, 3]
        s.reset()
        assert s.snapshot().tables == sneaky.seed_state().tables
        assert s.call("create_order", {"customer_id": 1, "amount": 3}).ok  # tracked again after the reset
        assert [o["amount"] for o in s.snapshot().tables["orders"]] == [10, 25, 5, 3]


def test_read_calls_are_not_journaled(sneaky):
    with sneaky.session() as s:
        for _ in range(3):
            assert s.call("get_order", {"order_id": 1}).ok
        assert not s.call("get_order", {"order_id": 99}).ok
        assert s.journal == []


def test_results_the_fast_parser_refuses_still_arrive(sneaky):
    with sneaky.session() as s:
        r = s.call("odd_json")
    # Infinity and lone surrogates are not JSON: refused as results (test_non_finite_args)
    assert r.ok and r.value["text"] == "ünï — \U0001f600" and r.value["big"] == 10**30
    depth, nested = 0, r.value["nested"]
    while nested:
        depth, nested = depth + 1, nested[0]
    assert depth == 500


def test_call_clocks_left_armed_do_not_fire_between_calls(shop):
    with shop.session() as s:
        generation = s.slot.generation
        assert s.call("get_order", {"order_id": 1}).ok
        time.sleep(LIMITS.timeout_s + 0.3)  # the call's wall-clock timer runs out while the worker waits
        assert s.call("get_order", {"order_id": 1}).ok
        assert s.slot.generation == generation
