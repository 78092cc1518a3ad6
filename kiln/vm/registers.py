"""Register allocation of a VM function: one register per value, in program order.

Parameters take registers 0..n-1. Compiled mode reserves register n for the result (the
any-list contract of `kiln.runtime.vm_anylist`: the VM takes it from there); then every call
with a result, tuple, tuple item and ``If`` merge gets the next register. NOTE: registers are
never reused: a register keeps its value alive until the function returns, and memory planning
(`StaticPlanBlockMemory`) has already made intermediate tensors share storage, so reuse would
save only a few bytes of frame. The numbering is the one the seed's expected TIR spells out.
"""

from __future__ import annotations


class Registers:
    """The register counter of one VM function."""

    def __init__(self, num_params: int, result_register: bool) -> None:
        self.params = num_params
        self.count = num_params
        self.result = self.new() if result_register else -1

    def new(self) -> int:
        """A fresh register."""
        self.count += 1
        return self.count - 1

    def param(self, i: int) -> int:
        """The register of parameter ``i``."""
        if not 0 <= i < self.params:
            raise IndexError(f"parameter {i} of {self.params}")
        return i
