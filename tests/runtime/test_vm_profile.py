"""`VirtualMachine.profile`: a per-kernel table in both modes."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
import tvm_ffi

from kiln.errors import KilnError
from kiln.runtime import ProfileReport, VirtualMachine
from tests.runtime.test_vm_modes import kernel_chain
from tests.runtime.vm_programs import MODES, ProgramBuilder, R


@tvm_ffi.register_global_func("test.profile.square", override=True)
def _square(a: Any) -> Any:
    return tvm_ffi.from_dlpack(np.from_dlpack(a) ** 2)


def chain_then_python() -> ProgramBuilder:
    prog = kernel_chain()
    main = prog.functions[0]
    out = main.body.pop()  # the return; square its value in Python first
    main.ret(main.call("test.profile.square", R(out.reg)))
    return prog


@pytest.mark.parametrize("mode", MODES)
def test_profile_lists_kernels_and_packed_functions_not_builtins(mode: str) -> None:
    vm = VirtualMachine(chain_then_python().build(mode))
    x = np.arange(5, dtype="float32")
    report = vm.profile("main", x)
    assert isinstance(report, ProfileReport)
    assert report.exec_mode == mode
    assert sorted((r.kernel, r.calls) for r in report.rows) == [
        ("add_one", 1),
        ("mul_two", 1),
        ("test.profile.square", 1),
    ]
    for row in report.rows:
        assert row.total_us > 0 and row.mean_us == pytest.approx(row.total_us / row.calls)
        assert 0 < row.share < 1
    assert report.kernel_us <= report.total_us
    assert [r.total_us for r in report.rows] == sorted(
        (r.total_us for r in report.rows), reverse=True
    )
    text = str(report)
    assert text.splitlines()[0].startswith(f"profile of main ({mode} mode):")
    assert "kernel" in text and "calls" in text and "share" in text and "add_one" in text
    assert "(VM and call overhead)" in text


def test_profiling_stops_after_the_call() -> None:
    vm = VirtualMachine(chain_then_python().build("bytecode"))
    x = np.arange(5, dtype="float32")
    vm.profile("main", x)
    vm["main"](x)
    assert [r.calls for r in vm.profile("main", x).rows] == [1, 1, 1]


def test_profile_of_a_failing_call_raises_and_stops_profiling() -> None:
    vm = VirtualMachine(chain_then_python().build("compiled"))
    with pytest.raises(TypeError, match="takes 1 argument"):
        vm.profile("main")
    assert len(vm.profile("main", np.zeros(2, dtype="float32")).rows) == 3


def _mlp_layer(m: int, k: int, n: int) -> Any:
    from kiln import relax
    from kiln.relax import op as O

    rng = np.random.default_rng(0)
    w = relax.const(rng.standard_normal((k, n)).astype("float32"))
    x = relax.Var("x", relax.TensorStructInfo([m, k], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(O.nn.relu(bb.emit(O.matmul(x, w)))))
        bb.emit_func_output(out)
    return bb.get()


def test_profile_reports_each_kernels_work_and_its_share_of_the_bounds(tmp_path) -> None:
    """A model's kernels carry their FLOPs and compulsory bytes (`kiln.relax.analysis.cost`)
    through the executable (and its serialized form): the profile shows GFLOP/s and GB/s, and
    with the machine's bounds each kernel's share of them."""
    import kiln
    from kiln.vm import Executable

    m, k, n = 12, 64, 40
    model = kiln.compile(_mlp_layer(m, k, n))
    x = np.ones((m, k), "float32")
    report = model.profile(x)
    (row,) = [r for r in report.rows if "matmul" in r.kernel]
    assert row.flops == 2 * m * k * n + m * n  # the product, then one per element (relu)
    # x, the packed weight (panels of whole tiles: at least k x n) and the result
    assert row.bytes is not None and row.bytes >= 4 * (m * k + k * n + m * n)
    assert row.gflops == pytest.approx(row.flops / row.mean_us / 1e3)
    assert "GFLOP/s" in str(report) and "% bound" not in str(report.with_bounds(100.0, None))
    bounded = report.with_bounds(100.0, 20.0)
    share = row.bound_share(100.0, 20.0)
    assert share is not None and share > 0
    assert "% bound" in str(bounded) and "FMA peak: 100 GFLOP/s, bandwidth: 20 GB/s" in str(bounded)
    exe = model.executable
    again = Executable.load(exe.save(tmp_path / "exe.kvm"))
    assert again.costs == exe.costs and any("matmul" in c[0] for c in exe.costs)


def test_median_of_reports_takes_each_rows_median() -> None:
    """`ProfileReport.median`: a preemption that lands on one kernel in one call (50 ms) does
    not reach the merged table; a kernel missing from a call counts 0 there; the layout
    transforms are counted in the table's last line."""
    from kiln.runtime.profile import ProfileReport, ProfileRow

    def report(conv_us: float, other_us: float, total_us: float) -> ProfileReport:
        rows = (
            ProfileRow("fused_conv2d_relu", 2, conv_us, conv_us / 2, 0.0, flops=10**6),
            ProfileRow("fused_layout_transform", 1, other_us, other_us, 0.0),
        )
        return ProfileReport("main", "compiled", total_us, rows)

    calls = [
        report(100.0, 10.0, 120.0),
        report(50_000.0, 12.0, 50_020.0),
        report(110.0, 11.0, 125.0),
    ]
    merged = ProfileReport.median(calls)
    assert merged.total_us == 125.0
    conv = next(r for r in merged.rows if r.kernel == "fused_conv2d_relu")
    assert (conv.total_us, conv.mean_us, conv.calls) == (110.0, 55.0, 2)
    assert conv.share == pytest.approx(110.0 / 125.0) and conv.flops == 10**6
    assert [r.kernel for r in merged.layout_rows] == ["fused_layout_transform"]
    assert "layout transforms: 1 kernels, 1 calls, 11.00 us" in str(merged)
    partial = ProfileReport("main", "compiled", 100.0, calls[0].rows[:1])
    lone = ProfileReport.median([calls[0], partial, partial])
    assert next(r for r in lone.rows if r.kernel == "fused_layout_transform").total_us == 0.0
    with pytest.raises(ValueError, match="at least one"):
        ProfileReport.median([])


def test_symbolic_kernels_get_their_work_from_the_calls_dims(tmp_path) -> None:
    """A kernel over symbolic dims records its work as an expression of them
    (`kiln.relax.analysis.cost.Size`); the profile evaluates it with the call's dims, so the
    same executable reports each size's FLOPs (and keeps them through save/load)."""
    import kiln
    from kiln.script import ir as I
    from kiln.script import relax as R
    from kiln.vm import Executable

    @I.ir_module
    class Dyn:
        @R.function
        def main(x: R.Tensor(("n", 4), "float32"), w: R.Tensor((4, 2), "float32")):
            with R.dataflow():
                y = R.nn.relu(R.matmul(x, w))
                R.output(y)
            return y

    model = kiln.compile(Dyn)
    w = np.ones((4, 2), "float32")
    for n in (5, 9):
        (row,) = [
            r for r in model.profile(np.ones((n, 4), "float32"), w).rows if "matmul" in r.kernel
        ]
        assert row.flops == 2 * n * 4 * 2 + n * 2
        assert row.bytes == 4 * (n * 4 + 4 * 2 + n * 2)
        assert row.gflops is not None and row.gflops > 0
    exe = model.executable
    (cost,) = [c for c in exe.costs if "matmul" in c[0]]
    assert isinstance(cost[1], str) and "n" in cost[1]
    assert Executable.load(exe.save(tmp_path / "exe.kvm")).costs == exe.costs


def test_eval_size_evaluates_counts_and_nothing_else() -> None:
    from kiln.runtime.profile import eval_size

    assert eval_size(12, {}) == 12
    assert eval_size("2 * n * (m + 1) // 3 % 100", {"n": 3, "m": 2}) == 6
    assert eval_size("max(n * 2, 7)", {"n": 3}) == 7
    assert eval_size("n * k", {"n": 3}) is None  # a dim the call does not bind
    assert eval_size("__import__('os').getpid()", {}) is None
    assert eval_size("n ** 2", {"n": 3}) is None
    assert eval_size("n // 0", {"n": 3}) is None


def test_profile_warms_up_then_takes_medians_of_repeated_calls() -> None:
    """`VirtualMachine.profile`: ``warmup`` unprofiled calls (at least 50 ms of them) before
    ``repeat`` profiled ones; each row counts one call's kernel calls, not the sum."""
    vm = VirtualMachine(chain_then_python().build("compiled"))
    x = np.arange(5, dtype="float32")
    report = vm.profile("main", x, repeat=7, warmup=2)
    assert (report.repeat, [r.calls for r in report.rows]) == (7, [1, 1, 1])
    assert report.warmup >= 2 and "median of 7 calls" in str(report)
    cold = vm.profile("main", x, repeat=1, warmup=0)
    assert (cold.repeat, cold.warmup) == (1, 0) and "one call" in str(cold)
    with pytest.raises(KilnError, match="at least 1 profiled call"):
        vm.profile("main", x, repeat=0)
    with pytest.raises(KilnError, match="cannot be negative"):
        vm.profile("main", x, warmup=-1)


def _row(kernel: str, us: float, flops: int | None = None, nodes: tuple[str, ...] = ()) -> Any:
    from kiln.runtime.profile import ProfileRow

    return ProfileRow(kernel, 1, us, us, 0.0, flops=flops, bytes=4000, nodes=nodes)


def test_table_cuts_long_names_in_the_middle_and_json_keeps_them() -> None:
    """A long kernel name does not push the columns out; the JSON has the full name, the
    model's nodes, the rates and the share of the FMA peak."""
    from kiln.runtime.profile import KERNEL_WIDTH, shorten

    long = "default_fused_conv2d_NCHWc_add_relu_layout_transform_multiply_add_14"
    nodes = ("/layer1/conv/Conv", "/layer1/bn/BatchNormalization", "/layer1/act/Relu")
    rows = (_row(long, 20.0, flops=2_000_000, nodes=nodes), _row("b_short", 5.0))
    report = ProfileReport("main", "compiled", 30.0, rows, repeat=20, warmup=9)
    report = report.with_bounds(200.0).sorted_by("time")
    lines = str(report).splitlines()
    head = next(ln for ln in lines if ln.startswith("kernel"))
    cut = shorten(long, KERNEL_WIDTH)
    assert len(cut) == KERNEL_WIDTH and cut.startswith("default_fused_con...")
    assert cut.endswith("multiply_add_14")
    row = next(ln for ln in lines if ln.startswith(cut))
    short = next(ln for ln in lines if ln.startswith("b_short"))
    end = head.index("total us") + len("total us")
    assert row[:end].endswith(" 20.00") and short[:end].endswith(" 5.00")
    assert "%" in row and "/layer1/conv/Conv" in row
    data = report.to_json()
    (first, second) = data["rows"]
    assert first["kernel"] == long and first["nodes"] == list(nodes)
    assert first["gflops"] == pytest.approx(2_000_000 / 20.0 / 1e3)
    assert first["peak_share"] == pytest.approx(first["gflops"] / 200.0)
    assert second["peak_share"] is None and data["repeat"] == 20 and data["warmup"] == 9
    assert data["overhead_us"] == pytest.approx(5.0)
    assert [r.kernel for r in report.sorted_by("name").rows] == ["b_short", long]
    with pytest.raises(KilnError, match="sorts by time or name, not 'size'"):
        report.sorted_by("size")


def test_model_profile_reports_the_share_of_the_measured_fma_peak() -> None:
    """`CompiledModel.profile` divides each kernel's GFLOP/s by the FMA peak of the pool's
    threads, measured once (`fma_peak_gflops`) and the same on the next call; likewise the
    memory bandwidth of its roofline bound (`memory_bandwidth_gbs`)."""
    import kiln
    from kiln.runtime.fma_peak import fma_peak_gflops, memory_bandwidth_gbs
    from kiln.runtime.thread_pool import pool_threads

    model = kiln.compile(_mlp_layer(12, 64, 40))
    report = model.profile(np.ones((12, 64), "float32"), repeat=5)
    peak = fma_peak_gflops()
    assert peak == fma_peak_gflops() and 0.5 < peak < 10_000
    assert report.peak_gflops == pytest.approx(peak * pool_threads())
    (row,) = [r for r in report.rows if "matmul" in r.kernel]
    share = row.peak_share(report.peak_gflops)
    assert share is not None and 0 < share < 1.5
    assert "% peak" in str(report) and "% bound" in str(report)
    bandwidth = memory_bandwidth_gbs(pool_threads())  # measured once, on the profile's threads
    assert report.bandwidth_gbs == bandwidth == memory_bandwidth_gbs(pool_threads())
    assert 0.1 < bandwidth < 10_000
    assert row.bound_share(report.peak_gflops, bandwidth) is not None


def test_the_total_is_the_plain_calls_median_not_the_profiled_calls() -> None:
    """Profiled calls pay for their timestamps; the report's total is the median time of the
    plain calls made between them (the model's own time per call)."""
    from kiln.runtime.profile import ProfileRow, profile_calls

    def plain() -> None:
        time.sleep(0.002)

    def profiled() -> ProfileReport:
        time.sleep(0.002)
        row = ProfileRow("kernel", 1, 1500.0, 1500.0, 0.0)
        return ProfileReport("main", "compiled", 9000.0, (row,))

    report = profile_calls(plain, profiled, repeat=5, warmup=0)
    assert 1900 <= report.total_us < 8000
    assert report.rows[0].total_us == 1500.0
    assert report.rows[0].share == pytest.approx(1500.0 / report.total_us)


def test_warm_up_calls_until_its_minimum_time_has_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted on a fake clock that each call advances by 10 ms: 2 calls asked, 50 ms minimum."""
    from kiln.runtime import profile as profile_module

    clock = [0.0]

    def call() -> None:
        clock[0] += 0.01

    monkeypatch.setattr(profile_module.time, "perf_counter", lambda: clock[0])
    assert profile_module.warm_up(call, 2, min_s=0.05) == 5
    assert profile_module.warm_up(call, 8, min_s=0.05) == 8
    assert profile_module.warm_up(call, 0, min_s=0.05) == 0


def test_machine_bounds_are_measured_once_and_read_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """The FMA peak and the memory bandwidth are recorded in kiln's cache beside the libraries
    that measured them: a process that has not measured them reads them back."""
    from kiln.runtime import fma_peak as bounds

    # NOTE: values an earlier test of this process took under another KILN_CACHE_DIR are not
    # recorded in this one: forgotten, they are read from this cache or measured into it
    monkeypatch.setattr(bounds, "_measured", {})
    gbs = bounds.memory_bandwidth_gbs(1)
    peak = bounds.fma_peak_gflops()
    assert 0.1 < gbs < 10_000
    monkeypatch.setattr(bounds, "_measured", {})

    def measure(*args: object) -> float:
        raise AssertionError("measured again")

    monkeypatch.setattr(bounds, "_measure_triad", measure)
    monkeypatch.setattr(bounds, "_measure", measure)
    assert bounds.memory_bandwidth_gbs(1) == gbs and bounds.fma_peak_gflops() == peak
