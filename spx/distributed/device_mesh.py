"""``DeviceMesh``: the ranks of a job as an n-D grid, one process group per dimension line.

Mirrors ``torch.distributed.device_mesh``. ``init_device_mesh("cpu", (2, 2),
mesh_dim_names=("pp", "dp"))`` lays the world's ranks out row-major (rank = pp * 2 + dp) and
creates, for every dimension, a process group per line of the grid along it (``new_group`` on
every rank, in the same order, as torch requires); each rank keeps the groups it belongs to.
``mesh["dp"]`` is this rank's 1-D sub-mesh along ``dp``; ``mesh.get_group("dp")`` its group.

**Data-parallel default.** Creating a mesh with a dimension named ``"dp"`` makes it this rank's
data-parallel mesh: :class:`spx.data.DistributedSampler` then defaults ``num_replicas`` and
``rank`` to ``mesh["dp"]``'s size and local rank (torch reads the default group, which is what
spx does when no such mesh exists). The latest mesh with a ``"dp"`` dimension wins; a mesh whose
groups were destroyed is ignored.

Example:
    >>> # on each of 4 ranks (spx-run --nproc-per-node 4):  # doctest: +SKIP
    >>> mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("pp", "dp"))  # doctest: +SKIP
    >>> mesh["dp"].size(), mesh.get_local_rank("pp")  # doctest: +SKIP
    (2, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spx import _context
from spx._validate import as_int

DP_MESH_KEY = "spx.distributed.dp_mesh"
_DEVICE_TYPES = ("cpu", "cuda", "gpu", "tpu")


class DeviceMesh:
    """An n-D grid of ranks with a process group per dimension (mirrors torch's DeviceMesh).

    Build it with :func:`init_device_mesh`. Attributes: ``device_type``, ``mesh`` (the grid of
    global ranks, an int ``spx.Tensor``), ``mesh_dim_names``, ``ndim``, ``shape``.
    """

    def __init__(
        self,
        device_type: str,
        mesh: np.ndarray,
        groups: list[Any],
        mesh_dim_names: tuple[str, ...] | None,
    ) -> None:
        self.device_type = device_type
        self._mesh = mesh
        self._groups = groups
        self.mesh_dim_names = mesh_dim_names

    # -- torch's attributes ----------------------------------------------------------------
    @property
    def mesh(self) -> Any:
        from spx.ops.creation import as_tensor

        return as_tensor(self._mesh)

    @property
    def ndim(self) -> int:
        return self._mesh.ndim

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._mesh.shape)

    def __repr__(self) -> str:
        names = f", mesh_dim_names={self.mesh_dim_names}" if self.mesh_dim_names else ""
        return f"DeviceMesh('{self.device_type}', {self._mesh.tolist()}{names})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DeviceMesh)
            and np.array_equal(self._mesh, other._mesh)
            and self.mesh_dim_names == other.mesh_dim_names
        )

    def __hash__(self) -> int:
        return hash((self._mesh.tobytes(), self._mesh.shape, self.mesh_dim_names))

    # -- queries ---------------------------------------------------------------------------
    def _dim(self, mesh_dim: int | str | None, what: str) -> int:
        if mesh_dim is None:
            if self.ndim != 1:
                raise RuntimeError(
                    f"Found the DeviceMesh have {self.ndim} dimensions. Optional kwarg "
                    f"`mesh_dim` needs to be specified when device_mesh.ndim > 1 ({what})."
                )
            return 0
        if isinstance(mesh_dim, str):
            names = self.mesh_dim_names or ()
            if mesh_dim not in names:
                raise KeyError(
                    f"Mesh dimension '{mesh_dim}' does not exist. Available mesh dimensions "
                    f"are: mesh_dim_names={self.mesh_dim_names}"
                )
            return names.index(mesh_dim)
        mesh_dim = as_int(mesh_dim, "mesh_dim", "DeviceMesh", hint="or pass a dimension name")
        if not -self.ndim <= mesh_dim < self.ndim:
            raise IndexError(f"mesh_dim {mesh_dim} is out of range for a {self.ndim}-D mesh")
        return mesh_dim % self.ndim

    def get_group(self, mesh_dim: int | str | None = None) -> Any:
        """This rank's process group along ``mesh_dim`` (optional for a 1-D mesh)."""
        return self._groups[self._dim(mesh_dim, "get_group")]

    def get_all_groups(self) -> list[Any]:
        """This rank's group along every dimension, in order."""
        return list(self._groups)

    def size(self, mesh_dim: int | str | None = None) -> int:
        """Ranks along ``mesh_dim``, or in the whole mesh when None."""
        if mesh_dim is None:
            return int(self._mesh.size)
        return int(self._mesh.shape[self._dim(mesh_dim, "size")])

    def get_rank(self) -> int:
        """This rank's global rank."""
        from spx.distributed.process_group import get_rank

        return get_rank()

    def get_coordinate(self) -> list[int] | None:
        """This rank's index along each dimension (None if it is not in the mesh)."""
        where = np.argwhere(self._mesh == self.get_rank())
        return None if where.size == 0 else [int(i) for i in where[0]]

    def get_local_rank(self, mesh_dim: int | str | None = None) -> int:
        """This rank's index along ``mesh_dim`` (its rank in ``get_group(mesh_dim)``)."""
        coord = self.get_coordinate()
        if coord is None:
            raise RuntimeError(f"rank {self.get_rank()} is not part of {self!r}")
        return coord[self._dim(mesh_dim, "get_local_rank")]

    def __getitem__(self, names: str | Sequence[str]) -> DeviceMesh:
        """The sub-mesh over the named dimension(s), through this rank (torch's slicing)."""
        if not self.mesh_dim_names:
            raise RuntimeError(
                "Cannot slice a DeviceMesh without mesh_dim_names; pass mesh_dim_names= to "
                "init_device_mesh"
            )
        wanted = (names,) if isinstance(names, str) else tuple(names)
        dims = [self._dim(n, "slicing") for n in wanted]
        if dims != sorted(dims) or len(set(dims)) != len(dims):
            raise KeyError(
                f"Invalid mesh_dim_names {wanted} specified. The names must be distinct and in "
                f"the order of the mesh's mesh_dim_names={self.mesh_dim_names}"
            )
        if len(dims) == self.ndim:
            return self
        coord = self.get_coordinate()
        if coord is None:
            raise RuntimeError(f"rank {self.get_rank()} is not part of {self!r}")
        index = tuple(slice(None) if d in dims else coord[d] for d in range(self.ndim))
        return DeviceMesh(
            self.device_type, self._mesh[index], [self._groups[d] for d in dims], wanted
        )


def init_device_mesh(
    device_type: str,
    mesh_shape: Sequence[int],
    *,
    mesh_dim_names: Sequence[str] | None = None,
    backend_override: Any = None,
) -> DeviceMesh:
    """Lay the world's ranks out as ``mesh_shape`` and build a group per dimension line.

    Mirrors ``torch.distributed.device_mesh.init_device_mesh``. Call it on every rank, after
    ``init_process_group``, with the same arguments (it creates groups collectively).

    Args:
        device_type: ``"cpu"`` or ``"cuda"`` (the devices come from the process group).
        mesh_shape: sizes of the dimensions; their product must be the world size.
        mesh_dim_names: one distinct name per dimension, e.g. ``("pp", "dp")``.
        backend_override: not supported (raises if given).

    Returns:
        The :class:`DeviceMesh`; with a ``"dp"`` dimension it also becomes this rank's
        data-parallel mesh (see the module docs).

    Example:
        >>> mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("pp", "dp"))  # doctest: +SKIP
        >>> dp_group = mesh.get_group("dp")  # doctest: +SKIP
    """
    from spx.distributed.process_group import get_world_size, is_initialized, new_group

    if not isinstance(device_type, str) or device_type.split(":")[0] not in _DEVICE_TYPES:
        raise ValueError(
            f"init_device_mesh: device_type={device_type!r}; expected one of {_DEVICE_TYPES}"
        )
    if backend_override is not None:
        raise NotImplementedError("init_device_mesh(backend_override=...) is not supported")
    if isinstance(mesh_shape, int):
        mesh_shape = (mesh_shape,)
    shape = tuple(
        as_int(s, "mesh_shape", "init_device_mesh", minimum=1, wrong_type=ValueError)
        for s in mesh_shape
    )
    if not shape:
        raise ValueError(f"mesh_shape must be a tuple of positive ints, got {mesh_shape!r}")
    names = None
    if mesh_dim_names is not None:
        names = tuple(mesh_dim_names)
        if len(names) != len(shape):
            raise RuntimeError(
                f"mesh_shape and mesh_dim_names should have same length! Found len(mesh_dim_names)"
                f": {len(names)} and len(mesh_shape):{len(shape)}."
            )
        if len(set(names)) != len(names) or not all(isinstance(n, str) for n in names):
            raise RuntimeError(
                f"Each mesh_dim_name must be unique and a string. Found repeated or invalid "
                f"mesh_dim_name in mesh_dim_names {names}"
            )
    if not is_initialized():
        raise RuntimeError(
            "init_device_mesh needs the default process group: call "
            "spx.distributed.init_process_group() first"
        )
    world = get_world_size()
    if int(np.prod(shape)) != world:
        raise RuntimeError(
            f"Mesh shape {shape} has {int(np.prod(shape))} ranks but the world has {world}; "
            f"choose sizes whose product is {world}"
        )
    mesh = np.arange(world).reshape(shape)
    me = _rank()
    groups = []
    for d in range(len(shape)):
        mine = None
        # Every line along dimension d, in a fixed order on every rank: new_group is collective.
        lines = np.moveaxis(mesh, d, -1).reshape(-1, shape[d])
        for line in lines:
            ranks = [int(r) for r in line]
            group = new_group(ranks)
            if me in ranks:
                mine = group
        groups.append(mine)
    result = DeviceMesh(device_type, mesh, groups, names)
    if names is not None and "dp" in names:
        _context.current().extras[DP_MESH_KEY] = result
    return result


def _rank() -> int:
    from spx.distributed.process_group import get_rank

    return get_rank()


def data_parallel_mesh() -> DeviceMesh | None:
    """This rank's data-parallel sub-mesh (``mesh["dp"]`` of the latest mesh with a ``"dp"``
    dimension whose groups are alive), or None."""
    mesh = _context.current().extras.get(DP_MESH_KEY)
    if mesh is None:
        return None
    sub = mesh["dp"]
    if getattr(sub.get_group(), "destroyed", False):
        return None
    return sub
