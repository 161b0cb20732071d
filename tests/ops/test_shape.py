"""spx's joining/splitting/shape functions (cat, stack, split, meshgrid, tril, ...) vs torch."""

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_grad, check_raises, data

torch = pytest.importorskip("torch")

INTS = data((2, 3), 3, "int")


@pytest.mark.parametrize("name", ["cat", "concat", "concatenate"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(name, dim):
    check(lambda m, a, b: getattr(m, name)([a, b], dim), (2, 3), (2, 3))
    check(lambda m, a, b: getattr(m, name)((a, b, a), dim=dim), (2, 3), (2, 3))
    check_grad(lambda m, a, b: getattr(m, name)([a, b, a], dim), (2, 3), (2, 3))


def test_cat_shapes_and_dtypes():
    check(lambda m, a, b: m.cat([a, b]), (1, 3), (4, 3))
    check(lambda m, a, b: m.cat([a, b], 1), (2, 1), (2, 4))
    check(lambda m, a, b: m.cat([a, b]), INTS, (2, 3))  # int + float -> float
    check(lambda m, a: m.cat([a, m.zeros(0)]), (2, 3))  # 1-D empty tensors are skipped
    check(lambda m, a: m.cat([a]), (2, 3))
    check(lambda m, a: m.cat([a, a], 0), (3,))


CAT_ERRORS = [
    ("sizes", lambda m, a: m.cat([a, m.zeros(3, 3)], 1)),
    ("ndim", lambda m, a: m.cat([a, m.zeros(3)])),
    ("empty_list", lambda m, a: m.cat([])),
    ("zero_dim", lambda m, a: m.cat([a.sum(), a.sum()])),
    ("dim_range", lambda m, a: m.cat([a, a], 2)),
]


@pytest.mark.parametrize("fn", [c[1] for c in CAT_ERRORS], ids=[c[0] for c in CAT_ERRORS])
def test_cat_errors(fn):
    check_raises(fn, (2, 3), error=(RuntimeError, IndexError))


def test_cat_refuses_a_single_tensor():
    with pytest.raises(TypeError, match="tuple or list of Tensors"):
        spx.cat(spx.ones(2, 2))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack(dim):
    check(lambda m, a, b: m.stack([a, b], dim), (2, 3), (2, 3))
    check_grad(lambda m, a, b: m.stack([a, b], dim=dim), (2, 3), (2, 3))


def test_stack_errors():
    check_raises(lambda m, a: m.stack([a, a.t()]), (2, 3), error=RuntimeError)
    check_raises(lambda m, a: m.stack([]), (2, 3), error=RuntimeError)
    check_raises(lambda m, a: m.stack([a, a], 3), (2, 3), error=IndexError)


@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack", "column_stack"])
@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 2)], ids=str)
def test_hstack_family(name, shape):
    check(lambda m, a, b: getattr(m, name)([a, b]), shape, shape)
    check_grad(lambda m, a, b: getattr(m, name)((a, b)), shape, shape)


def test_column_stack_mixed():
    check(lambda m, a, b: m.column_stack([a, b]), (3,), (3, 2))


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast(name):
    for shape in [(), (3,), (2, 3), (2, 3, 4)]:
        check(lambda m, a: getattr(m, name)(a), np.asarray(data(shape or (1,))).reshape(shape))
    check(lambda m, a, b: getattr(m, name)(a, b), (3,), (2, 3))
    check(lambda m, a, b: getattr(m, name)([a, b]), (3,), (2, 3))


def test_broadcast():
    check(lambda m, a, b: m.broadcast_tensors(a, b), (3, 1), (4,))
    check(lambda m, a, b, c: m.broadcast_tensors(a, b, c), (3, 1), (1, 4), (2, 1, 1))
    check(lambda m, a: m.broadcast_to(a, (2, 3, 4)), (3, 1))
    check(lambda m, a: m.broadcast_to(a, (-1, 4)), (3, 1))
    check(lambda m, a: a.broadcast_to((2, 3)), (3,))
    check_grad(lambda m, a, b: m.broadcast_tensors(a, b), (3, 1), (4,))
    want = torch.broadcast_shapes((3, 1), (4,), (1, 1))
    assert spx.broadcast_shapes((3, 1), (4,), (1, 1)) == want
    assert isinstance(spx.broadcast_shapes((2, 1), (3,)), spx.Size)
    check_raises(lambda m, a, b: m.broadcast_tensors(a, b), (3,), (4,), error=RuntimeError)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    check(lambda m, a, b: m.meshgrid(a, b, indexing=indexing), (3,), (2,))
    check(lambda m, a, b, c: m.meshgrid([a, b, c], indexing=indexing), (3,), (2,), (4,))
    check(lambda m, a: m.meshgrid(a, indexing=indexing), (3,))
    check_grad(lambda m, a, b: m.meshgrid(a, b, indexing=indexing), (3,), (2,))


def test_meshgrid_default_warns_like_torch():
    with pytest.warns(UserWarning, match="indexing"):
        gx, _ = spx.meshgrid(spx.arange(3), spx.arange(2))
    assert gx.shape == (3, 2)
    check_raises(lambda m, a: m.meshgrid(a, indexing="ji"), (3,), error=ValueError)
    check_raises(lambda m, a: m.meshgrid(a, indexing="ij"), (3, 2), error=RuntimeError)


SPLITS = [
    ("chunk", lambda m, a: m.chunk(a, 3)),
    ("chunk_dim", lambda m, a: m.chunk(a, 2, dim=1)),
    ("split", lambda m, a: m.split(a, 2)),
    ("split_sizes", lambda m, a: m.split(a, [1, 4], dim=0)),
    ("split_dim", lambda m, a: m.split(a, 3, dim=1)),
    ("tensor_split", lambda m, a: m.tensor_split(a, 3)),
    ("tensor_split_idx", lambda m, a: m.tensor_split(a, [1, 3], dim=1)),
    ("unbind", lambda m, a: m.unbind(a)),
    ("unbind_dim", lambda m, a: m.unbind(a, 1)),
    ("hsplit", lambda m, a: m.hsplit(a, 2)),
    ("hsplit_idx", lambda m, a: m.hsplit(a, [1])),
    ("vsplit", lambda m, a: m.vsplit(a, [2, 3])),
]


@pytest.mark.parametrize("fn", [c[1] for c in SPLITS], ids=[c[0] for c in SPLITS])
def test_splits(fn):
    check(fn, (5, 4))
    check_grad(fn, (5, 4))


def test_dsplit_and_split_errors():
    check(lambda m, a: m.dsplit(a, 2), (2, 3, 4))
    check_raises(lambda m, a: m.hsplit(a, 3), (5, 4), error=RuntimeError)
    check_raises(lambda m, a: m.vsplit(a, 2), (5,), error=RuntimeError)
    check_raises(lambda m, a: m.dsplit(a, 2), (5, 4), error=RuntimeError)


def test_split_pieces_are_views():
    x = spx.zeros(4, 2)
    _, b = spx.split(x, 2)
    b.fill_(1.0)
    assert x.tolist() == [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]


FUNCS = [
    ("reshape", lambda m, a: m.reshape(a, (6, -1))),
    ("flatten", lambda m, a: m.flatten(a)),
    ("flatten_range", lambda m, a: m.flatten(a, 1, 2)),
    ("unflatten", lambda m, a: m.unflatten(a, 1, (1, 3))),
    ("ravel", lambda m, a: m.ravel(a)),
    ("squeeze", lambda m, a: m.squeeze(a.unsqueeze(0))),
    ("squeeze_dim", lambda m, a: m.squeeze(a, 0)),
    ("squeeze_dims", lambda m, a: m.squeeze(a.unsqueeze(1), (0, 1))),
    ("unsqueeze", lambda m, a: m.unsqueeze(a, -1)),
    ("transpose", lambda m, a: m.transpose(a, 0, 2)),
    ("swapaxes", lambda m, a: m.swapaxes(a, 1, 2)),
    ("swapdims", lambda m, a: m.swapdims(a, 0, 1)),
    ("t", lambda m, a: m.t(a[0])),
    ("permute", lambda m, a: m.permute(a, (2, 0, 1))),
    ("movedim", lambda m, a: m.movedim(a, 0, -1)),
    ("moveaxis", lambda m, a: m.moveaxis(a, (0, 1), (1, 0))),
    ("narrow", lambda m, a: m.narrow(a, 2, 1, 2)),
    ("select", lambda m, a: m.select(a, 1, -1)),
    ("flip", lambda m, a: m.flip(a, (0, 2))),
    ("fliplr", lambda m, a: m.fliplr(a)),
    ("flipud", lambda m, a: m.flipud(a)),
    ("roll", lambda m, a: m.roll(a, 1)),
    ("roll_dims", lambda m, a: m.roll(a, (1, -1), (0, 2))),
    ("rot90", lambda m, a: m.rot90(a)),
    ("rot90_k", lambda m, a: m.rot90(a, 3, [1, 2])),
    ("rot90_neg", lambda m, a: m.rot90(a, -1, (2, 0))),
    ("tile", lambda m, a: m.tile(a, (2,))),
    ("tile_more", lambda m, a: m.tile(a, (2, 1, 1, 2))),
    ("repeat_interleave", lambda m, a: m.repeat_interleave(a, 2)),
    ("repeat_interleave_dim", lambda m, a: m.repeat_interleave(a, 3, dim=1)),
    ("repeat_interleave_t", lambda m, a: m.repeat_interleave(a, m.tensor([1, 0]), dim=0)),
    ("diagonal", lambda m, a: m.diagonal(a)),
    ("diagonal_args", lambda m, a: m.diagonal(a, 1, 1, 2)),
    ("tril", lambda m, a: m.tril(a)),
    ("tril_k", lambda m, a: m.tril(a, -1)),
    ("triu", lambda m, a: m.triu(a, diagonal=1)),
    ("triu_neg", lambda m, a: m.triu(a, -1)),
    ("diag_embed", lambda m, a: m.diag_embed(a)),
    ("diag_embed_args", lambda m, a: m.diag_embed(a, 1, 0, 2)),
    ("diag_embed_neg", lambda m, a: m.diag_embed(a, offset=-2)),
    ("clone", lambda m, a: m.clone(a)),
]


@pytest.mark.parametrize("fn", [c[1] for c in FUNCS], ids=[c[0] for c in FUNCS])
def test_shape_function(fn):
    check(fn, (2, 3, 3))
    check_grad(fn, (2, 3, 3))


@pytest.mark.parametrize("k", [0, 1, -1, 3])
def test_diag_trace(k):
    check(lambda m, a: m.diag(a, k), (3,))
    check(lambda m, a: m.diag(a, k), (3, 4))
    check(lambda m, a: a.diag(k), (4, 3))
    check_grad(lambda m, a: m.diag(a, k), (3,))
    check_grad(lambda m, a: m.diag(a, k), (3, 4))
    check(lambda m, a: m.trace(a), (3, 4))
    check(lambda m, a: m.trace(a), INTS)
    check_grad(lambda m, a: m.trace(a), (3, 4))


def test_diag_trace_tril_errors():
    check_raises(lambda m, a: m.trace(a), (2, 2, 2), error=RuntimeError)
    check_raises(lambda m, a: m.diag(a), (2, 2, 2), error=RuntimeError)
    check_raises(lambda m, a: m.tril(a), (3,), error=RuntimeError)
    check_raises(lambda m, a: m.rot90(a, 1, (0, 0)), (2, 2), error=RuntimeError)


def test_tril_triu_inplace():
    check(lambda m, a: a.clone().tril_(), (3, 3))
    check(lambda m, a: a.clone().triu_(1), (3, 3))
    x = spx.ones(3, 3)
    assert x.tril_() is x and x.sum().item() == 6.0


def test_repeat_interleave_counts_only():
    check(lambda m, a: m.repeat_interleave(a), np.array([1, 0, 3]))
    check(lambda m, a: m.repeat_interleave(a, m.tensor([2, 1, 1])), (3,))


def test_sum_to_size_split_with_sizes_is_same_size():
    check(lambda m, a: a.sum_to_size(1, 3), (4, 3))
    check(lambda m, a: a.sum_to_size(3), (4, 3))
    check(lambda m, a: a.sum_to_size((2, 1, 1)), (2, 3, 4))
    check_grad(lambda m, a: a.sum_to_size(1, 3), (4, 3))
    check_raises(lambda m, a: a.sum_to_size(2, 3), (4, 3), error=RuntimeError)
    check(lambda m, a: a.split_with_sizes([1, 2], 1), (2, 3))
    check(lambda m, a, b: a.is_same_size(b), (2, 3), (2, 3))
    check(lambda m, a, b: a.is_same_size(b), (2, 3), (3, 2))


def test_numel():
    check(lambda m, a: m.numel(a), (2, 3, 4))
    assert spx.numel(np.zeros((2, 5))) == 10
    assert spx.numel(jnp.zeros(7)) == 7


@pytest.mark.parametrize("n", [1, 2])
def test_diff(n):
    check(lambda m, a: m.diff(a, n), (3, 5))
    check(lambda m, a: m.diff(a, n=n, dim=0), (3, 5))
    check(lambda m, a, p: m.diff(a, n, 1, prepend=p), (3, 5), (3, 2))
    check(lambda m, a, q: a.diff(n, -1, append=q), (3, 5), (3, 1))
    check(lambda m, a, p, q: m.diff(a, n, 0, p, q), (3, 5), (1, 5), (2, 5))
    check(lambda m, a: m.diff(a, n), data((6,), kind="int"))
    check(lambda m, a: m.diff(a > 0, n), (6,))
    check_grad(lambda m, a, p: m.diff(a, n, 1, prepend=p), (3, 5), (3, 2))


def test_diagflat_narrow_copy():
    check(lambda m, a: m.diagflat(a), (2, 2))
    check(lambda m, a: m.diagflat(a, -1), (3,))
    check(lambda m, a: a.diagflat(2), (3,))
    check_grad(lambda m, a: m.diagflat(a, 1), (2, 2))
    for lib in (spx, torch):
        x = lib.zeros(4)
        lib.narrow_copy(x, 0, 1, 2).fill_(1.0)
        assert x.tolist() == [0.0] * 4
    check(lambda m, a: m.narrow_copy(a, 1, 1, 2), (2, 4))


SCATTERS = [
    ("select", lambda m, x, s: m.select_scatter(x, s, 0, 1), (3, 4), (4,)),
    ("select_dim", lambda m, x, s: x.select_scatter(s, 1, -1), (3, 4), (3,)),
    ("slice", lambda m, x, s: m.slice_scatter(x, s, start=1), (3, 4), (2, 4)),
    ("slice_step", lambda m, x, s: m.slice_scatter(x, s, 1, 0, 4, 2), (3, 4), (3, 2)),
    ("diagonal", lambda m, x, s: m.diagonal_scatter(x, s), (3, 4), (3,)),
    ("diagonal_offset", lambda m, x, s: x.diagonal_scatter(s, 1), (3, 4), (3,)),
]


@pytest.mark.parametrize("fn,x,s", [c[1:] for c in SCATTERS], ids=[c[0] for c in SCATTERS])
def test_slice_scatters(fn, x, s):
    check(fn, x, s)
    check_grad(fn, x, s)


def test_scatters_leave_input_unchanged():
    x = spx.zeros(2, 2)
    out = spx.select_scatter(x, spx.ones(2), 0, 0)
    assert x.sum().item() == 0.0 and out.sum().item() == 2.0


def test_cartesian_prod_combinations_block_diag():
    check(lambda m, a, b: m.cartesian_prod(a, b), (2,), (3,))
    check(lambda m, a, b, c: m.cartesian_prod(a, b, c), (2,), (1,), (2,))
    check(lambda m, a: m.cartesian_prod(a), (3,))
    check_grad(lambda m, a, b: m.cartesian_prod(a, b), (2,), (3,))
    for r in (0, 1, 2, 3, 5):  # r = 0 and r > n: torch's empty shapes (0,) and (0, r)
        check(lambda m, a, r=r: m.combinations(a, r), (4,))
        check(lambda m, a, r=r: m.combinations(a, r, with_replacement=True), (3,))
    check(lambda m, a: m.combinations(a, 2), (0,))
    check_grad(lambda m, a: m.combinations(a, 2), (4,))
    check(lambda m, a, b, c: m.block_diag(a, b, c), (2, 2), (3,), (1, 3))
    check(lambda m, a, b: m.block_diag(a, b.int()), (2, 2), (2, 1))
    check_grad(lambda m, a, b: m.block_diag(a, b), (2, 2), (1, 3))
    check_raises(lambda m, a: m.block_diag(a), (2, 2, 2), error=RuntimeError)


def test_unsafe_aliases():
    check(lambda m, a: m.unsafe_chunk(a, 2), (4, 3))
    check(lambda m, a: m.unsafe_split(a, 3, 1), (4, 3))
    check(lambda m, a: a.unsafe_split_with_sizes([1, 3]), (4, 3))
