from dataclasses import replace
from pathlib import Path

from factory.pipeline.registry import DATABASES, TOOL_CODE
from factory.pipeline.runner import EnvOutcome, EnvWork, load_manifest, run_stage, summary_rows
from factory.store import Store


def _work(calls: list[str], text: str = "v1") -> list[EnvWork]:
    def build(env_id: str):
        def _b(out: Path) -> EnvOutcome:
            calls.append(env_id)
            (out / "data.txt").write_text(f"{env_id}:{text}")
            return EnvOutcome(
                env_id=env_id, kept=env_id != "b", reason=None if env_id != "b" else "planted", counts={"n": 2}
            )

        return _b

    return [EnvWork(e, {"text": text}, build(e)) for e in ("a", "b")]


def test_unchanged_inputs_reuse_everything_and_keep_the_data_version(factory_home: Path):
    store = Store()
    calls: list[str] = []
    first = run_stage(store, DATABASES, "commerce", _work(calls))
    assert calls == ["a", "b"] and first.wrote_manifest
    mtime = (store.artifact_dir("databases", "commerce") / "a" / "data.txt").stat().st_mtime_ns
    second = run_stage(store, DATABASES, "commerce", _work(calls))
    assert calls == ["a", "b"], "nothing rebuilt"
    assert second.reused == ["a", "b"] and not second.wrote_manifest
    assert second.data_version == first.data_version
    assert (store.artifact_dir("databases", "commerce") / "a" / "data.txt").stat().st_mtime_ns == mtime


def test_changed_inputs_or_code_version_rebuild(factory_home: Path):
    store = Store()
    calls: list[str] = []
    first = run_stage(store, DATABASES, "commerce", _work(calls))
    changed = run_stage(store, DATABASES, "commerce", _work(calls, "v2"))
    assert calls == ["a", "b", "a", "b"]
    assert changed.data_version != first.data_version
    run_stage(store, replace(DATABASES, module=TOOL_CODE.module), "commerce", _work(calls, "v2"))
    assert len(calls) == 6


def test_manifest_records_outcomes_and_removes_stale_envs(factory_home: Path):
    store = Store()
    run_stage(store, TOOL_CODE, "finance", _work([]))
    stale = store.artifact_dir("tool_code", "finance") / "gone"
    stale.mkdir()
    run = run_stage(store, TOOL_CODE, "finance", _work([])[:1])
    assert not stale.exists() and not (store.artifact_dir("tool_code", "finance") / "b").exists()
    m = load_manifest(store, TOOL_CODE, "finance")
    assert m is not None and m.kept == ["a"] and run.manifest == m
    assert summary_rows(m, ["n"]) == [{"environment": "a", "kept": True, "n": 2, "reason": ""}]


def test_tampered_output_is_rebuilt(factory_home: Path):
    store = Store()
    calls: list[str] = []
    run_stage(store, DATABASES, "commerce", _work(calls))
    (store.artifact_dir("databases", "commerce") / "a" / "data.txt").write_text("tampered")
    run_stage(store, DATABASES, "commerce", _work(calls))
    assert calls == ["a", "b", "a"]
