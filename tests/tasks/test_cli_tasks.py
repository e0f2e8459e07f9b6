"""`factory tasks` then `factory verify`: the round trip a user runs, through typer."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from factory.envs.runtime import Environment
from factory.tasks.cli import tasks_cmd, verify_cmd
from factory.tasks.table import read_tasks
from factory.verify.scoring import gold_trajectory

app = typer.Typer()
app.command("tasks")(tasks_cmd)
app.command("verify")(verify_cmd)
runner = CliRunner()


@pytest.fixture(scope="module")
def made(tmp_path_factory, shop_bundle):
    bundle = shop_bundle
    out = tmp_path_factory.mktemp("tasks-cli") / "tasks.parquet"
    result = runner.invoke(app, ["tasks", str(bundle), "--out", str(out), "--n", "4", "--seed", "3"])
    assert result.exit_code == 0, result.output
    return bundle, out, result.output


def trajectory_file(path, tool_calls, answer):
    path.write_text(json.dumps({"tool_calls": tool_calls, "final_answer": answer}))
    return path


def verify(bundle, table, task_id, trajectory):
    return runner.invoke(app, ["verify", str(bundle), str(table), "--task", task_id, "--trajectory", str(trajectory)])


def test_tasks_writes_the_table_and_prints_yield_and_summary(made):
    _, out, output = made
    tasks = read_tasks(out)
    assert tasks and {t.kind for t in tasks} <= {"graph", "program"}
    assert f"{len(tasks)}/4 tasks kept" in output
    assert f"kept                     {len(tasks)}" in output


def test_verify_gold_pays_one_and_noop_pays_zero(made, tmp_path):
    bundle, out, _ = made
    for task in read_tasks(out):
        with Environment.open(bundle) as env:
            gold, error = gold_trajectory(task, env.session)
        assert error is None
        calls = [c.model_dump(mode="json") for c in gold.tool_calls]
        good = verify(bundle, out, task.id, trajectory_file(tmp_path / "gold.json", calls, gold.final_answer))
        assert good.exit_code == 0, good.output
        verdict = json.loads(good.output)
        assert (verdict["reward"], verdict["passed"], verdict["task"]) == (1.0, True, task.id)
        noop = verify(bundle, out, task.id, trajectory_file(tmp_path / "noop.json", [], None))
        assert noop.exit_code == 0
        assert (json.loads(noop.output)["reward"], json.loads(noop.output)["passed"]) == (0.0, False)


def test_bad_inputs_exit_2_with_a_message(made, tmp_path):
    bundle, out, _ = made
    task_id = read_tasks(out)[0].id
    ok_traj = trajectory_file(tmp_path / "t.json", [], "x")

    unknown = verify(bundle, out, "graph-000000000000", ok_traj)
    assert unknown.exit_code == 2 and "no task 'graph-000000000000'" in unknown.output

    malformed = tmp_path / "bad.json"
    malformed.write_text('{"tool_calls": [{"tool": "get_product", "args": {}}], "final_answer": ')
    bad = verify(bundle, out, task_id, malformed)
    assert bad.exit_code == 2 and "not a trajectory" in bad.output

    wrong_shape = tmp_path / "shape.json"
    wrong_shape.write_text('{"calls": []}')
    shaped = verify(bundle, out, task_id, wrong_shape)
    assert shaped.exit_code == 2 and "not a trajectory" in shaped.output

    not_bundle = verify(tmp_path, out, task_id, ok_traj)
    assert not_bundle.exit_code == 2 and "not an environment bundle" in not_bundle.output

    not_table = verify(bundle, ok_traj, task_id, ok_traj)
    assert not_table.exit_code == 2 and "not a parquet tasks table" in not_table.output

    bad_kind = runner.invoke(app, ["tasks", str(bundle), "--out", str(tmp_path / "x.parquet"), "--kind", "walks"])
    assert bad_kind.exit_code == 2 and "--kind must be graph, program or both" in bad_kind.output
    assert not (tmp_path / "x.parquet").exists()

    tasks_out = ["tasks", str(bundle), "--out", str(tmp_path / "x.parquet")]
    bad_level = runner.invoke(app, [*tasks_out, "--difficulty", "brutal"])
    assert bad_level.exit_code == 2 and "--difficulty: level must be one of easy, medium, hard" in bad_level.output
    bad_knob = runner.invoke(app, [*tasks_out, "--pages", "0"])
    assert bad_knob.exit_code == 2 and "bad difficulty knob" in bad_knob.output
    bad_variable = runner.invoke(app, tasks_out, env={"FACTORY_DIFFICULTY": "brutal"})
    assert bad_variable.exit_code == 2 and "FACTORY_DIFFICULTY must be one of" in bad_variable.output
    assert not (tmp_path / "x.parquet").exists()


def test_tasks_at_a_difficulty_report_depth_and_shortfalls(shop_bundle, tmp_path):
    out = tmp_path / "hard.parquet"
    result = runner.invoke(app, ["tasks", str(shop_bundle), "--out", str(out), "--n", "2", "--difficulty", "hard"])
    assert result.exit_code == 0, result.output
    tasks = read_tasks(out)
    assert tasks and all(t.difficulty.level == "hard" and t.gold_calls >= 1 for t in tasks)
    assert "difficulty hard: gold calls mean" in result.output
    easy = runner.invoke(app, ["tasks", str(shop_bundle), "--out", str(out), "--n", "2", "--difficulty", "easy"])
    assert easy.exit_code == 0 and all(t.difficulty.level == "easy" for t in read_tasks(out))


def verify_batch(bundle, table, lines_file):
    return runner.invoke(app, ["verify", str(bundle), str(table), "--trajectories", str(lines_file)])


def test_verify_batch_scores_every_line_in_one_go(made, tmp_path):
    bundle, out, _ = made
    tasks = read_tasks(out)
    lines = []
    with Environment.open(bundle) as env:
        for task in tasks:
            gold, _ = gold_trajectory(task, env.session)
            calls = [c.model_dump(mode="json") for c in gold.tool_calls]
            lines.append({"task": task.id, "tool_calls": calls, "final_answer": gold.final_answer})
            lines.append({"task": task.id, "tool_calls": [], "final_answer": None})
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")  # a trailing blank line is fine
    result = verify_batch(bundle, out, path)
    assert result.exit_code == 0, result.output
    verdicts = [json.loads(line) for line in result.stdout.splitlines()]
    assert [v["task"] for v in verdicts] == [line["task"] for line in lines]
    assert [(v["reward"], v["passed"]) for v in verdicts] == [(1.0, True), (0.0, False)] * len(tasks)
    assert all(set(v) == {"task", "reward", "passed", "score", "checks"} for v in verdicts)


def test_verify_batch_checks_every_line_before_scoring_any(made, tmp_path):
    bundle, out, _ = made
    task_id = read_tasks(out)[0].id
    path = tmp_path / "runs.jsonl"
    good = json.dumps({"task": task_id, "tool_calls": [], "final_answer": "x"})
    path.write_text(
        "\n".join(
            [
                good,
                '{"task": "' + task_id + '", "final_answer": ',
                json.dumps({"tool_calls": []}),
                json.dumps({"task": "graph-000000000000"}),
                json.dumps({"task": task_id, "calls": []}),
                good,
            ]
        )
    )
    result = verify_batch(bundle, out, path)
    assert result.exit_code == 2
    assert result.stdout == ""  # nothing scored
    assert "nothing scored" in result.output
    assert f"{path}:2: not JSON" in result.output
    assert f'{path}:3: not a trajectory (needs "task"' in result.output
    assert f"{path}:4: no task 'graph-000000000000'" in result.output
    assert f"{path}:5: not a trajectory (Extra inputs are not permitted at calls)" in result.output
    assert f"{path}:1:" not in result.output and f"{path}:6:" not in result.output


def test_verify_takes_one_form_or_the_other(made, tmp_path):
    bundle, out, _ = made
    task_id = read_tasks(out)[0].id
    traj = trajectory_file(tmp_path / "t.json", [], "x")
    both = runner.invoke(
        app,
        ["verify", str(bundle), str(out), "--task", task_id, "--trajectory", str(traj), "--trajectories", str(traj)],
    )
    neither = runner.invoke(app, ["verify", str(bundle), str(out)])
    half = runner.invoke(app, ["verify", str(bundle), str(out), "--task", task_id])
    for r in (both, neither, half):
        assert r.exit_code == 2 and "give either --task ID --trajectory FILE, or --trajectories FILE.jsonl" in r.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    none = verify_batch(bundle, out, empty)
    assert none.exit_code == 2 and "no trajectories" in none.output
