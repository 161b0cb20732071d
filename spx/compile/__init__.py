"""spx.compile: torch-style steps as single XLA programs."""

from spx.compile.compiled import CompiledFunction as CompiledFunction
from spx.compile.compiled import compile as compile
