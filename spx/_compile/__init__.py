"""spx.compile: torch-style steps as single XLA programs."""

from spx._compile.compiled import CompiledFunction as CompiledFunction
from spx._compile.compiled import compile as compile
