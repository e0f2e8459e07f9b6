"""The gate, through the real runtime: compile check, per-tool accuracy, reasons for everything dropped."""

from __future__ import annotations

from pathlib import Path

from factory.envs.codegen import generate_tools
from factory.envs.gate import check_case, matches, run_gate
from factory.envs.testgen import generate_tests
from factory.models import TestCase, ToolError, ToolResult
from factory.models import TestExpect as Expect

from .conftest import shop_rows, shop_spec, write_bundle


def test_correct_shop_is_kept_on_both_backends(backend: str, tmp_path: Path):
    spec = shop_spec(backend)
    bundle = write_bundle(spec, shop_rows(), tmp_path / "shop")
    report = run_gate(bundle, generate_tests(spec, shop_rows(), seed=0))
    assert report.compiled and report.kept
    assert set(report.kept_tools) == {t.name for t in spec.tools if t.operation}
    assert all(r.accuracy == 1.0 and r.kept for r in report.tools.values())
    assert report.reasons == ["contact_support: dropped, no code generated (no operation was inferred for this tool)"]


def test_syntax_error_in_tools_py_is_not_compiled_and_not_kept(tmp_path: Path):
    spec = shop_spec()
    broken = generate_tools(spec).replace("def get_product(", "def get_product((", 1)
    bundle = write_bundle(spec, shop_rows(), tmp_path / "shop", tools_source=broken)
    report = run_gate(bundle, generate_tests(spec, shop_rows(), seed=0))
    assert report.compiled is False and report.kept is False
    assert report.compile_error and report.kept_tools == [] and report.tools == {}
    assert "does not load" in report.reasons[0]


def test_import_error_is_not_compiled(tmp_path: Path):
    spec = shop_spec()
    source = "import no_such_module_anywhere\n" + generate_tools(spec)
    report = run_gate(write_bundle(spec, shop_rows(), tmp_path / "shop", tools_source=source), [])
    assert report.compiled is False and not report.kept


def test_tool_wrong_on_purpose_is_dropped_and_the_rest_kept(tmp_path: Path):
    spec = shop_spec()
    source = generate_tools(spec)
    # get_product answers with the first product whatever the id: wrong for most ids, right for unknown ones.
    wrong = source.replace(
        '    return _find(db, "products", product_id, "product")\n',
        '    return db.select("products")[0] if product_id != "does-not-exist-0" '
        'else _find(db, "products", product_id, "product")\n',
        1,
    )
    assert wrong != source
    cases = generate_tests(spec, shop_rows(), seed=0)
    cases = [c for c in cases if c.tool != "get_product"] + [
        TestCase(tool="get_product", args={"product_id": pid}, expect=Expect(match={"id": pid}), name=pid)
        for pid in ("pro_0002", "pro_0003", "pro_0004")
    ]
    report = run_gate(write_bundle(spec, shop_rows(), tmp_path / "shop", tools_source=wrong), cases)
    get = report.tools["get_product"]
    assert get.accuracy <= 0.5 and not get.kept and get.failures
    assert "get_product" not in report.kept_tools and report.kept
    assert any(r.startswith("get_product: dropped") for r in report.reasons)


def test_threshold_is_strict_and_untested_tools_are_dropped(tmp_path: Path):
    spec = shop_spec()
    bundle = write_bundle(spec, shop_rows(), tmp_path / "shop")
    ok = TestCase(tool="get_product", args={"product_id": "pro_0001"}, expect=Expect(match={"stock": 3}))
    bad = TestCase(tool="get_product", args={"product_id": "pro_0001"}, expect=Expect(match={"stock": 4}))
    report = run_gate(bundle, [ok, bad])
    assert report.tools["get_product"].accuracy == 0.5 and not report.tools["get_product"].kept
    assert not report.kept and report.reasons[0] == "no tested tool passed the gate"
    assert any(r.startswith("list_orders: dropped, no tests") for r in report.reasons)
    kept = run_gate(bundle, [ok, ok, bad])
    assert kept.kept and kept.kept_tools == ["get_product"]


def test_each_case_starts_from_the_seed(tmp_path: Path):
    spec = shop_spec()
    bundle = write_bundle(spec, shop_rows(), tmp_path / "shop")
    take = TestCase(
        tool="create_order",
        args={"customer_id": "cus_0001", "product_id": "pro_0001", "quantity": 3},
        expect=Expect(match={"id": "ord_0006"}),
    )
    report = run_gate(bundle, [take, take, take])
    assert report.tools["create_order"].passed == 3


def test_matching_rules():
    assert matches({"a": 1}, {"a": 1.0, "b": 2})
    assert not matches({"a": 1}, {"b": 1})
    assert matches({"items": [{"id": 2}]}, {"items": [{"id": 1}, {"id": 2, "x": 0}]})
    assert not matches({"items": [{"id": 3}]}, {"items": [{"id": 1}]})
    assert matches(0.1 + 0.2, 0.3) and not matches(True, 1) and not matches(None, 0)
    err = ToolResult(ok=False, error=ToolError(code="conflict", message="m"))
    assert check_case(TestCase(tool="t", args={}, expect=Expect(ok=False, error_code="conflict")), err) is None
    wrong_code = TestCase(tool="t", args={}, expect=Expect(ok=False, error_code="not_found"))
    assert "expected error not_found" in (check_case(wrong_code, err) or "")
    counted = TestCase(tool="t", args={}, expect=Expect(count=2))
    assert check_case(counted, ToolResult(ok=True, value={"items": [1, 2]})) is None
    assert check_case(counted, ToolResult(ok=True, value=[1])) == "expected 2 items, got 1"
