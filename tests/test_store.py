from pathlib import Path

import pytest

from factory import store


def test_write_json_atomic_is_stable_and_hashes_content(tmp_path: Path):
    h1 = store.write_json_atomic(tmp_path / "a.json", {"b": 1, "a": [1, 2]})
    h2 = store.write_json_atomic(tmp_path / "a.json", {"a": [1, 2], "b": 1})
    assert h1 == h2 == store.hash_file(tmp_path / "a.json")
    assert store.read_json(tmp_path / "a.json") == {"a": [1, 2], "b": 1}
    assert not list(tmp_path.glob(".*.tmp"))


def test_atomic_dir_keeps_old_contents_on_failure(tmp_path: Path):
    target = tmp_path / "bundle"
    with store.atomic_dir(target) as d:
        (d / "x.txt").write_text("one")
    first = store.dir_content_hash(target)
    with pytest.raises(RuntimeError), store.atomic_dir(target) as d:
        (d / "x.txt").write_text("two")
        raise RuntimeError("killed")
    assert (target / "x.txt").read_text() == "one"
    assert store.dir_content_hash(target) == first == store.hash_dir(target)
    assert [p.name for p in tmp_path.iterdir()] == ["bundle"]


def test_hash_dir_ignores_mtime_and_sees_content(tmp_path: Path):
    (tmp_path / "a").write_text("x")
    h = store.hash_dir(tmp_path)
    (tmp_path / "a").touch()
    assert store.hash_dir(tmp_path) == h
    (tmp_path / "a").write_text("y")
    assert store.hash_dir(tmp_path) != h


def test_clean_stale_temps_removes_leftovers(tmp_path: Path):
    (tmp_path / ".x.json.abc.tmp").write_text("half")
    (tmp_path / ".d.abc.tmp").mkdir()
    (tmp_path / "keep.json").write_text("{}")
    assert store.clean_stale_temps(tmp_path) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["keep.json"]


def test_store_layout_follows_factory_home(factory_home: Path):
    s = store.Store()
    assert s.home == factory_home.resolve()
    assert s.artifact_dir("tasks", "commerce") == factory_home.resolve() / "artifacts" / "tasks" / "commerce"
    assert s.artifact_dir("topics") == factory_home.resolve() / "artifacts" / "topics"


def test_write_json_if_changed_skips_identical_bytes(tmp_path: Path):
    p = tmp_path / "t.json"
    h1, wrote1 = store.write_json_if_changed(p, {"a": 1})
    mtime = p.stat().st_mtime_ns
    h2, wrote2 = store.write_json_if_changed(p, {"a": 1})
    assert wrote1 and not wrote2 and h1 == h2 and p.stat().st_mtime_ns == mtime
    h3, wrote3 = store.write_json_if_changed(p, {"a": 2})
    assert wrote3 and h3 != h1
