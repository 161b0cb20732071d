"""argparse actions that read a flag's default from ``PET_<FLAG>`` (torchrun's convention).

Mirrors ``torch.distributed.argparse_util``: ``--max-restarts 3`` and ``PET_MAX_RESTARTS=3`` mean
the same, the command line wins, and the variable is named after the *longest* option string
(``--nproc-per-node`` -> ``PET_NPROC_PER_NODE``). Only the standard library is used here, so
parsing a command line never starts JAX.
"""

from __future__ import annotations

import argparse
import os
from typing import Any


class env(argparse.Action):
    """Store the flag's value; default from ``PET_{DEST}`` before the declared default.

    Args:
        dest: the attribute name; the variable read is ``PET_`` + ``dest.upper()``.
        default: used when neither the flag nor the variable is given. A string default is
            converted by ``type`` as argparse always does, so ``PET_MAX_RESTARTS=3`` becomes 3.
        required: dropped when the variable provides a value.

    Example:
        >>> p = argparse.ArgumentParser()
        >>> _ = p.add_argument("--max-restarts", action=env, type=int, default=0)
        >>> p.parse_args(["--max-restarts", "2"]).max_restarts
        2
    """

    def __init__(
        self, dest: str, default: Any = None, required: bool = False, **kwargs: Any
    ) -> None:
        default = os.environ.get(f"PET_{dest.upper()}", default)
        if default:
            required = False
        super().__init__(dest=dest, default=default, required=required, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        setattr(namespace, self.dest, values)


class check_env(argparse.Action):
    """A ``store_true`` flag that ``PET_{DEST}=1`` switches on (``PET_{DEST}=0`` leaves it off).

    Example:
        >>> p = argparse.ArgumentParser()
        >>> _ = p.add_argument("--standalone", action=check_env)
        >>> p.parse_args(["--standalone"]).standalone
        True
    """

    def __init__(self, dest: str, default: bool = False, **kwargs: Any) -> None:
        name = f"PET_{dest.upper()}"
        raw = os.environ.get(name, "1" if default else "0")
        try:
            default = bool(int(raw))
        except ValueError:
            raise ValueError(
                f"environment variable {name}={raw!r} must be 0 or 1 (it switches the flag "
                f"--{dest.replace('_', '-')} off or on)"
            ) from None
        super().__init__(dest=dest, const=True, default=default, nargs=0, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        setattr(namespace, self.dest, self.const)
