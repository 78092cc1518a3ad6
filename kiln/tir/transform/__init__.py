"""TIR passes, one per file. Each maps an `IRModule` to an `IRModule` (see `kiln.ir.Pass`)."""

from kiln.tir.function import PrimFuncPass
from kiln.tir.transform.annotate_device_regions import AnnotateDeviceRegions
from kiln.tir.transform.bind_target import BindTarget
from kiln.tir.transform.flatten_buffer import FlattenBuffer
from kiln.tir.transform.legalize_storage import LegalizeStorage
from kiln.tir.transform.loop_partition import LoopPartition
from kiln.tir.transform.lower_device_kernel_launch import LowerDeviceKernelLaunch
from kiln.tir.transform.lower_intrin import LowerIntrin
from kiln.tir.transform.make_packed_api import DimCheck, MakePackedAPI, PackedAPI, PackedArg
from kiln.tir.transform.merge_shared_memory import MergeSharedMemoryAllocations
from kiln.tir.transform.outline_parallel import OutlineParallelLoops
from kiln.tir.transform.simplify import Simplify
from kiln.tir.transform.split_host_device import SplitHostDevice
from kiln.tir.transform.thread_sync import ThreadSync
from kiln.tir.transform.vectorize_loop import VectorizeLoop

__all__ = [
    "PrimFuncPass",
    "AnnotateDeviceRegions",
    "BindTarget",
    "DimCheck",
    "FlattenBuffer",
    "LegalizeStorage",
    "LoopPartition",
    "LowerDeviceKernelLaunch",
    "LowerIntrin",
    "MakePackedAPI",
    "MergeSharedMemoryAllocations",
    "OutlineParallelLoops",
    "PackedAPI",
    "PackedArg",
    "Simplify",
    "SplitHostDevice",
    "ThreadSync",
    "VectorizeLoop",
]
