"""Table-driven entry checks: a `PackedAPI` made of the common checks as static data and one call.

An exposed function's tvm-ffi entry spelled each check of its plan as a C statement of its own:
a convolution with five tensor arguments had about 40 helper calls with their string literals,
and GCC spent about a third of a ResNet-50 unit's compile time on the entries (measured: one
unit of 7 convolution kernels, 2.11 s with its entries, 1.44 s without). When a plan holds only
the common checks — tensor arguments, compact strides, shape dims that are constants or plain
variables, overlap pairs — the entry is instead a few static tables and one call of
``kiln_check_tensors``, which performs the same checks in the same order with the same messages:

1. the argument count;
2. each argument as a tensor of its dtype, ndim and device with non-null data (``kiln_arg_tensor``);
3. compact row-major strides of each;
4. each shape dim in argument order: a constant must match; a variable is bound (range-checked
   for its type) at its first sight and must match its bound value after;
5. the overlap pairs.

Any other plan (scalar arguments, declared strides or offsets, element-count checks, dims that
are expressions) keeps the statement-per-check entry of `kiln.codegen.c_host`.
"""

from __future__ import annotations

from typing import Any

from kiln.codegen.c_expr import c_string
from kiln.tir import expr as E
from kiln.tir.packed_api import PackedAPI

TABLE_HELPER = r"""
/* An entry's tensor argument for kiln_check_tensors: dims[k] >= 0 is a constant; -1 - 2 * s
   binds variable s (its first sight); -2 - 2 * s must equal variable s. */
typedef struct {
  const char* name; DLDataType dtype; const char* dtype_name; int32_t ndim; const int64_t* dims;
} kiln_tensor_spec;

/* A variable dim: name, type and range, and the note of a mismatch (" (n, from x.shape[0])"). */
typedef struct {
  const char* name; const char* type; int64_t lo, hi; const char* note;
} kiln_var_spec;

static int kiln_arg_count_error(int32_t num_args, const char* fn, const kiln_tensor_spec* ts,
                                int32_t n) {
  char names[512];
  size_t used = 0;
  names[0] = 0;
  for (int32_t i = 0; i < n && used < sizeof(names); ++i) {
    used += (size_t)snprintf(names + used, sizeof(names) - used, i ? ", %s" : "%s", ts[i].name);
  }
  return kiln_fail("TypeError", "%s: expected %d argument%s (%s), got %d", fn, (int)n,
                   n == 1 ? "" : "s", names, (int)num_args);
}

static int kiln_check_shape(const DLTensor* t, const kiln_tensor_spec* s, const char* fn,
                            const kiln_var_spec* vs, int64_t* v) {
  char what[320];
  for (int32_t k = 0; k < s->ndim; ++k) {
    int64_t want = s->dims[k], got = t->shape[k];
    int32_t var = (int32_t)((-1 - want) / 2);
    if (want >= 0 ? got == want : (want & 1) ? got >= vs[var].lo && got <= vs[var].hi
                                              : got == v[var]) {
      if (want < 0 && (want & 1)) v[var] = got;
      continue;
    }
    snprintf(what, sizeof(what), "%s.shape[%d]", s->name, (int)k);
    if (want >= 0) return kiln_check_dim(got, want, fn, what, "");
    if (want & 1) return kiln_bind_int(got, vs[var].lo, vs[var].hi, fn, what, vs[var].name,
                                       vs[var].type);
    return kiln_check_dim(got, v[var], fn, what, vs[var].note);
  }
  return 0;
}

/* The checks of an entry whose plan is a table (kiln.codegen.c_entry_table): fills t[] with
   the tensors and v[] with the variables' values, or raises and returns -1. */
static int kiln_check_tensors(const TVMFFIAny* args, int32_t num_args, const char* fn,
                              const kiln_tensor_spec* ts, int32_t n, const kiln_var_spec* vs,
                              int32_t device, DLTensor** t, int64_t* v) {
  if (num_args != n) return kiln_arg_count_error(num_args, fn, ts, n);
  for (int32_t i = 0; i < n; ++i) {
    if (kiln_arg_tensor(args, i, fn, ts[i].name, ts[i].dtype, ts[i].dtype_name, ts[i].ndim,
                        device, &t[i]) != 0) return -1;
  }
  for (int32_t i = 0; i < n; ++i) {
    if (kiln_check_compact(t[i], fn, ts[i].name) != 0) return -1;
  }
  for (int32_t i = 0; i < n; ++i) {
    if (kiln_check_shape(t[i], &ts[i], fn, vs, v) != 0) return -1;
  }
  return 0;
}
"""
"""The C of the table checks (needs the ``tensor_args`` helpers)."""

PAIRS_HELPER = r"""
/* The overlap pairs of a table entry (after kiln_check_tensors). */
static int kiln_check_pairs(DLTensor** t, const kiln_tensor_spec* ts, const char* fn,
                            const int32_t* pairs, int32_t npairs) {
  for (int32_t p = 0; p < npairs; ++p) {
    int32_t a = pairs[2 * p], b = pairs[2 * p + 1];
    if (kiln_check_overlap(t[a], t[b], fn, ts[a].name, ts[b].name) != 0) return -1;
  }
  return 0;
}
"""
"""The overlap checks of a table entry (needs the ``overlap_args`` helpers)."""


def table_ready(api: PackedAPI) -> bool:
    """Whether ``api`` holds only the checks a table expresses (see the module docstring)."""
    if api.counts or not api.args or any(a.buffer is None for a in api.args):
        return False
    if len(api.compact) != len(api.args):
        return False
    return all(c.field == "shape" and isinstance(c.value, (E.IntImm, E.Var)) for c in api.checks)


def _dims(api: PackedAPI, slots: dict[E.Var, int], notes: dict[E.Var, str]) -> list[list[int]]:
    """Per argument, its encoded shape dims (see ``kiln_tensor_spec``); fills the variables'
    slots and mismatch notes in order of first sight."""
    dims: list[list[int]] = [[0] * len(a.buffer.shape) for a in api.args]  # type: ignore[union-attr]
    for c in api.checks:
        value = c.value
        if isinstance(value, E.IntImm):
            dims[c.arg][c.axis] = value.value
            continue
        assert isinstance(value, E.Var)
        if c.binds:
            slots[value] = len(slots)
            notes[value] = f" ({value.name}, from argument {api.args[c.arg].name}.shape[{c.axis}])"
            dims[c.arg][c.axis] = -1 - 2 * slots[value]
        else:
            dims[c.arg][c.axis] = -2 - 2 * slots[value]
    return dims


def entry_tables(
    api: PackedAPI, prefix: str, int_range: Any, dl_dtype: Any
) -> tuple[str, list[str]]:
    """The static tables of ``api``'s entry (named from ``prefix``) and the calls that check
    them, each a C expression that is nonzero on failure, to be completed with
    ``, <device>, kiln_t, kiln_v)`` for the first (``kiln_t`` and ``kiln_v`` are the entry's
    tensor and variable arrays)."""
    slots: dict[E.Var, int] = {}
    notes: dict[E.Var, str] = {}
    dims = _dims(api, slots, notes)
    lines = []
    specs = []
    for i, (a, ds) in enumerate(zip(api.args, dims)):
        buf = a.buffer
        assert buf is not None
        table = "NULL"
        if ds:
            table = f"{prefix}_d{i}"
            lines.append(f"static const int64_t {table}[] = {{{', '.join(f'{d}LL' for d in ds)}}};")
        dt = buf.dtype
        specs.append(
            f"{{{c_string(a.name)}, {dl_dtype(dt)}, {c_string(str(dt))}, {len(ds)}, {table}}}"
        )
    lines.append(f"static const kiln_tensor_spec {prefix}_args[] = {{{', '.join(specs)}}};")
    var_table = "NULL"
    if slots:
        var_table = f"{prefix}_vars"
        rows = []
        for v in slots:
            lo, hi = int_range(v.dtype)
            name, typ, note = c_string(v.name), c_string(str(v.dtype)), c_string(notes[v])
            rows.append(f"{{{name}, {typ}, {lo}, {hi}, {note}}}")
        lines.append(f"static const kiln_var_spec {var_table}[] = {{{', '.join(rows)}}};")
    fn = c_string(api.symbol)
    calls = [
        f"kiln_check_tensors(args, num_args, {fn}, {prefix}_args, {len(api.args)}, {var_table}"
    ]
    if api.overlaps:
        flat = ", ".join(f"{i}, {j}" for i, j in api.overlaps)
        lines.append(f"static const int32_t {prefix}_pairs[] = {{{flat}}};")
        n = len(api.overlaps)
        calls.append(f"kiln_check_pairs(kiln_t, {prefix}_args, {fn}, {prefix}_pairs, {n})")
    return "\n".join(lines) + "\n", calls


def variable_slots(api: PackedAPI) -> list[E.Var]:
    """The variables the table binds, in slot order."""
    return [c.value for c in api.checks if c.binds and isinstance(c.value, E.Var)]
