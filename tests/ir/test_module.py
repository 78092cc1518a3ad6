import pytest

from kiln import tir
from kiln.errors import IRError, IRValueError
from kiln.ir import GlobalVar, IRModule, Op, structural_equal
from tests.tir.builders import caller_module, matmul_relu


def test_ordered_lookup_by_name_and_gv():
    mod = caller_module()
    assert [g.name_hint for g in mod] == ["main", "subroutine"]
    gv = mod.get_global_var("subroutine")
    assert mod[gv] is mod["subroutine"] and "main" in mod and gv in mod
    with pytest.raises(KeyError, match="subroutine"):
        mod["nope"]


def test_edits_return_new_modules():
    mod = caller_module()
    f = matmul_relu(4)
    grown = mod.update("mm", f)
    assert "mm" not in mod and grown["mm"] is f and len(grown) == 3
    replaced = grown.update("mm", matmul_relu(8))
    assert replaced.get_global_var("mm") is grown.get_global_var("mm")
    assert [g.name_hint for g in replaced] == ["main", "subroutine", "mm"]
    shrunk = grown.remove("main")
    assert [g.name_hint for g in shrunk] == ["subroutine", "mm"] and "main" in grown
    tagged = mod.with_attr("device", "cpu")
    assert tagged.get_attr("device") == "cpu" and mod.get_attr("device") is None


def test_duplicate_names_and_bad_values_are_errors():
    f = matmul_relu(2)
    with pytest.raises(IRValueError, match="already has a function named 'f'"):
        IRModule({GlobalVar("f"): f, GlobalVar("f"): matmul_relu(2)})
    with pytest.raises(IRError, match="must be a function"):
        IRModule({"f": 3})  # type: ignore[dict-item]


def test_function_attrs():
    f = matmul_relu(2)
    assert f.global_symbol == "matmul_relu" and not f.is_private
    g = f.with_attr("target", "c").without_attr("global_symbol")
    assert g.is_private and g.get_attr("target") == "c" and f.get_attr("target") is None
    assert structural_equal(f.with_attr({"a": 1, "b": (2, 3)}), f.with_attr({"a": 1, "b": (2, 3)}))


def test_op_registry():
    op = Op.get("tir.call_extern")
    assert op is Op.get("tir.call_extern") and op.get_attr("num_args") == -1
    assert Op.get("tir.exp").get_attr("c_symbol")["float32"] == "expf"
    with pytest.raises(IRValueError, match="did you mean 'tir.exp'"):
        Op.get("nosuch.exp")  # relax.exp exists once kiln.relax is imported
    assert "tir.anylist_setitem_call_packed" in Op.list_ops()


def test_from_expr_names_the_module_function():
    mod = IRModule.from_expr(matmul_relu(2))
    assert [g.name_hint for g in mod] == ["matmul_relu"]
    assert isinstance(mod["matmul_relu"], tir.PrimFunc)
