"""Every verb of ``python -m kiln`` driven as a user would, through `subprocess`: help with
examples, ``--version``, one-line errors with their exit codes (2: a wrong option, 1: a model
error, 130: Ctrl-C), output files named after the model's outputs and bench's table."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import kiln  # noqa: E402
from kiln.cli.main import EXAMPLES  # noqa: E402


def kiln_cli(*args: str, cache: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "KILN_CACHE_DIR": str(cache)}
    env.pop("KILN_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "kiln", *args], capture_output=True, text=True, env=env,
        timeout=timeout,
    )  # fmt: skip


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


def two_output_mlp(rng: np.random.Generator) -> tuple[onnx.ModelProto, np.ndarray, np.ndarray]:
    """``logits:0 = x @ w + b`` and ``probs/relu = relu(logits)``, with a symbolic batch:
    output names that are no file names as they are."""
    w = rng.standard_normal((8, 4)).astype("float32")
    b = rng.standard_normal(4).astype("float32")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Add", ["h", "b"], ["logits:0"]),
        helper.make_node("Relu", ["logits:0"], ["probs/relu"]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", 4])
            for n in ("logits:0", "probs/relu")]  # fmt: skip
    inits = [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")]
    graph = helper.make_graph(nodes, "mlp", [x], outs, initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), w, b


def conv_chain(layers: int, size: int = 8) -> onnx.ModelProto:
    """``layers`` convolutions + relus on a fixed ``[1, 3, size, size]`` image, each with its
    own channel count (so each is a kernel of its own, compiled apart)."""
    rng = np.random.default_rng(layers)
    nodes, inits, prev, cin = [], [], "image", 3
    for i in range(layers):
        cout = 4 + i
        w = rng.standard_normal((cout, cin, 3, 3)).astype("float32")
        inits.append(onnx.numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("Conv", [prev, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        prev, cin = f"r{i}", cout
    x = helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, size, size])
    y = helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, cin, size, size])
    graph = helper.make_graph(nodes, "convs", [x], [y], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def conv_reference(x: np.ndarray, layers: int) -> np.ndarray:
    """`conv_chain` in numpy (its weights drawn again from the same seed)."""
    rng = np.random.default_rng(layers)
    for i in range(layers):
        w = rng.standard_normal((4 + i, x.shape[1], 3, 3)).astype("float32")
        pad = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        win = np.lib.stride_tricks.sliding_window_view(pad, (3, 3), axis=(2, 3))
        x = np.maximum(np.einsum("nchwij,ocij->nohw", win, w), 0)
    return x


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The models (``mlp``: symbolic batch, two outputs; ``conv``: fixed shapes), a cache."""
    root = tmp_path_factory.mktemp("verbs")
    model, w, b = two_output_mlp(np.random.default_rng(0))
    np.save(root / "w.npy", w)
    np.save(root / "b.npy", b)
    return {
        "root": root,
        "cache": root / "cache",
        "mlp": save(model, root / "mlp.onnx"),
        "conv": save(conv_chain(2), root / "conv.onnx"),
    }


def test_version(files: dict[str, Path]) -> None:
    out = kiln_cli("--version", cache=files["cache"])
    assert out.returncode == 0
    assert out.stdout.strip() == f"kiln {kiln.__version__}"


@pytest.mark.parametrize("verb", sorted(EXAMPLES))
def test_each_verb_help_ends_with_two_examples(verb: str, files: dict[str, Path]) -> None:
    out = kiln_cli(verb, "--help", cache=files["cache"])
    assert out.returncode == 0 and out.stdout.startswith(f"usage: kiln {verb}")
    tail = out.stdout.rstrip().splitlines()[-3:]
    assert tail[0] == "examples:"
    assert all(line.startswith(f"  kiln {verb} ") for line in tail[1:])


BAD = [
    # (arguments, exit code, what the one line says); {mlp} {conv} {dir} {out} are filled in
    (["compile", "{conv}", "-o", "{dir}"], 1, "-o {dir}: is a folder; expected the path of"),
    (["compile", "{conv}", "-o", "{dir}/no/such/x.so"], 1, "no folder"),
    (["compile", "{conv}", "-o", "{out}", "--shape", "image=2x3"], 2,
     "argument --shape: dim '2x3' is neither a size nor a name; expected NAME=D0,D1,..."),
    (["compile", "{conv}", "-o", "{out}", "--shape", "image=2,3"], 1,
     "--shape image=2,3: 2 dim(s), but input 'image' has rank 4"),
    (["compile", "{conv}", "-o", "{out}", "--shape", "imgae=1,3,8,8"], 1,
     "--shape imgae=...: the model has no input 'imgae' (inputs: 'image')"),
    (["compile", "{dir}/missing.onnx", "-o", "{out}"], 1, "missing.onnx"),
    (["bench", "{conv}", "--dim", "batch=2"], 1,
     "--dim batch=...: the model has no symbolic dim 'batch' (its shapes are fixed)"),
    (["bench", "{mlp}", "--dim", "btach=2"], 1,
     "the model has no symbolic dim 'btach' (its symbolic dims are batch)"),
    (["bench", "{mlp}", "--dim", "batch=x"], 2, "argument --dim: expected NAME=N"),
    (["bench", "{mlp}", "--runs", "0"], 2,
     "argument --runs: expected a whole number >= 1, got '0'"),
    (["bench", "{mlp}", "--threads", "0"], 2, "argument --threads: expected thread counts >= 1"),
    (["bench", "{mlp}", "--threads", "1,two"], 2, "argument --threads"),
    (["run", "{mlp}", "--input", "x={dir}/none.npy"], 1, "no input file"),
    (["run", "{mlp}", "--shape", "x=batch"], 1,
     "--shape x=batch: 1 dim(s), but input 'x' has rank 2"),
    (["bench", "{mlp}", "--against", "tensorflow"], 2, "argument --against: invalid choice"),
    (["frobnicate"], 2, "argument COMMAND: invalid choice"),
    (["profile", "{mlp}", "--dim", "batch=0"], 1, "--dim: expected NAME=N (N >= 1"),
    (["profile", "{conv}", "--dim", "batch=2"], 1, "the model has no symbolic dim 'batch'"),
    ([], 2, "the following arguments are required: COMMAND"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "code", "says"), BAD, ids=[" ".join(b[0]) or "(none)" for b in BAD]
)
def test_a_wrong_argument_is_one_line(
    args: list[str], code: int, says: str, files: dict[str, Path]
) -> None:
    root = files["root"]
    (root / "folder").mkdir(exist_ok=True)
    fill = {
        "mlp": files["mlp"],
        "conv": files["conv"],
        "dir": root / "folder",
        "out": root / "o.so",
    }
    out = kiln_cli(*(a.format(**fill) for a in args), cache=files["cache"])
    lines = out.stderr.strip().splitlines()
    assert out.returncode == code, out.stderr
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    verb = args[0] if args and args[0] != "frobnicate" else ""
    assert lines[0].startswith(f"kiln {verb}".strip() + ": error: ")
    assert says.format(**fill) in lines[0]


def test_kiln_debug_shows_the_traceback(files: dict[str, Path]) -> None:
    env = {**os.environ, "KILN_CACHE_DIR": str(files["cache"]), "KILN_DEBUG": "1"}
    cmd = [sys.executable, "-m", "kiln", "compile", str(files["conv"]), "-o", str(files["root"])]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 1 and "Traceback" in out.stderr and "is a folder" in out.stderr


def test_run_names_outputs_after_the_model(files: dict[str, Path]) -> None:
    root = files["root"]
    x = np.random.default_rng(3).standard_normal((5, 8)).astype("float32")
    np.save(root / "x.npy", x)
    lib = root / "mlp.so"
    assert (
        kiln_cli(
            "compile", str(files["mlp"]), "-o", str(lib), "-q", cache=files["cache"]
        ).returncode
        == 0
    )
    out = kiln_cli("run", str(lib), "--input", f"x={root / 'x.npy'}", "-o", str(root / "outs"),
                   cache=files["cache"])  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in (root / "outs").iterdir()) == ["logits_0.npy", "probs_relu.npy"]
    logits = x @ np.load(root / "w.npy") + np.load(root / "b.npy")
    np.testing.assert_allclose(np.load(root / "outs/logits_0.npy"), logits, rtol=1e-5, atol=1e-5)
    got = np.load(root / "outs/probs_relu.npy")
    np.testing.assert_allclose(got, np.maximum(logits, 0), rtol=1e-5, atol=1e-5)
    assert f"{root / 'outs/probs_relu.npy'}: float32[5, 4]" in out.stdout


ROW = re.compile(r"^(\w+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)-([\d.]+)\s+([\d.]+)x$")


def test_bench_prints_shapes_runs_threads_spread_and_ratio(files: dict[str, Path]) -> None:
    pytest.importorskip("onnxruntime")
    out = kiln_cli("bench", str(files["mlp"]), "--runs", "3", "--against", "onnxruntime",
                   cache=files["cache"])  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "inputs: x: float32[1,8] (batch=1 picked; set with --dim batch=N)"
    assert lines[1] == "3 timed calls per row after 3 warm-up calls; threads: 1,2"
    rows = [m.groups() for line in lines if (m := ROW.match(line))]
    assert [(r[0], r[1]) for r in rows] == [
        ("kiln", "1"), ("onnxruntime", "1"), ("kiln", "2"), ("onnxruntime", "2")
    ]  # fmt: skip
    for _, _, med, low, high, _ in rows:
        assert float(low) <= float(med) <= float(high)
    for kiln_row, ort_row in (rows[0:2], rows[2:4]):
        assert kiln_row[5] == "1.00"
        # the ratio is the printed medians' quotient (up to their rounding to 3 decimals)
        expected = float(ort_row[2]) / max(float(kiln_row[2]), 1e-3)
        assert float(ort_row[5]) == pytest.approx(expected, rel=0.2, abs=0.6)


def test_bench_with_dims_names_no_picked_dim(files: dict[str, Path]) -> None:
    out = kiln_cli("bench", str(files["mlp"]), "--runs", "2", "--threads", "1", "--dim", "batch=6",
                   cache=files["cache"])  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "inputs: x: float32[6,8]"
    assert [m.group(1, 2) for line in out.stdout.splitlines() if (m := ROW.match(line))] == [
        ("kiln", "1")
    ]


def test_ctrl_c_during_a_compile_is_one_line_and_exit_130(files: dict[str, Path]) -> None:
    model = save(conv_chain(24, size=16), files["root"] / "long.onnx")
    env = {**os.environ, "KILN_CACHE_DIR": str(files["root"] / "fresh-cache")}
    env.pop("KILN_DEBUG", None)
    cmd = [sys.executable, "-m", "kiln", "compile", str(model), "-o", str(files["root"] / "l.so")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(2.5)
    assert proc.poll() is None, "the compile ended before Ctrl-C: make the model bigger"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err.strip().splitlines()[-1] == "kiln compile: interrupted"
    assert "Traceback" not in err
    assert not (files["root"] / "l.so").exists()


def test_inspect_an_onnx_model(files: dict[str, Path]) -> None:
    out = kiln_cli("inspect", str(files["mlp"]), cache=files["cache"])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    at = lines.index("inputs:")
    assert lines[at : at + 6] == [
        "inputs:", "  x: float32[batch, 8]",
        "outputs:", "  logits:0: float32[batch, 4]", "  probs/relu: float32[batch, 4]",
        "symbolic dims: batch",
    ]  # fmt: skip
    nodes = onnx.load(str(files["mlp"])).graph.node
    assert f"ops ({len(nodes)} nodes, 3 types):" in lines
    for op in ("MatMul", "Add", "Relu"):
        count = sum(n.op_type == op for n in nodes)
        assert any(line.split() == [op, str(count)] for line in lines), op


def test_inspect_a_library_lists_its_kernels(files: dict[str, Path]) -> None:
    lib = files["root"] / "conv.so"
    assert kiln_cli("compile", str(files["conv"]), "-o", str(lib), "-q",
                    cache=files["cache"]).returncode == 0  # fmt: skip
    out = kiln_cli("inspect", str(lib), cache=files["cache"])
    assert out.returncode == 0, out.stderr
    kernels = kiln.load(lib).executable.kernels
    assert f"kiln library (compiled mode, {len(kernels)} kernels)" in out.stdout
    assert "  image: float32[1, 3, 8, 8]" in out.stdout
    assert "symbolic dims: none (fixed shapes)" in out.stdout
    listed = [line.split()[0] for line in out.stdout.split("known):\n")[1].splitlines()[:-1]]
    assert listed == list(kernels)
    assert out.stdout.rstrip().endswith("\nexternal functions: none")
    bad = kiln_cli("inspect", str(files["root"] / "w.npy"), cache=files["cache"])
    assert bad.returncode == 1 and bad.stderr.startswith("kiln inspect: error: ")
    assert "is not an ONNX model" in bad.stderr and len(bad.stderr.splitlines()) == 1


def test_compile_progress_follows_the_work(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kiln.cli import compile as cli_compile

    real = cli_compile.Progress
    made: list[cli_compile.Progress] = []
    stream = io.StringIO()

    def progress(quiet: bool) -> cli_compile.Progress:
        made.append(real(stream, quiet, interval=0.005))
        return made[-1]

    monkeypatch.setattr(cli_compile, "Progress", progress)
    monkeypatch.setenv("KILN_CACHE_DIR", str(files["root"] / "progress-cache"))
    model = cli_compile.compile_model(str(save(conv_chain(4), files["root"] / "p.onnx")))
    lines = stream.getvalue().splitlines()
    assert lines and all(re.match(r"kiln compile \[ *[\d.]+ s\] \S", line) for line in lines)
    passes = [int(m.group(1)) for line in lines if (m := re.search(r"graph pass (\d+)/", line))]
    assert passes == sorted(passes)
    units = [tuple(map(int, m.groups())) for line in lines
             if (m := re.search(r"compiling (\d+)/(\d+) C units", line))]  # fmt: skip
    assert units and all(k <= n for k, n in units) and units == sorted(units)
    # each unit generated (a fresh cache: none reused) and the list of exposed functions
    # was counted once, when the compiler finished it
    assert made[0].compiled == made[0].rows["c codegen"][2] + 1 == units[-1][0]
    x = np.random.default_rng(4).standard_normal((1, 3, 8, 8)).astype("float32")
    np.testing.assert_allclose(model(image=x).numpy(), conv_reference(x, 4), rtol=1e-4, atol=1e-4)
    assert lines[-1].endswith("storing the model in the cache")


def test_compile_progress_without_a_terminal_and_quiet(files: dict[str, Path]) -> None:
    cache = files["root"] / "progress-cli-cache"
    lib = files["root"] / "progress.so"
    out = kiln_cli("compile", str(files["mlp"]), "-o", str(lib), cache=cache)
    assert out.returncode == 0 and out.stdout.startswith(f"wrote {lib}")
    assert re.fullmatch(r"(kiln compile \[ *[\d.]+ s\] [^\n]+\n)+", out.stderr), out.stderr
    out = kiln_cli("compile", str(files["conv"]), "-o", str(lib), "-q", cache=cache)
    assert out.returncode == 0 and out.stderr == "" and out.stdout == ""


COMPILER = ("kiln.driver", "kiln.relax", "kiln.tir", "kiln.te", "kiln.codegen", "kiln.cli.compile")


def test_run_of_a_library_loads_no_compiler(files: dict[str, Path]) -> None:
    """``kiln run model.so`` imports what running needs, none of the compiler (start-up)."""
    root = files["root"]
    lib = root / "startup.so"
    assert (
        kiln_cli(
            "compile", str(files["mlp"]), "-o", str(lib), "-q", cache=files["cache"]
        ).returncode
        == 0
    )
    x = np.random.default_rng(5).standard_normal((2, 8)).astype("float32")
    np.save(root / "x2.npy", x)
    code = (
        "import sys\nfrom kiln.cli.main import main\n"
        f"code = main(['run', {str(lib)!r}, '--input', {str(root / 'x2.npy')!r}, "
        f"'-o', {str(root / 'startup')!r}])\n"
        f"print(code, sorted(m for m in sys.modules if m.startswith({COMPILER!r})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.splitlines()[-1] == "0 []", out.stdout + out.stderr
    logits = x @ np.load(root / "w.npy") + np.load(root / "b.npy")
    got = np.load(root / "startup/probs_relu.npy")
    np.testing.assert_allclose(got, np.maximum(logits, 0), rtol=1e-5, atol=1e-5)
    np.save(root / "bad.npy", np.zeros((2, 5), "float32"))
    bad = kiln_cli("run", str(lib), "--input", f"x={root / 'bad.npy'}", cache=files["cache"])
    assert bad.returncode == 1 and len(bad.stderr.splitlines()) == 1
    assert (
        bad.stderr.startswith("kiln run: error: ") and "x.shape[1] expected 8, got 5" in bad.stderr
    )
    assert "(the model takes x: float32[batch, 8])" in bad.stderr
