"""A malformed-script fuzzer: seeded token mutations of the script corpora.

Each mutant (a token deleted or doubled, a name swapped for another of the file, a number, string
or operator replaced: shapes, dtypes, indices, extents...) must either be refused with a
`ScriptError` that has a location and is not an internal error, or parse into IR that verifies
and prints as script that parses back equal; a sample of the accepted TIR mutants is lowered for
the C target and its C compiled. Counted as failures: any other exception (an internal
traceback), a `ScriptError` without a location or reporting an internal error, an accepted module
that fails the verifier or does not print and parse back equal, and generated C the compiler
rejects (an invalid program accepted). A build refused with a kiln error (``PassError``,
``CodegenError``) is a clear refusal, not a failure.

Deterministic (fixed seed, corpus files in sorted order); about 10 s.
"""

from __future__ import annotations

import functools
import io
import random
import re
import subprocess
import tokenize
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import kiln.script
from kiln.codegen.build import generate
from kiln.driver import lower
from kiln.errors import KilnError, ScriptError
from kiln.ir import IRModule, Target, structural_equal
from kiln.relax.analysis.well_formed import well_formed_errors
from kiln.runtime.toolchain import find_compiler
from kiln.tir import PrimFunc, verify_well_formed

HERE = Path(__file__).parent
SEED = 20_260_522
TIR_MUTANTS = 300
RELAX_MUTANTS = 100
BUILD_SAMPLE = 40
C = Target("c")

_SKIP = {
    tokenize.NEWLINE,
    tokenize.NL,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
    tokenize.COMMENT,
}
NUMBERS = ["0", "-1", "1", "3", "16", "100000", "2.5", '"a"', "True", "None"]
STRINGS = ['"int8"', '"float16"', '"void"', '"bool"', '"handle"', '"flaot32"', '""', '"shared"']
STRINGS += ['"threadIdx.x"', '"int64"', "3"]
OPERATORS = ["+", "-", "*", "/", "//", "%", "<", "==", ">>", "<<", "&", "|", ",", ":", "(", ")"]
OPERATORS += ["[", "]", ".", "=", "and", "not"]


@dataclass(frozen=True)
class Mutant:
    source: str
    change: str
    text: str

    def __str__(self) -> str:
        return f"{self.source}: {self.change}"


def mutate(text: str, rng: random.Random) -> tuple[str, str]:
    """``text`` with one token of a function body changed, and what changed."""
    tokens = [
        t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in _SKIP
    ]
    body = [t for t in tokens if not t.line.lstrip().startswith(("from ", "import ", "#"))]
    names = sorted({t.string for t in tokens if t.type == tokenize.NAME})
    kind = rng.choice(["delete", "double", "name", "number", "string", "operator"])
    of_type = {"name": tokenize.NAME, "number": tokenize.NUMBER, "string": tokenize.STRING}
    of_type["operator"] = tokenize.OP
    pool = [t for t in body if kind not in of_type or t.type == of_type[kind]] or body
    tok = rng.choice(pool)
    new = {
        "delete": "",
        "double": f"{tok.string} {tok.string}",
        "name": rng.choice(names),
        "number": rng.choice(NUMBERS),
        "string": rng.choice(STRINGS),
        "operator": rng.choice(OPERATORS),
    }[kind]
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    a = starts[tok.start[0] - 1] + tok.start[1]
    b = starts[tok.end[0] - 1] + tok.end[1]
    return text[:a] + new + text[b:], f"{kind} {tok.string!r} -> {new!r} at line {tok.start[0]}"


def mutants(folder: str, count: int, seed: int) -> list[Mutant]:
    files = sorted((HERE / folder).glob("*.py"))
    rng = random.Random(seed)
    out = []
    for k in range(count):
        path = files[k % len(files)]
        text, change = mutate(path.read_text(), rng)
        out.append(Mutant(f"{folder}/{path.name}", change, text))
    return out


@dataclass
class Report:
    """Outcomes of a run; ``internal`` counts internal tracebacks (and refusals without a
    location), ``invalid`` counts invalid programs accepted."""

    rejected: int = 0
    accepted: list[tuple[Mutant, Any]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    internal: int = 0
    invalid: int = 0

    def fail(self, m: Mutant, what: str, internal: bool = True) -> None:
        self.failures.append(f"{m}\n    {what}")
        self.internal += internal
        self.invalid += not internal

    def counts(self, what: str) -> str:
        n = self.rejected + len(self.accepted) + len(self.failures)
        return (
            f"{what}: {n} mutants, {self.rejected} refused with a location, "
            f"{len(self.accepted)} accepted valid, {self.internal} internal tracebacks, "
            f"{self.invalid} invalid programs accepted"
        )


def check_parse(m: Mutant, report: Report) -> None:
    """Parse one mutant; record it as rejected, accepted (verified and printed) or a failure."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Python's SyntaxWarnings about mangled literals
            ir = kiln.script.from_source(m.text, "mutant.py")
    except ScriptError as e:
        if e.span is None or not e.span.line or e.reason.startswith("internal error"):
            report.fail(m, f"ScriptError without a location or internal: {e.reason}")
        else:
            report.rejected += 1
        return
    except Exception:  # an internal traceback escaped the parser
        report.fail(m, traceback.format_exc(limit=-4))
        return
    try:
        problems = verify_well_formed(ir, raise_error=False) if _has_tir(ir) else []
        if not isinstance(ir, PrimFunc):
            problems += well_formed_errors(ir)
        again = kiln.script.from_source(ir.script(), "printed.py")
    except Exception:
        report.fail(m, "accepted, then: " + traceback.format_exc(limit=-4))
        return
    if problems:
        report.fail(m, f"accepted but not well formed: {problems[0]}", internal=False)
    elif not structural_equal(ir, again, map_free_vars=True):
        report.fail(m, "accepted, but its printed script parses back different", internal=False)
    else:
        report.accepted.append((m, ir))


def _has_tir(ir: Any) -> bool:
    return isinstance(ir, PrimFunc) or (
        isinstance(ir, IRModule) and any(isinstance(f, PrimFunc) for _, f in ir.items())
    )


@functools.lru_cache(maxsize=None)
def parsed(folder: str, count: int) -> Report:
    report = Report()
    for m in mutants(folder, count, SEED):
        check_parse(m, report)
    return report


def _summary(report: Report) -> str:
    shown = "\n".join(report.failures[:15])
    return f"{len(report.failures)} failure(s) (first 15 shown):\n{shown}"


def test_tir_mutants_are_refused_with_a_location_or_verify() -> None:
    report = parsed("corpus", TIR_MUTANTS)
    print(report.counts("TIR corpus"))
    assert report.internal == 0 and report.invalid == 0, _summary(report)
    assert report.rejected > TIR_MUTANTS // 2 and len(report.accepted) > 20


def test_relax_mutants_are_refused_with_a_location_or_verify() -> None:
    report = parsed("corpus_relax", RELAX_MUTANTS)
    print(report.counts("relax corpus"))
    assert report.internal == 0 and report.invalid == 0, _summary(report)
    assert report.rejected > RELAX_MUTANTS // 2 and len(report.accepted) > 5


@functools.lru_cache(maxsize=None)
def _lowers_for_c(source: str) -> bool:
    """Whether the unmutated corpus file lowers for the C target (its mutants are built)."""
    try:
        generate(lower(kiln.script.from_source((HERE / source).read_text(), source), C), C)
    except KilnError:
        return False
    return True


def test_accepted_tir_mutants_build_into_c_that_compiles(tmp_path: Path) -> None:
    report = Report()
    sources: dict[str, tuple[Mutant, str]] = {}
    for m, ir in parsed("corpus", TIR_MUTANTS).accepted:
        if len(sources) >= BUILD_SAMPLE or not _lowers_for_c(m.source):
            continue
        try:
            c = generate(lower(ir, C), C).source
        except KilnError:  # refused by name at build time: clear, not accepted-invalid
            continue
        except Exception:
            report.fail(m, "build: " + traceback.format_exc(limit=-4))
            continue
        sources.setdefault(c, (m, f"m{len(sources)}.c"))
    assert len(sources) >= BUILD_SAMPLE // 2
    for c, (_, name) in sources.items():
        (tmp_path / name).write_text(c)
    include = __import__("tvm_ffi").libinfo.find_include_path()
    names = [name for _, name in sources.values()]
    cmd = [*find_compiler(), "-c", "-O0", "-fopenmp", f"-I{include}", *names]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, check=False)
    for m, name in sources.values():
        errors = re.findall(rf"^{re.escape(name)}:\d+:\d+: error: .*$", proc.stderr, re.M)
        if errors:
            report.fail(m, "accepted, but its C does not compile: " + errors[0], internal=False)
    print(
        f"C builds: {len(sources)} accepted TIR mutants compiled, {report.internal} internal "
        f"tracebacks, {report.invalid} invalid programs accepted (C the compiler rejects)"
    )
    assert report.internal == 0 and report.invalid == 0, _summary(report)


@pytest.mark.parametrize("seed", [1, 2])
def test_mutations_are_deterministic(seed: int) -> None:
    assert mutants("corpus", 20, seed) == mutants("corpus", 20, seed)
