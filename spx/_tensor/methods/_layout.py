"""torch's strides for spx views: which views are contiguous, and which reshapes can be views.

spx stores no strides (every value is a whole jax array), but torch's observable behaviour
depends on them: ``t.is_contiguous()``, ``t.stride()``, ``view`` raising on a transposed
tensor, and ``reshape`` returning a *copy* (which writes do not reach) where no view is
possible. A non-view tensor is row-major; a view's strides follow from replaying its
derivation (:class:`~spx._tensor.tensor._View` chain) on the base's shape, step by step as
torch computes them. Strides count elements.
"""

from __future__ import annotations

from typing import Any


def contiguous_strides(shape: tuple) -> tuple:
    strides = []
    step = 1
    for s in reversed(shape):
        strides.append(step)
        step *= max(s, 1)
    return tuple(reversed(strides))


def is_contiguous(shape: tuple, strides: tuple) -> bool:
    """torch's rule: row-major strides, ignoring dimensions of size 1 (and empty tensors)."""
    if any(s == 0 for s in shape):
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


def view_strides(shape: tuple, strides: tuple, new_shape: tuple) -> tuple | None:
    """Strides of ``new_shape`` as a view of ``(shape, strides)``, or None when no view can
    have that shape (torch's ``computeStride``)."""
    if not shape:
        return tuple(1 for _ in new_shape)
    numel = 1
    for s in shape:
        numel *= s
    if numel == 0:
        return contiguous_strides(new_shape) if shape != new_shape else strides
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[tensor_d]
        if tensor_d == 0 or (
            shape[tensor_d - 1] != 1 and strides[tensor_d - 1] != tensor_numel * chunk_base_stride
        ):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def _remove(seq: tuple, *dims: int) -> tuple:
    return tuple(v for i, v in enumerate(seq) if i not in dims)


def _step(name: str, static: tuple, shape: tuple, strides: tuple) -> tuple[tuple, tuple]:
    """``(shape, strides)`` after one view step (``name`` is the step function's name)."""
    if name in ("_reshape",):
        new = static[0]
        found = view_strides(shape, strides, new)
        return new, found if found is not None else contiguous_strides(new)
    if name == "_swap":
        d0, d1 = static
        sh, st = list(shape), list(strides)
        sh[d0], sh[d1] = sh[d1], sh[d0]
        st[d0], st[d1] = st[d1], st[d0]
        return tuple(sh), tuple(st)
    if name == "_permute":
        order = static[0]
        return tuple(shape[d] for d in order), tuple(strides[d] for d in order)
    if name == "_expand_dims":
        d = static[0]
        new_stride = strides[d] * shape[d] if d < len(shape) else 1
        return (*shape[:d], 1, *shape[d:]), (*strides[:d], new_stride, *strides[d:])
    if name == "_squeeze":
        return _remove(shape, *static[0]), _remove(strides, *static[0])
    if name == "_broadcast":
        target = static[0]
        lead = len(target) - len(shape)
        st = [0] * lead
        for i, (s, t) in enumerate(zip(shape, target[lead:], strict=True)):
            st.append(strides[i] if s == t else 0)
        return tuple(target), tuple(st)
    if name in ("_slice", "_split_part"):
        length, d = (static[0], static[1]) if name == "_slice" else (static[1], static[2])
        return (*shape[:d], length, *shape[d + 1 :]), strides
    if name in ("_select", "_unbind_part"):
        d = static[0] if name == "_select" else static[1]
        return _remove(shape, d), _remove(strides, d)
    if name == "_diagonal":
        offset, d1, d2 = static
        n = max(0, min(shape[d1] + min(offset, 0), shape[d2] - max(offset, 0)))
        return (*_remove(shape, d1, d2), n), (*_remove(strides, d1, d2), strides[d1] + strides[d2])
    if name == "_unfold":
        d, size, step = static
        n = (shape[d] - size) // step + 1
        sh = (*shape[:d], n, *shape[d + 1 :], size)
        st = (*strides[:d], strides[d] * step, *strides[d + 1 :], strides[d])
        return sh, st
    if name == "_index":
        return _index_step(static[0], shape, strides)
    if name == "_bitcast":
        return shape, strides
    return shape, contiguous_strides(shape)  # unknown step: assume a fresh layout


def _index_step(spec: tuple, shape: tuple, strides: tuple) -> tuple[tuple, tuple]:
    sh: list[int] = []
    st: list[int] = []
    axis = 0
    for e in spec:
        kind = e[0]
        if kind == "n":  # torch's unsqueeze stride at this position
            sh.append(1)
            st.append(shape[axis] * strides[axis] if axis < len(shape) else 1)
            continue
        if kind == "s":
            sh.append(e[1])
            st.append(strides[axis])
        elif kind == "S":
            lo, hi, step = e[1], e[2], e[3]
            n = len(range(shape[axis])[slice(lo, hi, step)])
            sh.append(n)
            st.append(strides[axis] * (1 if step is None else step))
        # "i" / "I" (an int / a 0-d integer tensor): the dimension is removed
        axis += 1
    return tuple(sh) + shape[axis:], tuple(st) + strides[axis:]


def layout(t: Any) -> tuple[tuple, tuple]:
    """``(shape, strides)`` of a Tensor as torch would lay it out."""
    view = t._view
    if view is None:
        shape = tuple(t._aval.shape)
        return shape, contiguous_strides(shape)
    shape = tuple(view.base._aval.shape)
    strides = contiguous_strides(shape)
    for fn, static, _ in view.chain:
        shape, strides = _step(fn.__name__, static, shape, strides)
    return shape, strides
