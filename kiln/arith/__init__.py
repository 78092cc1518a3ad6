"""Integer arithmetic analysis for index expressions: constant bounds and a simplifier.

- `const_int_bound(e, var_bounds)` / `Analyzer.const_int_bound`: a `ConstIntBound` interval.
- `simplify(e, var_bounds)` / `Analyzer.simplify`: rule-driven rewriting (see `kiln.arith.rules`).
- `Analyzer.can_prove(cond)`: True only when ``cond`` provably holds.
- `simplify_stmt(stmt)`: every expression of a statement, with loop ranges bound.

The simplifier keeps values exactly: wherever the input evaluates without signed overflow
(undefined in the C kiln generates), the result evaluates to the same value without overflow;
a rewrite that could introduce an overflow is refused (`kiln.arith.overflow`). The `Simplify`
pass (`kiln.tir.transform`) runs it over every function in the default pipeline.
"""

from kiln.arith.bound import ConstIntBound, const_int_bound
from kiln.arith.simplify import Analyzer, simplify, simplify_stmt

__all__ = ["Analyzer", "ConstIntBound", "const_int_bound", "simplify", "simplify_stmt"]
