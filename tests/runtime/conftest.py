"""Fixtures for runtime tests: an isolated cache directory, a counting compiler, C sources."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from kiln.runtime import find_compiler, metadata_c_source

REPO_ROOT = Path(__file__).resolve().parents[2]

# NOTE: tvm-ffi passes numpy arrays and torch tensors as kTVMFFITensor objects whose DLTensor
# follows the TVMFFIObject header; C callers may pass a raw DLTensor* (kTVMFFIDLTensorPtr).
KERNELS_C = r"""
#include <tvm/ffi/c_api.h>
#include <stddef.h>
#include <stdint.h>

static DLTensor* arg_tensor(const TVMFFIAny* a) {
  if (a->type_index == kTVMFFIDLTensorPtr) return (DLTensor*)a->v_ptr;
  if (a->type_index == kTVMFFITensor) return (DLTensor*)((char*)a->v_obj + sizeof(TVMFFIObject));
  return NULL;
}

static int64_t numel(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

static int is_f32(const DLTensor* t) { return t->dtype.code == kDLFloat && t->dtype.bits == 32; }

int __tvm_ffi_add_one(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)self;
  (void)result;
  if (num_args != 2) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add_one: expected 2 arguments (x, out)");
    return -1;
  }
  DLTensor* x = arg_tensor(&args[0]);
  DLTensor* y = arg_tensor(&args[1]);
  if (x == NULL || y == NULL || !is_f32(x) || !is_f32(y)) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add_one: x and out must be float32 tensors");
    return -1;
  }
  int64_t n = numel(x);
  if (numel(y) != n) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "add_one: x and out differ in size");
    return -1;
  }
  const float* xp = (const float*)((const char*)x->data + x->byte_offset);
  float* yp = (float*)((char*)y->data + y->byte_offset);
  for (int64_t i = 0; i < n; ++i) yp[i] = xp[i] + 1.0f;
  return 0;
}

int __tvm_ffi_raise_value_error(void* self, const TVMFFIAny* args, int32_t num_args,
                                TVMFFIAny* result) {
  (void)self;
  (void)args;
  (void)num_args;
  (void)result;
  TVMFFIErrorSetRaisedFromCStr("ValueError", "kiln test: the value is bad");
  return -1;
}

/* Exported but not listed in the metadata: kiln must not expose it. */
int __tvm_ffi_hidden(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)self;
  (void)args;
  (void)num_args;
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = 42;
  return 0;
}
"""

EXPOSED = ["add_one", "raise_value_error"]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty KILN_CACHE_DIR."""
    d = tmp_path / "cache"
    monkeypatch.setenv("KILN_CACHE_DIR", str(d))
    monkeypatch.delenv("KILN_CC", raising=False)
    return d


@pytest.fixture
def bare_kernels_source() -> str:
    """The hand-written kernels alone, without kiln metadata."""
    return KERNELS_C


@pytest.fixture
def kernels_source() -> str:
    """The hand-written kernels plus kiln metadata listing add_one and raise_value_error."""
    return KERNELS_C + metadata_c_source(EXPOSED)


def _write_counting_cc(directory: Path, delay_s: float = 0.0) -> tuple[Path, Path]:
    """A compiler wrapper that logs each compile (not `--version`) and runs the real compiler."""
    real = " ".join(find_compiler())
    log = directory / "compiles.log"
    script = directory / "counting-cc"
    script.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" -o "*) echo compile >> "{log}"; sleep {delay_s};; esac\n'
        f'exec {real} "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script, log


@pytest.fixture
def counting_cc(
    cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[], int]:
    """Set KILN_CC to a counting wrapper; the returned function reads the compile count."""
    script, log = _write_counting_cc(tmp_path)
    monkeypatch.setenv("KILN_CC", str(script))

    def count() -> int:
        return len(log.read_text().splitlines()) if log.exists() else 0

    return count


@pytest.fixture
def make_counting_cc() -> Callable[[Path, float], tuple[Path, Path]]:
    """Factory: (directory, delay_s) -> (wrapper script, log file)."""
    return _write_counting_cc


@pytest.fixture
def child_env(cache_dir: Path) -> dict[str, str]:
    """Environment for a fresh Python process that imports kiln from this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    return env
