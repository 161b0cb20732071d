"""Process groups: the torch-shaped handle (:class:`ProcessGroup`) and the default group's
lifecycle; the backend interface behind it and async handles are in :mod:`.backend`.

Mirrors ``torch.distributed.distributed_c10d``'s group management. The default group lives in the
calling thread's :class:`spx._context.RankContext`, never in a module global, so rank threads
started by :func:`spx.distributed.spawn` each see their own.

Plugging in a backend: subclass :class:`spx.distributed.backend.Backend`. When the environment
names a world larger than one and the thread is not a spawned rank, :func:`init_process_group`
builds the default group with the multi-process backend (:mod:`spx.distributed.multiprocess`:
one rank per process on ``jax.distributed``), or with the factory installed by
:func:`register_multiprocess_backend`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import jax

from spx import _context
from spx.distributed.backend import Backend, timeout_seconds

NOT_INITIALIZED = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)
# torch's default for CPU (gloo) groups.
DEFAULT_TIMEOUT = timedelta(minutes=30)


class ProcessGroup:
    """A set of ranks that run collectives together (mirrors ``torch.distributed.ProcessGroup``).

    Holds one rank's view: ``rank()`` is this rank's index in the group, ``ranks`` the global
    rank of each member. Created by :func:`init_process_group` (the default group) and
    :func:`new_group`; do not share one between rank threads.

    Args:
        backend: this rank's :class:`Backend` for the group.
        backend_name: the name :func:`get_backend` reports (e.g. ``"gloo"``).
        group_name: the group's name, the same on every member.

    Example:
        >>> pg = dist.new_group([0, 1])  # doctest: +SKIP
        >>> pg.rank(), pg.size(), pg.ranks  # doctest: +SKIP
        (0, 2, (0, 1))
    """

    def __init__(self, backend: Backend, backend_name: str, group_name: str) -> None:
        self.backend = backend
        self.backend_name = backend_name
        self.group_name = group_name
        self.ranks = backend.ranks
        self._group_rank = {g: i for i, g in enumerate(backend.ranks)}
        self._children: list[ProcessGroup] = []
        self.destroyed = False

    def rank(self) -> int:
        """This rank's index in the group."""
        return self.backend.rank

    def size(self) -> int:
        """Number of ranks in the group."""
        return self.backend.size

    def name(self) -> str:
        """The backend name, as torch's ``ProcessGroup.name()``."""
        return self.backend_name

    def group_rank(self, global_rank: int) -> int:
        """Translate a global rank into this group's rank (ValueError if not a member)."""
        try:
            return self._group_rank[global_rank]
        except (KeyError, TypeError):
            raise ValueError(
                f"Global rank {global_rank!r} is not part of group {self.group_name!r} "
                f"(its global ranks are {list(self.ranks)})"
            ) from None

    def global_rank(self, group_rank: int) -> int:
        """Translate one of this group's ranks into a global rank."""
        if not isinstance(group_rank, int) or not 0 <= group_rank < self.size():
            raise ValueError(
                f"group rank {group_rank!r} is out of range for group {self.group_name!r} of "
                f"size {self.size()}; expected 0 <= rank < {self.size()}"
            )
        return self.ranks[group_rank]

    def __repr__(self) -> str:
        return (
            f"ProcessGroup(name={self.group_name!r}, backend={self.backend_name!r}, "
            f"rank={self.rank()}, size={self.size()})"
        )


class _GroupMemberType(type):
    @property
    def WORLD(cls) -> ProcessGroup | None:
        """The calling rank's default group (None before ``init_process_group``)."""
        return _context.current().group


class GroupMember(metaclass=_GroupMemberType):
    """torch's group sentinels.

    ``WORLD`` is the calling rank's default group (per rank thread with thread ranks; None
    before ``init_process_group``); every function treats ``group=None`` as the default group,
    exactly as torch treats WORLD. ``NON_GROUP_MEMBER`` is what :func:`new_group` returns on
    ranks outside the new group.
    """

    NON_GROUP_MEMBER: Any = object()


# torch exposes the same sentinels as ``dist.group.WORLD``.
group = GroupMember

_MultiProcessFactory = Callable[..., Backend]
_multiprocess_factory: _MultiProcessFactory | None = None


def register_multiprocess_backend(factory: _MultiProcessFactory | None) -> None:
    """Replace the backend used for one-rank-per-process worlds (None restores spx's own).

    Args:
        factory: called as ``factory(rank=, world_size=, timeout=, init_method=)`` (timeout in
            seconds) from :func:`init_process_group`; returns the rank's world :class:`Backend`.
    """
    global _multiprocess_factory
    _multiprocess_factory = factory


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} is not an integer") from None


def _single_process_backend(
    world_size: int, rank: int, init_method: str | None, timeout: float, device: jax.Device | None
) -> Backend:
    """The default-group backend of a thread that was not started by ``spawn``."""
    if world_size < 0:
        world_size = _env_int("WORLD_SIZE") or -1
    if rank < 0:
        env_rank = _env_int("RANK")
        rank = env_rank if env_rank is not None else (0 if world_size == 1 else -1)
    if world_size < 0 or rank < 0:
        missing = "RANK" if rank < 0 else "WORLD_SIZE"
        raise ValueError(
            f"Error initializing spx.distributed using env:// rendezvous: environment variable "
            f"{missing} expected, but not set. Pass rank= and world_size= (world_size=1 for a "
            "single process), launch with spx-run, or start ranks with spx.distributed.spawn."
        )
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is out of range for world_size {world_size}")
    if world_size == 1:
        from spx.distributed._thread_backend import World

        return World([device or jax.local_devices()[0]]).join(0, timeout)
    factory = _multiprocess_factory
    if factory is None:
        from spx.distributed.multiprocess import create_world_backend as factory
    return factory(rank=rank, world_size=world_size, timeout=timeout, init_method=init_method)


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: Any = None,
) -> None:
    """Join the default process group (mirrors ``torch.distributed.init_process_group``).

    In a thread started by :func:`spx.distributed.spawn` the rank and world size come from the
    spawn (``rank``/``world_size``, if given, must agree). Elsewhere they come from the arguments
    or the ``RANK``/``WORLD_SIZE`` environment variables; a world of one is a trivial group, and
    a larger one is a job of one rank per process (``spx-run``/``torchrun``): this call then
    starts JAX's distributed runtime with the coordinator at ``MASTER_ADDR:MASTER_PORT`` (see
    :mod:`spx.distributed.multiprocess`). Call it before the process's first JAX computation.

    Args:
        backend: any torch backend name (``"gloo"``, ``"nccl"``, ``"thread"``, None...); the
            thread and multi-process backends serve them all (JAX picks gloo on CPU, NCCL on
            GPU). Reported back by :func:`get_backend`.
        init_method: ``env://`` (default) or ``tcp://<host>:<port>`` across processes; the
            thread backend needs none.
        timeout: how long a blocking collective/recv may wait (default 30 minutes).
        world_size: number of ranks, or -1 for the spawn/environment value.
        rank: this rank, or -1 for the spawn/environment value.
        store: accepted for compatibility; unused.
        group_name: name of the default group.
        pg_options: accepted for compatibility; unused.
        device_id: this rank's device (must be the spawned rank's own device when given).

    Example:
        >>> def main(rank):
        ...     dist.init_process_group("gloo")
        ...     print(dist.get_rank(), dist.get_world_size())
        >>> dist.spawn(main, nprocs=2)  # doctest: +SKIP
    """
    from spx._device import device as resolve_device
    from spx.distributed._thread_backend import SEAT_KEY

    ctx = _context.current()
    if ctx.group is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is not None and not isinstance(backend, str):
        raise TypeError(f"backend must be a string such as 'gloo', got {backend!r}")
    seconds = timeout_seconds(timeout, DEFAULT_TIMEOUT.total_seconds())
    device = (
        None
        if device_id is None
        else resolve_device(f"cuda:{device_id}" if isinstance(device_id, int) else device_id)
    )
    seat = ctx.extras.get(SEAT_KEY)
    if seat is not None:
        for arg, value, own in (
            ("world_size", world_size, seat.world.size),
            ("rank", rank, seat.rank),
        ):
            if value not in (-1, own):
                raise ValueError(
                    f"init_process_group({arg}={value}) in a thread spawned as rank {seat.rank} "
                    f"of {seat.world.size}; pass {arg}={own} or leave it out"
                )
        if device is not None and device != ctx.device:
            raise ValueError(
                f"init_process_group(device_id={device_id!r}) resolves to {device}, but spawned "
                f"rank {seat.rank} runs on {ctx.device}; pass device_id={seat.rank} or leave it out"
            )
        impl = seat.world.join(seat.rank, seconds)
    else:
        impl = _single_process_backend(world_size, rank, init_method, seconds, device or ctx.device)
    # torch's default is gloo for CPU and NCCL for GPU tensors; thread ranks report "thread".
    name = (backend or impl.default_name).lower()
    ctx.group = ProcessGroup(impl, name, group_name or impl.group_name)


def is_available() -> bool:
    """Whether spx.distributed can be used (always True)."""
    return True


def is_initialized() -> bool:
    """Whether the calling rank has joined a default process group."""
    return _context.current().group is not None


def default_group() -> ProcessGroup:
    """The calling rank's default group; ValueError (as torch) when there is none."""
    pg = _context.current().group
    if pg is None:
        raise ValueError(NOT_INITIALIZED)
    return pg


def resolve_group(group: ProcessGroup | None) -> ProcessGroup | None:
    """``group`` or the default group; None when the caller is not a member of ``group``."""
    if group is None:
        pg = _context.current().group
        if pg is None:
            raise ValueError(NOT_INITIALIZED)
        return pg
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup or None, got {type(group).__name__}")
    if group.destroyed:
        raise ValueError(f"process group {group.group_name!r} was destroyed; create a new one")
    return group


def warn_not_in_group(op_name: str) -> None:
    """torch's warning for an operation called on a group the rank is not part of."""
    pg = _context.current().group
    rank = -1 if pg is None else pg.rank()
    warnings.warn(
        f"Running {op_name} on global rank {rank} which does not belong to the given group.",
        stacklevel=3,
    )


def get_rank(group: ProcessGroup | None = None) -> int:
    """This rank's index in ``group`` (default group if None); -1 if not a member."""
    pg = resolve_group(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """Number of ranks in ``group`` (default group if None); -1 if not a member."""
    pg = resolve_group(group)
    return -1 if pg is None else pg.size()


def get_backend(group: ProcessGroup | None = None) -> str:
    """The backend name the group was created with (lowercase, e.g. ``"gloo"``)."""
    return get_group(group).backend_name


def get_process_group_ranks(group: ProcessGroup | None) -> list[int]:
    """The global ranks of the members of ``group``."""
    return list(get_group(group).ranks)


def get_group_rank(group: ProcessGroup | None, global_rank: int) -> int:
    """Translate a global rank into a rank of ``group``."""
    return get_group(group).group_rank(global_rank)


def get_global_rank(group: ProcessGroup | None, group_rank: int) -> int:
    """Translate a rank of ``group`` into a global rank."""
    return get_group(group).global_rank(group_rank)


def get_group(group: ProcessGroup | None) -> ProcessGroup:
    """``group`` (or the default group), raising if the caller is not a member."""
    pg = resolve_group(group)
    if pg is None:
        raise ValueError("Invalid process group specified: this rank is not a member")
    return pg


def new_group(
    ranks: Sequence[int] | None = None,
    timeout: timedelta | None = None,
    backend: str | None = None,
    pg_options: Any = None,
    use_local_synchronization: bool = False,
    group_desc: str | None = None,
    device_id: Any = None,
) -> ProcessGroup | Any:
    """Create a group over a subset of the default group's ranks (mirrors torch's ``new_group``).

    Every rank of the default group must call it, with the same ``ranks``, in the same order
    relative to its other collectives.

    Args:
        ranks: global ranks of the members (any order, no duplicates); None for all ranks.
        timeout: blocking-wait limit for the new group (default: the default group's).
        backend: name reported by ``get_backend`` (default: the default group's).
        pg_options: accepted for compatibility; unused.
        use_local_synchronization: not supported (must be False).
        group_desc: accepted for compatibility; unused.
        device_id: accepted for compatibility; unused.

    Returns:
        The new :class:`ProcessGroup` on member ranks, ``GroupMember.NON_GROUP_MEMBER`` elsewhere.

    Example:
        >>> evens = dist.new_group([0, 2])  # doctest: +SKIP
        >>> if dist.get_rank(evens) >= 0:  # doctest: +SKIP
        ...     dist.all_reduce(x, group=evens)
    """
    world = default_group()
    if use_local_synchronization:
        raise NotImplementedError(
            "new_group(use_local_synchronization=True) is not supported; every rank of the "
            "default group calls new_group"
        )
    size = world.size()
    members = list(range(size)) if ranks is None else sorted(ranks)
    bad = [r for r in members if not isinstance(r, int) or not 0 <= r < size]
    if bad or len(set(members)) != len(members) or not members:
        raise ValueError(
            f"new_group(ranks={ranks!r}): expected distinct global ranks in [0, {size}) "
            f"(the default group has {size} ranks)"
        )
    seconds = timeout_seconds(timeout, world.backend.timeout)
    impl = world.backend.split(members, seconds)
    if impl is None:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(impl, (backend or world.backend_name).lower(), impl.group_name)
    world._children.append(pg)
    return pg


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Leave ``group``; with None, leave the default group and every group made from it.

    Not a collective, as in torch. Across processes this rank first finishes its own posted
    receives; JAX's runtime keeps running (a later ``init_process_group`` with the same rank and
    world reuses it), and at interpreter exit every rank waits until all ranks are done, so no
    rank's transfer server goes away while a peer still pulls from it.
    """
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    ctx = _context.current()
    pg = default_group() if group is None else group
    victims = [pg, *pg._children] if group is None or pg is ctx.group else [pg]
    for victim in victims:
        victim.destroyed = True
        victim.backend.shutdown()
    if pg is ctx.group:
        ctx.group = None
