"""Run the ONNX backend test suite's node cases (shipped inside the ``onnx`` wheel) against kiln
and onnxruntime in one run; print passed/failed per op and the totals.

    python benchmarks/onnx_conformance.py [-j 2] [--batch 48] [--exec-mode compiled]
                                          [-k REGEX] [--no-ort] [--markdown FILE]

How: the parent generates the cases (``onnx.backend.test.loader.load_model_tests``), writes each
to a temporary pickle and runs batches in worker processes (``-j`` at a time). A worker imports
every case of its batch (`from_onnx`), puts all that imported into one module (one function per
case) and builds it once with `kiln.relax.build`, so the C compiler runs once per batch (and the
on-disk build cache serves reruns); when the batch does not build, each case is built alone to
find the culprit. Outputs are compared as ONNX's own runner does (same dtype, then
``assert_allclose`` with the case's rtol/atol). A worker that crashes (a kernel faulting) is
restarted on the rest of its batch; the case it was running counts as failed ("crashed").
onnxruntime runs each case in the same worker.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


# -- the worker ----------------------------------------------------------------------------------
def compare(ref: list[np.ndarray], out: list[Any]) -> str:
    """'' if ``out`` matches ``ref`` as ONNX's runner checks it, else why not."""
    if len(ref) != len(out):
        return f"{len(out)} outputs, expected {len(ref)}"
    for r, o in zip(ref, out):
        o = np.asarray(o)
        r = np.asarray(r)
        if r.dtype == object:
            if not np.array_equal(r, o):
                return "object outputs differ"
            continue
        if r.dtype != o.dtype:
            return f"dtype {o.dtype}, expected {r.dtype}"
        if r.shape != o.shape:
            return f"shape {o.shape}, expected {r.shape}"
        try:
            np.testing.assert_allclose(o, r, rtol=RTOL[0], atol=RTOL[1])
        except AssertionError as e:
            lines = [ln for ln in str(e).splitlines() if "Max" in ln or "Mismatch" in ln]
            return "values differ: " + "; ".join(ln.strip() for ln in lines[:2])
    return ""


RTOL = [1e-3, 1e-7]


def first_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip().replace("\n", " | ")
    return text[:300]


def run_ort(case: dict[str, Any]) -> str:
    try:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 4
        sess = ort.InferenceSession(case["model"], opts, providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        for inputs, ref in case["data"]:
            out = sess.run(None, dict(zip(names, inputs)))
            why = compare(ref, out)
            if why:
                return why
        return ""
    except Exception as e:
        return first_line(e)


def import_case(case: dict[str, Any]) -> Any:
    """The case's module; inputs that decide shapes are bound to the first data set's values
    (case["bound"] lists them; the compiled function takes the others)."""
    import onnx

    from kiln.relax.frontend.onnx.backend import import_binding, runtime_inputs

    proto = onnx.load_from_string(case["model"])
    names = runtime_inputs(proto)
    values = dict(zip(names, case["data"][0][0])) if case["data"] else {}
    mod, bound = import_binding(proto, values, case["name"])
    for inputs, _ in case["data"][1:]:
        for n, v in zip(names, inputs):
            if n in bound and not np.array_equal(v, values[n]):
                raise ValueError(f"input {n!r} decides a shape and differs between data sets")
    case["keep"] = [k for k, n in enumerate(names) if n not in bound]
    return mod


def merge(mods: dict[str, Any]) -> Any:
    """One module with each case's ``main`` as a function named after the case."""
    from dataclasses import replace

    from kiln.ir import GlobalVar, IRModule
    from kiln.ir.node import as_attrs

    funcs = {}
    for name, mod in mods.items():
        f = mod["main"]
        attrs = dict(f.attrs.items()) if f.attrs else {}
        attrs["global_symbol"] = name
        funcs[GlobalVar(name)] = replace(f, attrs=as_attrs(attrs))
        # a case's own kernels (NonZero's) keep their names: such a case is built alone
        funcs.update({gv: g for gv, g in mod.items() if gv.name_hint != "main"})
    return IRModule(funcs)


def build(mod: Any, exec_mode: str) -> Any:
    from kiln import relax

    return relax.VirtualMachine(relax.build(mod, "c", exec_mode))


def run_kiln(vm: Any, name: str, case: dict[str, Any]) -> str:
    from kiln.relax.frontend.onnx.backend import as_numpy

    for inputs, ref in case["data"]:
        try:
            args = [np.asarray(inputs[k], order="C") for k in case["keep"]]
            out = as_numpy(vm[name](*args))
        except Exception as e:
            return "run: " + first_line(e)
        why = compare(ref, list(out))
        if why:
            return why
    return ""


def build_all(mods: dict[str, Any], exec_mode: str, fail: Any) -> dict[str, Any]:
    """A VM per case: the whole group built as one library; when that fails, each half on its
    own (bisecting down to the case that does not build, reported through ``fail``)."""
    alone = [n for n, m in mods.items() if len(m.functions) > 1 and len(mods) > 1]
    if alone:  # its helper functions' names could clash with another case's
        out = {}
        for n in alone:
            out.update(build_all({n: mods[n]}, exec_mode, fail))
        rest = {n: m for n, m in mods.items() if n not in alone}
        return {**out, **(build_all(rest, exec_mode, fail) if rest else {})}
    try:
        vm = build(merge(mods), exec_mode)
        return {fn: vm for fn in mods}
    except Exception as e:
        if len(mods) == 1:
            fail(next(iter(mods)), "build: " + first_line(e))
            return {}
    names = list(mods)
    half = len(names) // 2
    out = build_all({n: mods[n] for n in names[:half]}, exec_mode, fail)
    out.update(build_all({n: mods[n] for n in names[half:]}, exec_mode, fail))
    return out


def worker(paths: list[str], exec_mode: str, with_ort: bool, out_path: str, batch: int) -> None:
    """Run the cases in ``paths``, ``batch`` cases per library; results go to ``out_path``."""
    done = open(out_path, "a")
    for k in range(0, len(paths), batch):
        run_group(paths[k : k + batch], exec_mode, with_ort, done)


def run_group(paths: list[str], exec_mode: str, with_ort: bool, done: Any) -> None:
    cases = {}
    for p in paths:
        with open(p, "rb") as f:
            c = pickle.load(f)
        cases[c["fn"]] = c

    def report(fn: str, kiln: str, ort: str | None) -> None:
        done.write(json.dumps({"fn": fn, "kiln": kiln, "ort": ort}) + "\n")
        done.flush()

    t0 = time.perf_counter()
    ort_result = {fn: (run_ort(c) if with_ort else None) for fn, c in cases.items()}
    t1 = time.perf_counter()
    mods, failed = {}, {}
    for fn, c in cases.items():
        try:
            mods[fn] = import_case(c)
        except Exception as e:
            failed[fn] = "import: " + first_line(e)
    for fn, why in failed.items():
        report(fn, why, ort_result[fn])
    t2 = time.perf_counter()
    vms = (
        build_all(mods, exec_mode, lambda fn, why: report(fn, why, ort_result[fn])) if mods else {}
    )
    t3 = time.perf_counter()
    done.write(json.dumps({"start": "", "ort_s": t1 - t0, "import_s": t2 - t1,
                           "build_s": t3 - t2}) + "\n")  # fmt: skip
    for fn, vm in vms.items():
        done.write(json.dumps({"start": fn}) + "\n")
        done.flush()
        RTOL[:] = [cases[fn]["rtol"], cases[fn]["atol"]]
        report(fn, run_kiln(vm, fn, cases[fn]), ort_result[fn])


# -- the parent ----------------------------------------------------------------------------------
def load_cases(pattern: str) -> list[Any]:
    import warnings

    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    rx = re.compile(pattern) if pattern else None
    return [c for c in cases if rx is None or rx.search(c.name)]


def op_names() -> dict[str, str]:
    import onnx.defs

    return {s.name.lower(): s.name for s in onnx.defs.get_all_schemas_with_history()}


def op_of(case: Any, ops: dict[str, str]) -> str:
    """The ONNX op a case tests: its node's op, or for a multi-node case (an ``_expanded``
    function body) the longest op name its test name starts with."""
    nodes = case.model.graph.node
    if len(nodes) == 1:
        return nodes[0].op_type
    case_name = case.name.removesuffix("_expanded")
    flat = case_name.removeprefix("test_").replace("_", "").lower()
    best = ""
    for low in ops:
        if flat.startswith(low) and len(low) > len(best):
            best = low
    return ops.get(best, case_name.removeprefix("test_").split("_")[0])


def _array(value: Any) -> Any:
    """A data-set entry as numpy (some cases store TensorProtos, as ONNX's runner converts)."""
    from onnx import TensorProto, numpy_helper

    return numpy_helper.to_array(value) if isinstance(value, TensorProto) else value


def dump(cases: list[Any], folder: Path) -> list[str]:
    paths = []
    for i, c in enumerate(cases):
        fn = f"case{i:04d}_{re.sub(r'[^0-9A-Za-z_]', '_', c.name)}"[:80]
        data = [([_array(a) for a in ins], [_array(a) for a in outs]) for ins, outs in c.data_sets]
        blob = {
            "fn": fn,
            "name": c.name,
            "model": c.model.SerializeToString(),
            "data": data,
            "rtol": c.rtol,
            "atol": c.atol,
        }
        p = folder / f"{fn}.pkl"
        with open(p, "wb") as f:
            pickle.dump(blob, f)
        paths.append(str(p))
    return paths


def run_batch(paths: list[str], args: argparse.Namespace, folder: Path, k: int) -> list[dict]:
    """Run a batch in worker processes, restarting after a crash; the results."""
    out_path = folder / f"batch{k}.jsonl"
    results: dict[str, dict] = {}
    todo = list(paths)
    while todo:
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            out_path.as_posix(),
            args.exec_mode,
            "1" if args.ort else "0",
            str(args.batch),
            *todo,
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            rc, err = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired:
            rc, err = -9, "timeout"
        started = None
        if out_path.exists():
            for line in out_path.read_text().splitlines():
                rec = json.loads(line)
                if "start" in rec:
                    started = rec["start"]
                else:
                    results[rec["fn"]] = rec
                    started = None if started == rec["fn"] else started
        left = [p for p in todo if Path(p).stem not in results]
        if rc == 0 and not left:
            break
        if not left:
            break
        crashed = started if started and started not in results else Path(left[0]).stem
        why = "crashed" if rc < 0 else f"worker failed: {err.strip().splitlines()[-1:]}"
        results[crashed] = {"fn": crashed, "kiln": why, "ort": None}
        todo = [p for p in left if Path(p).stem != crashed]
    if out_path.exists():
        for line in out_path.read_text().splitlines():
            if "build_s" in line:
                PHASES.append(json.loads(line))
    return list(results.values())


PHASES: list[dict] = []  # the workers' time per phase, one record per batch process


def table(rows: dict[str, list[int]], failures: dict[str, list[str]]) -> str:
    lines = ["| op | cases | kiln passed | onnxruntime passed |", "|---|---:|---:|---:|"]
    for op in sorted(rows):
        n, k, o = rows[op]
        lines.append(f"| {op} | {n} | {k} | {o} |")
    return "\n".join(lines)


def _reason(message: str) -> str:
    """A failure message without the case's name, short (for grouping)."""
    text = message.split(": ", 1)[1] if ": " in message else message
    text = re.sub(r"test_\w+(: )?", "", text)
    text = re.sub(r"node '[^']*' ", "", text).replace("FrontendError: ", "")
    text = re.sub(r"\d+ operator\(s\) kiln does not support \(opset \d+\):.*", "no converter", text)
    text = re.sub(r"opset (\d+) of the default ONNX domain is not supported.*", r"opset \1", text)
    return text.replace("|", "/")[:90]


def failure_table(rows: dict[str, list[int]], failures: dict[str, list[str]]) -> str:
    """Markdown: each op with a kiln failure, its counts and the most common reason."""
    lines = [
        "| op | cases | kiln passed | onnxruntime passed | most common kiln failure |",
        "|---|---:|---:|---:|---|",
    ]
    for op in sorted(rows):
        n, k, o = rows[op]
        if k == n:
            continue
        reasons = collections.Counter(_reason(m) for m in failures[op])
        why, count = reasons.most_common(1)[0]
        lines.append(f"| {op} | {n} | {k} | {o} | {why} ({count}) |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--batch", type=int, default=48)
    ap.add_argument("--exec-mode", default="compiled", choices=["compiled", "bytecode"])
    ap.add_argument("-k", "--filter", default="", help="regex on the case name")
    ap.add_argument("--no-ort", dest="ort", action="store_false")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per worker process")
    ap.add_argument("--markdown", help="write the failure table (markdown) to this file")
    ap.add_argument("--json", help="write every case's result to this file")
    args = ap.parse_args()
    t0 = time.time()
    cases = load_cases(args.filter)
    ops = op_names()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = dump(cases, folder)
        # NOTE: a few long-lived worker processes per job (each building its cases `--batch` at
        # a time) rather than one per batch: every process pays ~2.5 s of imports
        groups = max(1, min(len(paths) // args.batch, args.jobs * 4))
        batches = [paths[g::groups] for g in range(groups)]
        results: list[dict] = []
        with ThreadPoolExecutor(args.jobs) as pool:
            futs = [pool.submit(run_batch, b, args, folder, k) for k, b in enumerate(batches)]
            for n, f in enumerate(futs):
                results += f.result()
                print(f"\r{n + 1}/{len(batches)} batches", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    by_fn = {r["fn"]: r for r in results}
    rows: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    failures: dict[str, list[str]] = collections.defaultdict(list)
    records = []
    for p, c in zip(paths, cases):
        r = by_fn.get(Path(p).stem, {"kiln": "no result", "ort": None})
        op = op_of(c, ops)
        rows[op][0] += 1
        rows[op][1] += r["kiln"] == ""
        rows[op][2] += r["ort"] == ""
        if r["kiln"]:
            failures[op].append(f"{c.name}: {r['kiln']}")
        records.append({"case": c.name, "op": op, "kiln": r["kiln"], "ort": r["ort"]})
    total = len(cases)
    k_pass = sum(v[1] for v in rows.values())
    o_pass = sum(v[2] for v in rows.values())
    print(table(rows, failures))
    print(f"\nkiln: {k_pass} passed, {total - k_pass} failed of {total} node cases")
    if args.ort:
        print(f"onnxruntime: {o_pass} passed, {total - o_pass} failed of {total} node cases")
    print(
        f"runtime: {time.time() - t0:.0f} s (-j {args.jobs}, batches of {args.batch}, "
        f"{args.exec_mode} mode)"
    )
    spent = {k: sum(p[k] for p in PHASES) for k in ("ort_s", "import_s", "build_s")}
    print("worker time (s, summed over workers): " + ", ".join(
        f"{k[:-2]} {v:.0f}" for k, v in spent.items()))  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    if args.markdown:
        Path(args.markdown).write_text(failure_table(rows, failures) + "\n")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        sys.path.insert(0, str(ROOT))
        try:
            worker(sys.argv[6:], sys.argv[3], sys.argv[4] == "1", sys.argv[2], int(sys.argv[5]))
        except Exception:
            traceback.print_exc()
            sys.exit(1)
    else:
        main()
