"""A process-wide counter of structural changes to Modules, Parameters and Optimizers.

``spx.compile`` caches, per call site, the walk from its arguments to every Parameter, buffer
and optimizer state it must feed the compiled program. Re-walking on every call would cost more
than the program on small models, so anything that could change the walk's result (registering
or removing a parameter, buffer or submodule, changing a plain attribute or the train/eval mode,
materializing a lazy parameter, adding a param group) bumps this counter and the cache is
re-validated. Array *values* changing (``p.data = ...``) is not structural.
"""

from __future__ import annotations

import itertools

_counter = itertools.count(1)
EPOCH = 0


def bump() -> None:
    """Record that some Module/Optimizer structure changed."""
    global EPOCH
    EPOCH = next(_counter)
