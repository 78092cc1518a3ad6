"""``kiln opt``: the pass registry (every pass under kiln/ by name), the verb's options, its
errors, and ONNX input. The pass tests written as script files are in ``tests/passes/``."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import kiln
from kiln.cli.main import main
from kiln.driver.passes import PASSES, PassOptions, lookup, pass_by_name
from kiln.errors import KilnError
from kiln.examples.models import MLP
from kiln.ir import structural_equal
from kiln.ir.transform import Pass
from kiln.relax.transform import FuseOps, Normalize
from kiln.script import from_source

PASSES_DIR = Path(__file__).resolve().parents[1] / "passes"
FOLD_THEN_FUSE = PASSES_DIR / "fold_constant.before.py"

NOT_PASSES = {
    "kiln.ir.transform.FunctionPass": "base of per-function passes",
    "kiln.ir.transform.ModuleFunctionPass": "wraps any function; its name is per instance",
    "kiln.ir.transform.Sequential": "runs a list of passes",
    "kiln.relax.function_pass.FunctionPass": "base of per-function relax passes",
    "kiln.tir.function.PrimFuncPass": "base of per-PrimFunc passes",
    "kiln.cli.compile._Ticking": "kiln compile's progress around a pass",
}
"""The `Pass` subclasses under kiln/ that are machinery, not passes (why, for each)."""

MIXED = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def double(a: T.Buffer((4, 8), "float32"), b: T.Buffer((4, 8), "float32")):
        for i, j in T.grid(4, 8):
            b[i, j] = a[i, j] * T.float32(2)

    @R.function
    def main(x: R.Tensor((4, 8), "float32")):
        cls = Module
        y = R.call_tir(cls.double, (x,), out_sinfo=R.Tensor((4, 8), "float32"))
        return y
"""


def _subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub, *_subclasses(sub)}
    return out


def test_every_pass_class_under_kiln_is_registered() -> None:
    for info in pkgutil.walk_packages(kiln.__path__, "kiln."):
        if info.name != "kiln.__main__":  # NOTE: importing it runs the command line
            importlib.import_module(info.name)
    found = {
        f"{c.__module__}.{c.__qualname__}": c
        for c in _subclasses(Pass)
        if c.__module__.startswith("kiln.")
    }
    registered = {f"{e.cls.__module__}.{e.cls.__qualname__}" for e in PASSES.values()}
    assert set(found) - registered == set(NOT_PASSES), (
        "register new passes in kiln/driver/passes.py"
    )
    assert registered <= set(found)


@pytest.mark.parametrize("target", ["c", "cuda"])
def test_every_registered_pass_is_made_with_its_name(target: str) -> None:
    for name, entry in PASSES.items():
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", name), name
        made = pass_by_name(name, PassOptions(target=target))
        assert type(made) is entry.cls and made.name == name
        assert entry.level in ("relax", "tir") and entry.summary.endswith(".")


def test_list_names_every_pass_with_level_summary_and_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["opt", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(PASSES)
    by_name = {line.split()[0]: line for line in lines}
    assert by_name["fuse-ops"].split()[1] == "relax"
    assert by_name["simplify"].split()[1] == "tir"
    assert by_name["lower-te"].endswith("[--module-name, --target]")
    assert "Group operator calls into Primitive functions." in by_name["fuse-ops"]


def test_unknown_pass_lists_close_matches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["opt", "-p", "fold-constant,fuse-op", str(FOLD_THEN_FUSE)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kiln opt: error: unknown pass 'fuse-op'; did you mean 'fuse-ops'?")
    assert err.count("\n") == 1
    with pytest.raises(KilnError, match="did you mean 'relax-normalize'"):
        lookup("normalize")
    with pytest.raises(KilnError, match=r"unknown pass 'xyz' \(`kiln opt --list`"):
        lookup("xyz")


def test_disable_skips_the_pass_and_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    mod = from_source(FOLD_THEN_FUSE.read_text())
    args = ["opt", "-p", "fold-constant,fuse-ops", str(FOLD_THEN_FUSE)]
    assert main([*args, "--disable", "fold-constant"]) == 0
    out = from_source(capsys.readouterr().out)
    assert structural_equal(out, FuseOps()(mod))
    assert not structural_equal(out, FuseOps()(pass_by_name("fold-constant")(mod)))
    assert main([*args, "--disable", "fold-constnt"]) == 1
    assert "did you mean 'fold-constant'?" in capsys.readouterr().err


def test_time_passes_and_print_after_all_name_each_pass(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["opt", "-p", "fold-constant,fuse-ops", str(FOLD_THEN_FUSE)]
    assert main([*args, "--time-passes", "--print-after-all"]) == 0
    out, err = capsys.readouterr()
    rows = [line.split() for line in err.splitlines()]
    timed = [r[0] for r in rows if len(r) == 3 and re.fullmatch(r"\d+\.\d", r[1])]
    assert timed == ["fold-constant", "fuse-ops", "total"]
    printed = re.findall(r"after (fold-constant|fuse-ops)", err)
    assert printed == ["fold-constant", "fuse-ops"]
    assert err.count("@I.ir_module") == 2  # the whole module after each pass
    assert "@I.ir_module" in out and "@I.ir_module" in err


def test_onnx_model_is_imported_and_transformed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from kiln.relax.frontend.onnx import from_onnx

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    nodes = [helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Relu", ["e"], ["y"])]
    graph = helper.make_graph(nodes, "tiny", [x], [y])
    path = tmp_path / "tiny.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    assert main(["opt", "-p", "relax-normalize,fuse-ops", str(path)]) == 0
    out = from_source(capsys.readouterr().out)
    assert structural_equal(out, FuseOps()(Normalize()(from_onnx(str(path)))))
    assert [gv.name_hint for gv, f in out.items() if f.get_attr("Primitive")] == ["fused_exp_relu"]


def test_tir_passes_leave_relax_functions_alone() -> None:
    mod = from_source(MIXED)
    for name, entry in PASSES.items():
        if entry.level == "tir":
            assert pass_by_name(name)(mod)["main"] is mod["main"], name


def test_a_script_of_one_function_becomes_a_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "f.py"
    path.write_text(
        "@T.prim_func\n"
        'def main(a: T.Buffer((8,), "float32")):\n'
        "    for i in range(8):\n"
        "        a[i + 0] = T.float32(0)\n"
    )
    assert main(["opt", "-p", "simplify", str(path)]) == 0
    out = from_source(capsys.readouterr().out)
    assert "a[i] = " in out.script() and [gv.name_hint for gv in out] == ["main"]


def test_bad_input_is_one_located_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(MIXED.replace("R.call_tir(", "R.call_tri("))
    assert main(["opt", "-p", "simplify", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"kiln opt: error: {bad}:12:")
    assert "R.call_tri" in err and "^" in err and "Traceback" not in err
    missing = tmp_path / "nowhere.py"
    assert main(["opt", "-p", "simplify", str(missing)]) == 1
    assert capsys.readouterr().err == f"kiln opt: error: no such file: {missing}\n"
    (tmp_path / "m.txt").write_text("")
    assert main(["opt", "-p", "simplify", str(tmp_path / "m.txt")]) == 1
    assert "expected a .py script (@I.ir_module) or an .onnx model" in capsys.readouterr().err
    assert main(["opt", str(bad)]) == 1
    assert "give -p PASS,... and a FILE" in capsys.readouterr().err


def test_kiln_print_after_with_an_unknown_pass_names_the_close_match(monkeypatch) -> None:
    monkeypatch.setenv("KILN_DEBUG", "2")
    monkeypatch.setenv("KILN_PRINT_AFTER", "fuse-ops,lower-tee")
    with pytest.raises(KilnError, match="KILN_PRINT_AFTER: unknown pass 'lower-tee'.*'lower-te'"):
        kiln.compile(MLP)
