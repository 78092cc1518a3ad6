"""Hand-built kernels and host functions in the form LowerDeviceKernelLaunch produces.

A kernel is a PrimFunc with ``calling_conv`` 2, a ``global_symbol``, ``tir.kernel_launch_params``
and typed pointer parameters; its host caller launches it with
``launch_kernel("symbol", *args, *extents)``. These builders keep the CUDA tests independent of
the host/device splitting passes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kiln import tir
from kiln.ir import GlobalVar, IRModule
from kiln.ir.target import Target
from kiln.tir.type import pointer_to

CUDA = Target("cuda", host="c")


def ptr(name: str, dtype: str, scope: str = "") -> tir.Var:
    """A typed pointer variable (a kernel parameter or an allocation)."""
    return tir.Var(name, pointer_to(dtype, scope))


def buf(data: tir.Var, shape: Sequence[Any], dtype: str) -> tir.Buffer:
    return tir.decl_buffer(tuple(shape), dtype, data.name, data=data)


def thread(tag: str, extent: Any, body: Callable[[tir.Var], tir.Stmt]) -> tir.AttrStmt:
    """``with T.launch_thread(tag, extent) as v: body(v)``."""
    v = tir.Var(tag.replace("Idx.", "_"), "int32")
    iv = tir.IterVar(tir.Range(0, extent), v, tir.IterKind.THREAD_INDEX, tag)
    return tir.AttrStmt(iv, "thread_extent", extent, body(v))


def kernel(
    symbol: str, params: Sequence[tir.Var], body: tir.Stmt, tags: Sequence[str]
) -> tir.PrimFunc:
    """A kernel PrimFunc in the contract form."""
    attrs = {
        "target": Target("cuda"),
        "calling_conv": 2,
        "global_symbol": symbol,
        "tir.noalias": True,
        "tir.kernel_launch_params": tuple(tags),
        "tir.is_global_func": True,
    }
    return tir.PrimFunc(tuple(params), body, attrs=attrs)


def launch(symbol: str, args: Sequence[Any], extents: Sequence[Any]) -> tir.Evaluate:
    """The host statement that launches kernel ``symbol``."""
    return tir.Evaluate(
        tir.call_intrin("int32", "launch_kernel", tir.StringImm(symbol), *args, *extents)
    )


def host(
    symbol: str, buffers: dict[str, tuple[Sequence[Any], str]], body: Callable[..., tir.Stmt]
) -> tir.PrimFunc:
    """An exposed host function taking tensors; ``body(**buffers)`` launches kernels."""
    params, bmap, named = [], {}, {}
    for name, (shape, dtype) in buffers.items():
        h = tir.Var(name, "handle")
        b = tir.decl_buffer(tuple(shape), dtype, name)
        params.append(h)
        bmap[h] = b
        named[name] = b
    attrs = {"global_symbol": symbol, "target": Target("c")}
    return tir.PrimFunc(tuple(params), body(**named), buffer_map=bmap, attrs=attrs)


def module(*funcs: tir.PrimFunc) -> IRModule:
    return IRModule({GlobalVar(f.global_symbol or "f"): f for f in funcs})


def vector_add(n: int = 1000, dtype: str = "float32", block: int = 128) -> IRModule:
    """``C = A + B`` over ``n`` elements: one kernel, one thread per element."""
    a, b, c = ptr("A", dtype), ptr("B", dtype), ptr("C", dtype)
    size = tir.Var("n", "int32")
    ab, bb, cb = (buf(p, (size,), dtype) for p in (a, b, c))
    grid = (size + block - 1) // block

    def body(bx: tir.Var) -> tir.Stmt:
        def inner(tx: tir.Var) -> tir.Stmt:
            i = bx * block + tx
            store = tir.BufferStore(cb, tir.BufferLoad(ab, (i,)) + tir.BufferLoad(bb, (i,)), (i,))
            return tir.IfThenElse(i < size, store)

        return thread("threadIdx.x", block, inner)

    k = kernel(
        "vadd_kernel",
        (a, b, c, size),
        thread("blockIdx.x", grid, body),
        ("blockIdx.x", "threadIdx.x"),
    )
    blocks = (n + block - 1) // block
    h = host(
        "vadd",
        {"A": ((n,), dtype), "B": ((n,), dtype), "C": ((n,), dtype)},
        lambda A, B, C: launch("vadd_kernel", (A.data, B.data, C.data, n), (blocks, block)),
    )
    return module(h, k)


def _seq(*stmts: tir.Stmt) -> tir.Stmt:
    return tir.SeqStmt(tuple(stmts)) if len(stmts) > 1 else stmts[0]


def _sync() -> tir.Evaluate:
    return tir.Evaluate(tir.call_intrin("int32", "tvm_storage_sync", tir.StringImm("shared")))


def _alloc(var: tir.Var, dtype: str, count: Any, body: tir.Stmt) -> tir.Allocate:
    return tir.Allocate(var, dtype, (count,), tir.const(True, "bool"), body)


def block_sum(n: int = 4096, block: int = 256) -> IRModule:
    """``out[b] = sum(x[b*block : (b+1)*block])``: a shared-memory tree reduction per block."""
    x, out = ptr("x", "float32"), ptr("out", "float32")
    xb, ob = buf(x, (n,), "float32"), buf(out, (n // block,), "float32")
    sm = ptr("partial", "float32", "shared")
    smb = buf(sm, (block,), "float32")

    def body(bx: tir.Var) -> tir.Stmt:
        def inner(tx: tir.Var) -> tir.Stmt:
            steps: list[tir.Stmt] = [
                tir.BufferStore(smb, tir.BufferLoad(xb, (bx * block + tx,)), (tx,)),
                _sync(),
            ]
            stride = block // 2
            while stride > 0:
                total = tir.BufferLoad(smb, (tx,)) + tir.BufferLoad(smb, (tx + stride,))
                steps.append(tir.IfThenElse(tx < stride, tir.BufferStore(smb, total, (tx,))))
                steps.append(_sync())
                stride //= 2
            steps.append(
                tir.IfThenElse(tx.eq(0), tir.BufferStore(ob, tir.BufferLoad(smb, (0,)), (bx,)))
            )
            return _alloc(sm, "float32", block, _seq(*steps))

        return thread("threadIdx.x", block, inner)

    k = kernel(
        "block_sum_kernel",
        (x, out),
        thread("blockIdx.x", n // block, body),
        ("blockIdx.x", "threadIdx.x"),
    )
    h = host(
        "block_sum",
        {"x": ((n,), "float32"), "out": ((n // block,), "float32")},
        lambda x, out: launch("block_sum_kernel", (x.data, out.data), (n // block, block)),
    )
    return module(h, k)


def tiled_matmul(m: int = 64, n: int = 48, k: int = 80, tile: int = 16) -> IRModule:
    """``C = A @ B`` with ``tile``x``tile`` blocks staged through shared memory."""
    a, b, c = ptr("A", "float32"), ptr("B", "float32"), ptr("C", "float32")
    ab, bb, cb = (
        buf(a, (m * k,), "float32"),
        buf(b, (k * n,), "float32"),
        buf(c, (m * n,), "float32"),
    )
    sa, sb = ptr("As", "float32", "shared"), ptr("Bs", "float32", "shared")
    sab, sbb = buf(sa, (tile * tile,), "float32"), buf(sb, (tile * tile,), "float32")
    acc = ptr("acc", "float32", "local")
    accb = buf(acc, (1,), "float32")

    def compute(by: tir.Var, bx: tir.Var, ty: tir.Var, tx: tir.Var) -> tir.Stmt:
        row, col = by * tile + ty, bx * tile + tx
        k0, kk = tir.Var("k0", "int32"), tir.Var("kk", "int32")
        load_a = tir.BufferStore(
            sab, tir.BufferLoad(ab, (row * k + k0 * tile + tx,)), (ty * tile + tx,)
        )
        load_b = tir.BufferStore(
            sbb, tir.BufferLoad(bb, ((k0 * tile + ty) * n + col,)), (ty * tile + tx,)
        )
        prod = tir.BufferLoad(sab, (ty * tile + kk,)) * tir.BufferLoad(sbb, (kk * tile + tx,))
        update = tir.BufferStore(accb, tir.BufferLoad(accb, (0,)) + prod, (0,))
        inner = tir.For(kk, 0, tile, tir.ForKind.UNROLLED, update)
        outer = tir.For(
            k0, 0, k // tile, tir.ForKind.SERIAL, _seq(load_a, load_b, _sync(), inner, _sync())
        )
        init = tir.BufferStore(accb, tir.const(0.0, "float32"), (0,))
        store = tir.BufferStore(cb, tir.BufferLoad(accb, (0,)), (row * n + col,))
        body = _alloc(acc, "float32", 1, _seq(init, outer, store))
        return _alloc(sa, "float32", tile * tile, _alloc(sb, "float32", tile * tile, body))

    body = thread(
        "blockIdx.y",
        m // tile,
        lambda by: thread(
            "blockIdx.x",
            n // tile,
            lambda bx: thread(
                "threadIdx.y",
                tile,
                lambda ty: thread("threadIdx.x", tile, lambda tx: compute(by, bx, ty, tx)),
            ),
        ),
    )
    tags = ("blockIdx.y", "blockIdx.x", "threadIdx.y", "threadIdx.x")
    kern = kernel("matmul_kernel", (a, b, c), body, tags)
    h = host(
        "matmul",
        {"A": ((m * k,), "float32"), "B": ((k * n,), "float32"), "C": ((m * n,), "float32")},
        lambda A, B, C: launch(
            "matmul_kernel", (A.data, B.data, C.data), (m // tile, n // tile, tile, tile)
        ),
    )
    return module(h, kern)


def reverse_blocks(n: int = 1024, block: int = 128) -> IRModule:
    """Reverse each block of ``x`` into ``y`` through *dynamic* shared memory."""
    x, y = ptr("x", "float32"), ptr("y", "float32")
    xb, yb = buf(x, (n,), "float32"), buf(y, (n,), "float32")
    sm = ptr("stage", "float32", "shared.dyn")
    smb = buf(sm, (block,), "float32")

    def body(bx: tir.Var) -> tir.Stmt:
        def inner(tx: tir.Var) -> tir.Stmt:
            put = tir.BufferStore(smb, tir.BufferLoad(xb, (bx * block + tx,)), (tx,))
            get = tir.BufferStore(yb, tir.BufferLoad(smb, (block - 1 - tx,)), (bx * block + tx,))
            return _alloc(sm, "float32", block, _seq(put, _sync(), get))

        return thread("threadIdx.x", block, inner)

    tags = ("blockIdx.x", "threadIdx.x", "tir.use_dyn_shared_memory")
    k = kernel("reverse_kernel", (x, y), thread("blockIdx.x", n // block, body), tags)
    h = host(
        "reverse",
        {"x": ((n,), "float32"), "y": ((n,), "float32")},
        lambda x, y: launch("reverse_kernel", (x.data, y.data), (n // block, block, block * 4)),
    )
    return module(h, k)


def helper_call(n: int = 256) -> IRModule:
    """A kernel calling a value-returning and a void ``__device__`` helper."""
    x = ptr("x", "float32")
    xb = buf(x, (n,), "float32")
    v = tir.Var("v", "float32")
    square = tir.PrimFunc(
        (v,),
        tir.Evaluate(tir.call_intrin("float32", "ret", v * v)),
        tir.PrimType("float32"),
        attrs={"target": Target("cuda"), "calling_conv": 0},
    )
    p, i = ptr("p", "float32"), tir.Var("i", "int32")
    pb = buf(p, (n,), "float32")
    bump = tir.PrimFunc(
        (p, i),
        tir.BufferStore(pb, tir.BufferLoad(pb, (i,)) + tir.const(1.0, "float32"), (i,)),
        attrs={"target": Target("cuda"), "calling_conv": 0},
    )
    sq_gv, bump_gv = GlobalVar("square"), GlobalVar("bump")

    def inner(tx: tir.Var) -> tir.Stmt:
        call = tir.Call("float32", sq_gv, (tir.BufferLoad(xb, (tx,)),))
        return _seq(
            tir.BufferStore(xb, call, (tx,)), tir.Evaluate(tir.Call("void", bump_gv, (x, tx)))
        )

    k = kernel("square_plus_one", (x,), thread("threadIdx.x", n, inner), ("threadIdx.x",))
    h = host("sq1", {"x": ((n,), "float32")}, lambda x: launch("square_plus_one", (x.data,), (n,)))
    return IRModule(
        {GlobalVar("sq1"): h, GlobalVar("square_plus_one"): k, sq_gv: square, bump_gv: bump}
    )


def exp_scale(dtype: str, n: int = 512, block: int = 128) -> IRModule:
    """``y = exp(x) * 0.5 + x`` in ``dtype`` (float16 / bfloat16 computed natively on CUDA)."""
    x, y = ptr("x", dtype), ptr("y", dtype)
    xb, yb = buf(x, (n,), dtype), buf(y, (n,), dtype)

    def body(bx: tir.Var) -> tir.Stmt:
        def inner(tx: tir.Var) -> tir.Stmt:
            i = bx * block + tx
            xi = tir.BufferLoad(xb, (i,))
            value = tir.exp(xi) * tir.const(0.5, dtype) + xi
            return tir.BufferStore(yb, value, (i,))

        return thread("threadIdx.x", block, inner)

    k = kernel(
        f"exp_scale_{dtype}",
        (x, y),
        thread("blockIdx.x", n // block, body),
        ("blockIdx.x", "threadIdx.x"),
    )
    h = host(
        "exp_scale",
        {"x": ((n,), dtype), "y": ((n,), dtype)},
        lambda x, y: launch(k.global_symbol, (x.data, y.data), (n // block, block)),
    )
    return module(h, k)
