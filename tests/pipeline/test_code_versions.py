"""Code versions follow the code: a change to what a stage runs rebuilds its outputs and marks downstream stale."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from factory.pipeline.code_versions import code_version, module_closure, source_files
from factory.pipeline.registry import STAGES

ROOT = Path(__file__).resolve().parents[2]


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return _tree(
        tmp_path,
        {
            "factory/__init__.py": "",
            "factory/stage.py": "def run():\n    from factory.helpers.words import WORDS\n    return WORDS\n",
            "factory/helpers/__init__.py": "",
            "factory/helpers/words.py": "from . import rules\nWORDS = ['a']\nSCRIPT = 'job.py'  # run, not imported\n",
            "factory/helpers/job.py": "print('runs in a subprocess')\n",
            "factory/helpers/rules.py": "import json\nimport yaml\n",
            "factory/helpers/data/table.json": "[1]",
            "factory/other.py": "import factory.stage\n",
        },
    )


def test_closure_follows_lazy_relative_and_package_imports(tree: Path):
    assert module_closure(["factory.stage"], tree) == [
        "factory",
        "factory.helpers",
        "factory.helpers.job",
        "factory.helpers.rules",
        "factory.helpers.words",
        "factory.stage",
    ]
    files = {p.relative_to(tree).as_posix() for p in source_files(["factory.stage"], tree)}
    assert "factory/helpers/data/table.json" in files and "factory/other.py" not in files


def test_version_changes_with_the_code_it_runs_and_only_that(tree: Path):
    before = code_version(["factory.stage"], tree)
    assert code_version(["factory.stage"], tree) == before, "deterministic"
    (tree / "factory/other.py").write_text("import factory.stage\nX = 2\n")
    assert code_version(["factory.stage"], tree) == before, "a module the stage does not import"
    (tree / "factory/helpers/rules.py").write_text("import json\nimport yaml\nLIMIT = 3\n")
    after_rules = code_version(["factory.stage"], tree)
    assert after_rules != before, "a module imported two hops away"
    (tree / "factory/helpers/data/table.json").write_text("[2]")
    after_data = code_version(["factory.stage"], tree)
    assert after_data != after_rules, "a data file shipped with an imported package"
    (tree / "factory/helpers/job.py").write_text("print('changed')\n")
    assert code_version(["factory.stage"], tree) != after_data, "a script the stage runs by file name"


def test_version_changes_with_the_libraries_the_code_imports(tree: Path, monkeypatch):
    import yaml

    from factory.pipeline import code_versions

    assert code_versions.library_versions(["factory.stage"], tree) == {"PyYAML": yaml.__version__}
    before = code_version(["factory.stage"], tree)
    monkeypatch.setattr(code_versions, "version", lambda dist: "99.0")
    assert code_version(["factory.stage"], tree) != before, "an upgraded library"


def test_a_missing_module_is_a_clear_error(tree: Path):
    with pytest.raises(ModuleNotFoundError, match=r"factory\.nope"):
        code_version(["factory.nope"], tree)


def test_every_stage_has_a_version_and_stages_run_only_their_own_code():
    assert len({s.code_version for s in STAGES}) == len(STAGES)
    closures = {s.name: set(module_closure([s.module])) for s in STAGES}
    assert "factory.envs.codegen" in closures["tool_code"]
    assert "factory.envs.codegen" not in closures["databases"], "tool code changes must not rebuild databases"
    assert "factory.pipeline.build.tool_code" not in closures["tool_tests"], "stages read upstream outputs, not code"
    assert "factory.sandbox._worker" in closures["tool_tests"], "the sandbox worker script runs the tools"


_PROBE = """
import json, sys
from assets.run import run_factory
from factory.store import Store

if sys.argv[1] == "run":
    summary = run_factory(Store(), categories=["messaging"], echo=lambda line: None)
    assert summary.ok, summary.failed
elif sys.argv[1] == "tool_code":
    import dagster as dg
    from assets.definitions import defs

    with dg.DagsterInstance.get() as instance:
        job = defs.resolve_job_def("build_job")
        result = job.execute_in_process(
            instance=instance, partition_key="messaging", asset_selection=[dg.AssetKey("tool_code")]
        )
        assert result.success
else:
    import dagster as dg
    from dagster._utils.test.data_versions import get_stale_status_resolver
    from assets.definitions import all_assets
    from factory.pipeline.registry import STAGES

    with dg.DagsterInstance.get() as instance:
        resolver = get_stale_status_resolver(instance, all_assets)
        print(json.dumps({
            s.name: resolver.get_status(dg.AssetKey(s.name), None if not s.partitioned else "messaging").value
            for s in STAGES
            if s.group in ("discovery", "build", "tasks")  # one env per category: no arena round; train is apart
        }))
"""


def _probe(project: Path, home: Path, mode: str) -> str:
    env = dict(
        os.environ,
        PYTHONPATH=str(project),
        FACTORY_HOME=str(home),
        DAGSTER_HOME=str(home / "dagster"),
        FACTORY_TOPICS="team-chat",
        FACTORY_TASKS_PER_ENV="4",
    )
    proc = subprocess.run(
        [sys.executable, str(project / "probe.py"), mode],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.slow
def test_changing_a_stage_rebuilds_its_outputs_and_marks_downstream_stale(tmp_path: Path):
    project, home = tmp_path / "project", tmp_path / "home"
    for part in ("factory", "assets", "resources", "training"):
        shutil.copytree(ROOT / part, project / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(ROOT / "dagster.yaml", project / "dagster.yaml")
    (project / "probe.py").write_text(_PROBE)
    artifacts = home / "artifacts"

    _probe(project, home, "run")
    assert set(json.loads(_probe(project, home, "status")).values()) == {"FRESH"}
    databases = (artifacts / "databases/messaging/manifest.json").read_bytes()

    stage = project / "factory/pipeline/build/tool_code.py"
    original = "source = generate_tools(spec)"
    assert original in stage.read_text()
    stage.write_text(stage.read_text().replace(original, original + ' + "# a changed generator\\n"'))

    status = json.loads(_probe(project, home, "status"))
    assert {k for k, v in status.items() if v != "FRESH"} == {"tool_code"}, status

    _probe(project, home, "tool_code")
    assert "# a changed generator" in (artifacts / "tool_code/messaging/team-chat/tools.py").read_text()
    status = json.loads(_probe(project, home, "status"))
    assert {k for k, v in status.items() if v != "FRESH"} == {"tool_tests"}, status

    _probe(project, home, "run")
    assert "# a changed generator" in (artifacts / "tool_tests/messaging/team-chat/tools.py").read_text()
    assert (artifacts / "databases/messaging/manifest.json").read_bytes() == databases, "databases reused"
    assert set(json.loads(_probe(project, home, "status")).values()) == {"FRESH"}
