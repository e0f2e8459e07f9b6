"""A reset after tool code committed the session's transaction restores the whole seed image (a deserialize);
the session's writes after it must still be tracked, or a snapshot reports the seed's tables for tables the
session changed. sqlite 3.40 left our temp triggers pointing at the tables the deserialize freed: they stopped
firing, and dropping one crashed the process. Run in a child process: it is the worker's own code, with
tool code in it, and a crash must fail this test rather than the test run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import json, signal, sqlite3, sys
from factory.sandbox import _worker as w

src = sqlite3.connect(":memory:")
src.executescript('''
    CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, balance INTEGER);
    CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), amount INTEGER);
    INSERT INTO customers VALUES (1, 'ada', 100), (2, 'bob', 50);
    INSERT INTO orders VALUES (1, 1, 10);
''')
seed = src.serialize()
TOOLS = '''
def commit_and_begin(state):
    state.execute("INSERT INTO orders (customer_id, amount) VALUES (2, 6)")
    state.execute("COMMIT")
    state.execute("BEGIN")
    return "committed"

def order(state, amount):
    state.execute("INSERT INTO orders (customer_id, amount) VALUES (1, ?)", [amount])
    state.execute("UPDATE customers SET balance = balance - ? WHERE id = 1", [amount])
    return amount
'''
signal.signal(signal.SIGALRM, lambda *a: None)
signal.signal(signal.SIGPROF, lambda *a: None)
env = w.Env(TOOLS, "sqlite", seed, None)
session = w.Session(env, sys.argv[1])
out = []
for round_ in range(4):
    assert w._run_tool(session, env.namespace["commit_and_begin"], {}, 10.0, 10)[0] == "ok"
    env._seed_tables = None
    env.seed_tables()  # another connection deserializes the seed meanwhile (a snapshot does)
    session.reset()
    assert w._run_tool(session, env.namespace["order"], {"amount": 3 + round_}, 10.0, 10)[0] == "ok"
    tables, same = w._snapshot(session, {}, changed_only=True)
    out.append({"written": sorted(session.written_tables()), "sent": sorted(tables), "same": same,
                "orders": [r["amount"] for r in tables.get("orders", [])]})
    session.reset()
print(json.dumps(out))
"""


def test_writes_after_a_seed_reload_are_tracked(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    rounds = json.loads(run.stdout)
    for i, r in enumerate(rounds):
        assert r == {
            "written": ["customers", "orders"],
            "sent": ["customers", "orders"],
            "same": [],
            "orders": [10, 3 + i],
        }
