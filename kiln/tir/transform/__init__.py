"""TIR passes, one per file. Each maps an `IRModule` to an `IRModule` (see `kiln.ir.Pass`)."""

from kiln.tir.transform.flatten_buffer import FlattenBuffer
from kiln.tir.transform.make_packed_api import DimCheck, MakePackedAPI, PackedAPI, PackedArg

__all__ = ["DimCheck", "FlattenBuffer", "MakePackedAPI", "PackedAPI", "PackedArg"]
