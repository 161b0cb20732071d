"""``spawn``: run ``fn(rank, *args)`` once per rank (mirrors ``torch.multiprocessing.spawn``).

The ``"thread"`` backend runs the ranks as threads of this process, rank ``r`` on
``jax.local_devices()[r]``. Each thread starts from a fresh :class:`spx._context.RankContext`,
as a fresh process would: the default RNG seed, its own device (what ``spx.device("cpu")``
returns there), no process group until it calls ``init_process_group``.

If a rank raises, every other rank's pending collective/recv/barrier raises at once (the world
is aborted), and ``spawn`` re-raises a :class:`ProcessRaisedException` naming the rank and
carrying its traceback, as torch does. Threads cannot be killed: a rank stuck in its own
computation (not in spx.distributed) is left running after the grace period.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import jax

from spx import _context
from spx._validate import as_int
from spx.distributed._thread_backend import SEAT_KEY, RankSeat, World
from spx.multiprocessing.spawn import (  # torch's exceptions, shared with process spawn
    ProcessException as ProcessException,
)
from spx.multiprocessing.spawn import ProcessExitedException as ProcessExitedException
from spx.multiprocessing.spawn import ProcessRaisedException as ProcessRaisedException

_log = logging.getLogger(__name__)
BACKENDS = ("thread",)
_DEFAULT_GRACE = 30.0  # seconds torch waits for the other processes after a failure


def _backend_started() -> bool:
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):  # private API moved: assume started, never reconfigure
        return True


def _configured_cpu_devices() -> int:
    configured = int(jax.config.jax_num_cpu_devices)
    if configured > 0:  # the config option wins over XLA_FLAGS when both are set
        return configured
    m = re.search(r"--xla_force_host_platform_device_count=(\d+)", os.environ.get("XLA_FLAGS", ""))
    return int(m.group(1)) if m else 1


def rank_devices(nprocs: int) -> list[jax.Device]:
    """One local device per rank, asking JAX for more CPU devices if it has not started yet.

    Raises:
        RuntimeError: JAX already runs with fewer than ``nprocs`` local devices.
    """
    if not _backend_started() and _configured_cpu_devices() < nprocs:
        jax.config.update("jax_num_cpu_devices", nprocs)
    devices = jax.local_devices()
    if len(devices) < nprocs:
        raise RuntimeError(
            f"spawn(nprocs={nprocs}) needs one local device per rank, but JAX already started "
            f"with {len(devices)} {devices[0].platform} device(s). Ask for more before JAX "
            f"starts: call jax.config.update('jax_num_cpu_devices', {nprocs}) right after "
            f"`import jax`, or set XLA_FLAGS=--xla_force_host_platform_device_count={nprocs} "
            "before starting Python; or spawn fewer ranks."
        )
    return list(devices[:nprocs])


class ProcessContext:
    """Handle on spawned ranks (mirrors torch's ``ProcessContext``); returned by
    ``spawn(..., join=False)``."""

    def __init__(self, threads: Sequence[threading.Thread], world: World) -> None:
        self.threads = list(threads)
        self._world = world
        self._cond = threading.Condition()
        self._running = world.size
        self._failure: tuple[int, BaseException, str] | None = None  # the first to arrive
        self._failures: dict[int, tuple[int, BaseException, str]] = {}

    def pids(self) -> list[int]:
        """Native thread ids of the ranks (a thread stands in for torch's process)."""
        return [t.native_id or 0 for t in self.threads]

    def _rank_main(self, fn: Callable[..., Any], rank: int, args: tuple, ctx: Any) -> None:
        _context.set_current(ctx)
        try:
            fn(rank, *args)
        except SystemExit as e:
            if e.code not in (None, 0):
                self._fail(rank, e, "")
        except BaseException as e:
            self._fail(rank, e, traceback.format_exc())
        finally:
            self._world.mark_exited(rank)
            with self._cond:
                self._running -= 1
                self._cond.notify_all()

    def _fail(self, rank: int, error: BaseException, text: str) -> None:
        with self._cond:
            self._failures.setdefault(rank, (rank, error, text))
            if self._failure is None:
                self._failure = (rank, error, text)
            self._cond.notify_all()
        self._world.abort(f"rank {rank} failed with {type(error).__name__}: {error}", origin=rank)

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait for the ranks; raise if one failed (mirrors torch's ``ProcessContext.join``).

        Args:
            timeout: seconds to wait; None waits until every rank ends or one fails.
            grace_period: after a failure, seconds to wait for the other ranks to stop (default
                30); their pending spx.distributed calls raise at once, so this is quick unless
                a rank is busy in its own code.

        Returns:
            True when every rank has ended, False if ``timeout`` expired first.

        Raises:
            ProcessRaisedException: a rank raised; names the failing rank (the one whose
                failure aborted the others, else the first to fail).
            ProcessExitedException: a rank called ``sys.exit`` with a non-zero code.
        """
        try:
            with self._cond:
                self._cond.wait_for(lambda: self._running == 0 or self._failure, timeout)
                failure = self._failure
                if failure is None:
                    return self._running == 0
                grace = _DEFAULT_GRACE if grace_period is None else grace_period
                self._cond.wait_for(lambda: self._running == 0, grace)
                # Report the root cause: a rank whose failure aborted the world (a pipeline
                # rank aborts before its error reaches here) rather than a peer that merely
                # woke up from the abort first.
                origin = self._world.abort_origin
                failure = self._failures.get(origin, failure) if origin is not None else failure
        except KeyboardInterrupt:
            self._world.abort("the launching thread was interrupted")
            raise
        rank, error, text = failure
        for r, t in enumerate(self.threads):
            if t.is_alive():
                _log.warning("rank %d is still running after rank %d failed", r, rank)
        pid = self.threads[rank].native_id or 0
        if isinstance(error, SystemExit):
            raise ProcessExitedException(
                f"process {rank} terminated with exit code {error.code}", rank, pid, error.code
            )
        msg = f"\n\n-- Process {rank} terminated with the following error:\n{text}"
        raise ProcessRaisedException(msg, rank, pid) from error


def spawn(
    fn: Callable[..., Any],
    args: tuple = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str | None = None,
    backend: str = "thread",
) -> ProcessContext | None:
    """Run ``fn(rank, *args)`` for ``rank`` in ``range(nprocs)``, one rank per local device.

    Args:
        fn: the per-rank entry point, called as ``fn(rank, *args)``; it typically calls
            ``spx.distributed.init_process_group()`` first.
        args: extra positional arguments for ``fn``.
        nprocs: number of ranks.
        join: wait for the ranks (True) or return a :class:`ProcessContext` at once.
        daemon: make the rank threads daemon threads.
        start_method: accepted for torch compatibility; threads need none.
        backend: ``"thread"`` (ranks are threads of this process).

    Returns:
        None when ``join`` is True, else the :class:`ProcessContext`.

    Raises:
        ProcessRaisedException: a rank raised (the first failure is reported).
        RuntimeError: JAX already started with fewer local devices than ``nprocs``.

    Example:
        >>> import spx, spx.distributed as dist
        >>> def main(rank):
        ...     dist.init_process_group("gloo")
        ...     t = spx.ones(2) * rank
        ...     dist.all_reduce(t)  # in place, as in torch
        ...     print(rank, t)
        >>> dist.spawn(main, nprocs=2)  # doctest: +SKIP
    """
    if backend not in BACKENDS:
        raise ValueError(f"spawn(backend={backend!r}): unknown backend; expected one of {BACKENDS}")
    nprocs = as_int(nprocs, "nprocs", "spawn", minimum=1, wrong_type=ValueError)
    if not callable(fn):
        raise TypeError(f"spawn: fn must be callable, got {type(fn).__name__}")
    devices = rank_devices(nprocs)
    world = World(devices)
    context = ProcessContext([], world)
    for rank, device in enumerate(devices):
        ctx = _context.RankContext(device=device)
        ctx.extras[SEAT_KEY] = RankSeat(world, rank)
        context.threads.append(
            threading.Thread(
                target=context._rank_main,
                args=(fn, rank, tuple(args), ctx),
                name=f"spx-rank-{rank}",
                daemon=daemon,
            )
        )
    for t in context.threads:
        t.start()
    if not join:
        return context
    while not context.join():
        pass
    return None
