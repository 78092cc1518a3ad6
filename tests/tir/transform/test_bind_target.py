"""BindTarget: each function placed on the host, the device, or both (seed 002's rules)."""

from __future__ import annotations

import pytest

from kiln import tir
from kiln.ir import IRModule, assert_structural_equal
from kiln.ir.target import TARGET_KINDS, Target, TargetKind
from kiln.script import ir as I
from kiln.script import tir as T
from kiln.tir.transform import BindTarget

CUDA = Target("cuda")
HOST = Target("c")
CUDA_HOST = Target("cuda", host="c")


def _bind(mod: IRModule, target: object = CUDA_HOST) -> IRModule:
    out = BindTarget(target)(mod)
    tir.verify_well_formed(out)
    return out


def _targets(mod: IRModule) -> dict[str, object]:
    return {gv.name_hint: f.get_attr("target") for gv, f in mod.items()}


def test_seed_002_host_and_device_caller_gets_a_host_copy() -> None:
    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def add(a: T.int32, b: T.int32) -> T.int32:
            return a + b

        @T.prim_func
        def main(
            A: T.Buffer((128, 128), "int32"),
            B: T.Buffer((128, 128), "int32"),
            C: T.Buffer((128, 128), "int32"),
        ):
            T.func_attr({"global_symbol": "main"})
            length: T.int32 = Before.add(64, 64)  # Call from host
            for bx in T.thread_binding(length, "blockIdx.x"):
                for tx in T.thread_binding(length, "threadIdx.x"):
                    C[bx, tx] = Before.add(A[bx, tx], B[bx, tx])  # Call from device

    @I.ir_module
    class Expected:
        @T.prim_func(private=True)
        def add(a: T.int32, b: T.int32) -> T.int32:
            T.func_attr({"target": CUDA})
            return a + b

        @T.prim_func(private=True)
        def add_host(a: T.int32, b: T.int32) -> T.int32:
            T.func_attr({"target": HOST})
            return a + b

        @T.prim_func
        def main(
            A: T.Buffer((128, 128), "int32"),
            B: T.Buffer((128, 128), "int32"),
            C: T.Buffer((128, 128), "int32"),
        ):
            T.func_attr({"global_symbol": "main", "target": CUDA_HOST})
            length: T.int32 = Expected.add_host(64, 64)
            for bx in T.thread_binding(length, "blockIdx.x"):
                for tx in T.thread_binding(length, "threadIdx.x"):
                    C[bx, tx] = Expected.add(A[bx, tx], B[bx, tx])

    assert_structural_equal(_bind(Before), Expected)


def test_host_only_device_only_and_uncalled() -> None:
    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def on_host(a: T.int32) -> T.int32:
            return a + 1

        @T.prim_func(private=True)
        def on_device(a: T.float32) -> T.float32:
            return a * T.float32(2)

        @T.prim_func(private=True)
        def unused(a: T.int32) -> T.int32:
            return a

        @T.prim_func
        def main(A: T.Buffer((64,), "float32")):
            n: T.int32 = Before.on_host(63)
            for tx in T.thread_binding(n, "threadIdx.x"):
                A[tx] = Before.on_device(A[tx])

    got = _targets(_bind(Before))
    assert got == {"on_host": HOST, "on_device": CUDA, "unused": CUDA, "main": CUDA_HOST}
    assert len(_bind(Before)) == 4  # nothing duplicated


def test_launch_thread_scope_counts_as_device_code() -> None:
    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def square(a: T.float32) -> T.float32:
            return a * a

        @T.prim_func
        def main(A: T.Buffer((64,), "float32")):
            tx = T.launch_thread("threadIdx.x", 64)
            A[tx] = Before.square(A[tx])

    assert _targets(_bind(Before))["square"] == CUDA


def test_callees_of_device_helpers_are_device_functions() -> None:
    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def inner(a: T.float32) -> T.float32:
            return a + T.float32(1)

        @T.prim_func(private=True)
        def outer(a: T.float32) -> T.float32:
            return Before.inner(a) * T.float32(2)

        @T.prim_func(private=True)
        def host_inner(a: T.int32) -> T.int32:
            return a + 1

        @T.prim_func(private=True)
        def host_outer(a: T.int32) -> T.int32:
            return Before.host_inner(a) * 2

        @T.prim_func
        def main(A: T.Buffer((64,), "float32")):
            n: T.int32 = Before.host_outer(31)
            for tx in T.thread_binding(n, "threadIdx.x"):
                A[tx] = Before.outer(A[tx])

    got = _targets(_bind(Before))
    assert got["inner"] == got["outer"] == CUDA
    assert got["host_inner"] == got["host_outer"] == HOST


def test_existing_targets_are_kept_and_exposed_ones_gain_the_host() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def exposed_device(A: T.Buffer((4,), "float32")):
            T.func_attr({"target": Target("cuda -arch=sm_80")})
            A[0] = T.float32(0)

        @T.prim_func
        def exposed_host(A: T.Buffer((4,), "float32")):
            T.func_attr({"target": HOST})
            A[0] = T.float32(0)

        @T.prim_func(private=True)
        def pinned(a: T.int32) -> T.int32:
            T.func_attr({"target": "c"})  # a string is read as a Target
            return a

        @T.prim_func
        def main(A: T.Buffer((64,), "int32")):
            for tx in T.thread_binding(64, "threadIdx.x"):
                A[tx] = Before.pinned(A[tx])

    got = _targets(_bind(Before))
    assert got["exposed_device"] == Target("cuda -arch=sm_80", host="c")
    assert got["exposed_host"] == HOST and got["pinned"] == HOST
    assert got["main"] == CUDA_HOST


def test_private_function_with_thread_scopes_called_from_host_keeps_the_host() -> None:
    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def kernel_like(A: T.Buffer((64,), "float32")):
            for tx in T.thread_binding(64, "threadIdx.x"):
                A[tx] = A[tx] + T.float32(1)

        @T.prim_func
        def main(A: T.Buffer((64,), "float32")):
            Before.kernel_like(A.data)

    # its scopes become kernels later; the host cannot run them itself
    assert _targets(_bind(Before))["kernel_like"] == CUDA_HOST


def test_host_copies_call_host_copies_and_names_do_not_clash() -> None:
    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def leaf(a: T.int32) -> T.int32:
            return a * 3

        @T.prim_func(private=True)
        def mid(a: T.int32) -> T.int32:
            return Before.leaf(a) + 1

        @T.prim_func(private=True)
        def mid_host(a: T.int32) -> T.int32:
            return a

        @T.prim_func
        def main(A: T.Buffer((64,), "int32")):
            n: T.int32 = Before.mid(2) + Before.mid_host(1)
            for tx in T.thread_binding(n, "threadIdx.x"):
                A[tx] = Before.mid(A[tx])

    @I.ir_module
    class Expected:
        @T.prim_func(private=True)
        def leaf(a: T.int32) -> T.int32:
            T.func_attr({"target": CUDA})
            return a * 3

        @T.prim_func(private=True)
        def leaf_host(a: T.int32) -> T.int32:
            T.func_attr({"target": HOST})
            return a * 3

        @T.prim_func(private=True)
        def mid(a: T.int32) -> T.int32:
            T.func_attr({"target": CUDA})
            return Expected.leaf(a) + 1

        @T.prim_func(private=True)
        def mid_host_1(a: T.int32) -> T.int32:
            T.func_attr({"target": HOST})
            return Expected.leaf_host(a) + 1

        @T.prim_func(private=True)
        def mid_host(a: T.int32) -> T.int32:
            T.func_attr({"target": HOST})
            return a

        @T.prim_func
        def main(A: T.Buffer((64,), "int32")):
            T.func_attr({"target": CUDA_HOST})
            n: T.int32 = Expected.mid_host_1(2) + Expected.mid_host(1)
            for tx in T.thread_binding(n, "threadIdx.x"):
                A[tx] = Expected.mid(A[tx])

    assert_structural_equal(_bind(Before), Expected)


def test_host_kind_target_binds_everything_to_itself() -> None:
    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def helper(a: T.int32) -> T.int32:
            return a + 1

        @T.prim_func(private=True)
        def pinned(a: T.int32) -> T.int32:
            T.func_attr({"target": CUDA})
            return a

        @T.prim_func
        def main(A: T.Buffer((4,), "int32")):
            A[0] = Before.helper(1)

    got = _targets(_bind(Before, "c"))
    assert got == {"helper": HOST, "pinned": CUDA, "main": HOST}


def test_target_given_as_string_or_dict() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def main(A: T.Buffer((4,), "int32")):
            A[0] = 1

    assert _targets(_bind(Before, "cuda -host=c"))["main"] == CUDA_HOST
    assert _targets(_bind(Before, {"kind": "cuda"}))["main"] == CUDA_HOST  # host defaults to c
    assert BindTarget("cuda").name == "bind-target"


def test_device_host_other_than_c(monkeypatch: pytest.MonkeyPatch) -> None:
    kinds = dict(TARGET_KINDS)
    kinds["cpu2"] = TargetKind("cpu2", "cpu", {})
    monkeypatch.setattr("kiln.ir.target.TARGET_KINDS", kinds)

    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def helper(a: T.int32) -> T.int32:
            return a + 1

        @T.prim_func
        def main(A: T.Buffer((4,), "int32")):
            A[0] = Before.helper(1)

    got = _targets(_bind(Before, Target("cuda", host="cpu2")))
    assert got == {"helper": Target("cpu2"), "main": Target("cuda", host="cpu2")}
