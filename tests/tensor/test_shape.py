"""Shape methods of spx.Tensor against torch: sizes, views, splits, copies, and their grads."""

import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_grad, check_raises, data

torch = pytest.importorskip("torch")

# (case id, fn over (m, x), input shape)
SHAPE_CASES = [
    ("size", lambda m, x: x.size(), (2, 3)),
    ("size_dim", lambda m, x: x.size(1), (2, 3)),
    ("size_negdim", lambda m, x: x.size(-1), (2, 3)),
    ("shape", lambda m, x: x.shape, (2, 3, 4)),
    ("shape_slice", lambda m, x: x.shape[1:], (2, 3, 4)),
    ("dim", lambda m, x: x.dim(), (2, 3)),
    ("ndimension", lambda m, x: x.ndimension(), (2, 3)),
    ("ndim", lambda m, x: x.ndim, (2, 3, 1)),
    ("numel", lambda m, x: x.numel(), (2, 3)),
    ("nelement", lambda m, x: x.nelement(), (2, 3)),
    ("len", lambda m, x: len(x), (4, 3)),
    ("view", lambda m, x: x.view(3, 2), (2, 3)),
    ("view_minus1", lambda m, x: x.view(-1), (2, 3)),
    ("view_infer", lambda m, x: x.view(-1, 2), (2, 3, 2)),
    ("view_tuple", lambda m, x: x.view((3, -1)), (2, 3)),
    ("view_size", lambda m, x: x.view(x.size()[::-1]), (2, 3)),
    ("view_dtype", lambda m, x: x.view(m.int32), (2, 3)),
    ("reshape", lambda m, x: x.reshape(6), (2, 3)),
    ("reshape_list", lambda m, x: x.reshape([1, -1, 2]), (2, 3, 2)),
    ("reshape_scalar", lambda m, x: x.reshape(()), (1, 1)),
    ("view_as", lambda m, x: x.view_as(x.reshape(3, 2)), (2, 3)),
    ("reshape_as", lambda m, x: x.reshape_as(x.reshape(6)), (2, 3)),
    ("transpose", lambda m, x: x.transpose(0, 1), (2, 3)),
    ("transpose_3d", lambda m, x: x.transpose(1, 2), (2, 3, 4)),
    ("transpose_neg", lambda m, x: x.transpose(-1, 0), (2, 3, 4)),
    ("transpose_same", lambda m, x: x.transpose(1, 1), (2, 3)),
    ("swapaxes", lambda m, x: x.swapaxes(0, 2), (2, 3, 4)),
    ("swapdims", lambda m, x: x.swapdims(0, -1), (2, 3, 4)),
    ("t", lambda m, x: x.t(), (2, 3)),
    ("t_1d", lambda m, x: x.t(), (3,)),
    ("T", lambda m, x: x.T, (2, 3)),
    ("mT", lambda m, x: x.mT, (2, 3, 4)),
    ("permute", lambda m, x: x.permute(2, 0, 1), (2, 3, 4)),
    ("permute_tuple", lambda m, x: x.permute((1, 0, 2)), (2, 3, 4)),
    ("permute_neg", lambda m, x: x.permute(-1, 0, 1), (2, 3, 4)),
    ("movedim", lambda m, x: x.movedim(0, 2), (2, 3, 4)),
    ("movedim_neg", lambda m, x: x.movedim(-1, 0), (2, 3, 4)),
    ("movedim_tuple", lambda m, x: x.movedim((0, 1), (2, 0)), (2, 3, 4)),
    ("moveaxis", lambda m, x: x.moveaxis(1, 0), (2, 3, 4)),
    ("unsqueeze0", lambda m, x: x.unsqueeze(0), (2, 3)),
    ("unsqueeze_last", lambda m, x: x.unsqueeze(-1), (2, 3)),
    ("unsqueeze_mid", lambda m, x: x.unsqueeze(1), (2, 3)),
    ("unsqueeze_neg2", lambda m, x: x.unsqueeze(-2), (2, 3)),
    ("squeeze_all", lambda m, x: x.squeeze(), (1, 2, 1, 3)),
    ("squeeze_dim", lambda m, x: x.squeeze(2), (1, 2, 1, 3)),
    ("squeeze_non1", lambda m, x: x.squeeze(1), (1, 2, 1, 3)),
    ("squeeze_neg", lambda m, x: x.squeeze(-2), (1, 2, 1, 3)),
    ("squeeze_tuple", lambda m, x: x.squeeze((0, 1, 2)), (1, 2, 1, 3)),
    ("squeeze_0d", lambda m, x: x.reshape(()).squeeze(), (1,)),
    ("squeeze_0d_dim", lambda m, x: x.reshape(()).squeeze(0), (1,)),
    ("expand", lambda m, x: x.expand(3, 4), (3, 1)),
    ("expand_minus1", lambda m, x: x.expand(-1, 4), (3, 1)),
    ("expand_new_dims", lambda m, x: x.expand(2, 3, 4), (3, 1)),
    ("expand_new_dims_minus1", lambda m, x: x.expand(2, -1, -1), (3, 1)),
    ("expand_tuple", lambda m, x: x.expand((2, 3, 5)), (1, 5)),
    ("expand_as", lambda m, x: x.expand_as(m.zeros(2, 3, 4)), (3, 1)),
    ("flatten", lambda m, x: x.flatten(), (2, 3, 4)),
    ("flatten_start", lambda m, x: x.flatten(1), (2, 3, 4)),
    ("flatten_range", lambda m, x: x.flatten(0, 1), (2, 3, 4)),
    ("flatten_neg", lambda m, x: x.flatten(-2, -1), (2, 3, 4)),
    ("flatten_0d", lambda m, x: x.reshape(()).flatten(), (1,)),
    ("unflatten", lambda m, x: x.unflatten(1, (2, 2)), (3, 4)),
    ("unflatten_infer", lambda m, x: x.unflatten(-1, (2, -1)), (3, 4)),
    ("contiguous", lambda m, x: x.t().contiguous(), (2, 3)),
    ("is_contiguous", lambda m, x: x.is_contiguous(), (2, 3)),
    ("is_contiguous_t", lambda m, x: x.t().is_contiguous(), (2, 3)),
    ("narrow", lambda m, x: x.narrow(1, 1, 2), (2, 4)),
    ("narrow_neg", lambda m, x: x.narrow(-1, -3, 2), (2, 4)),
    ("select", lambda m, x: x.select(1, 2), (2, 4)),
    ("select_neg", lambda m, x: x.select(0, -1), (2, 4)),
    ("split_int", lambda m, x: x.split(2), (5, 3)),
    ("split_int_dim", lambda m, x: x.split(2, dim=1), (3, 5)),
    ("split_sizes", lambda m, x: x.split([1, 3, 1]), (5, 3)),
    ("split_big", lambda m, x: x.split(10), (5, 3)),
    ("chunk", lambda m, x: x.chunk(2), (5, 3)),
    ("chunk_dim", lambda m, x: x.chunk(3, dim=1), (2, 6)),
    ("chunk_uneven", lambda m, x: x.chunk(4), (6, 2)),
    ("chunk_more_than_size", lambda m, x: x.chunk(5), (3, 2)),
    ("chunk_neg_dim", lambda m, x: x.chunk(2, -1), (3, 4)),
    ("tensor_split_n", lambda m, x: x.tensor_split(3), (7, 2)),
    ("tensor_split_idx", lambda m, x: x.tensor_split([1, 4]), (7, 2)),
    ("tensor_split_idx_dim", lambda m, x: x.tensor_split((1, 2), dim=1), (2, 4)),
    ("tensor_split_idx_past", lambda m, x: x.tensor_split([2, 9]), (4, 2)),
    ("unbind", lambda m, x: x.unbind(), (3, 2)),
    ("unbind_dim", lambda m, x: x.unbind(1), (3, 2)),
    ("iter", lambda m, x: tuple(iter(x)), (3, 2)),
    # One piece: a batch of size 1 iterated (its row had the outer dimension still).
    ("unbind_size1", lambda m, x: x.unbind(0), (1, 3)),
    ("unbind_size1_dim", lambda m, x: x.unbind(1), (2, 1)),
    ("iter_size1", lambda m, x: tuple(r * 2 + r.sum() for r in x), (1, 3)),
    ("diagonal", lambda m, x: x.diagonal(), (3, 4)),
    ("diagonal_offset", lambda m, x: x.diagonal(1), (3, 4)),
    ("diagonal_neg_offset", lambda m, x: x.diagonal(-1), (3, 4)),
    ("diagonal_dims", lambda m, x: x.diagonal(0, 1, 2), (2, 3, 3)),
    ("diagonal_kw", lambda m, x: x.diagonal(offset=1, dim1=-1, dim2=-2), (2, 3, 3)),
    ("unfold", lambda m, x: x.unfold(1, 2, 1), (2, 5)),
    ("unfold_step", lambda m, x: x.unfold(0, 2, 2), (5, 3)),
    ("repeat", lambda m, x: x.repeat(2, 3), (2, 3)),
    ("repeat_more_dims", lambda m, x: x.repeat(2, 1, 2), (2, 3)),
    ("repeat_tuple", lambda m, x: x.repeat((1, 2)), (2, 3)),
    ("tile", lambda m, x: x.tile(2), (2, 3)),
    ("tile_more", lambda m, x: x.tile((2, 1, 1)), (2, 3)),
    ("repeat_interleave", lambda m, x: x.repeat_interleave(2), (2, 3)),
    ("repeat_interleave_dim", lambda m, x: x.repeat_interleave(2, dim=0), (2, 3)),
    ("repeat_interleave_tensor", lambda m, x: x.repeat_interleave(m.tensor([1, 2]), dim=0), (2, 3)),
    ("repeat_interleave_neg", lambda m, x: x.repeat_interleave(3, -1), (2, 3)),
    ("flip", lambda m, x: x.flip(0), (2, 3)),
    ("flip_many", lambda m, x: x.flip(0, 1), (2, 3)),
    ("flip_list", lambda m, x: x.flip([-1]), (2, 3)),
    ("fliplr", lambda m, x: x.fliplr(), (2, 3)),
    ("flipud", lambda m, x: x.flipud(), (2, 3)),
    ("roll_flat", lambda m, x: x.roll(1), (2, 3)),
    ("roll_dim", lambda m, x: x.roll(1, 1), (2, 3)),
    ("roll_neg", lambda m, x: x.roll(-1, 0), (2, 3)),
    ("roll_many", lambda m, x: x.roll((1, 2), (0, 1)), (2, 3)),
    ("roll_dim_tuple", lambda m, x: x.roll(2, (1,)), (2, 3)),
    ("roll_list", lambda m, x: x.roll([1]), (2, 3)),
    ("roll_same_dim_twice", lambda m, x: x.roll((1, 2), (1, -1)), (2, 3)),
    ("roll_same_dim_twice_and_another", lambda m, x: x.roll((1, 1, 5), (0, 1, 0)), (3, 4)),
]


@pytest.mark.parametrize("fn,shape", [c[1:] for c in SHAPE_CASES], ids=[c[0] for c in SHAPE_CASES])
def test_shape_method(fn, shape):
    check(fn, shape)


GRAD_CASES = [c for c in SHAPE_CASES if c[0] not in {
    "size", "size_dim", "size_negdim", "shape", "shape_slice", "dim", "ndimension", "ndim",
    "numel", "nelement", "len", "view_dtype", "is_contiguous", "is_contiguous_t",
}]  # fmt: skip


@pytest.mark.parametrize("fn,shape", [c[1:] for c in GRAD_CASES], ids=[c[0] for c in GRAD_CASES])
def test_shape_method_grad(fn, shape):
    check_grad(fn, shape)


def test_size_is_spx_size():
    x = spx.zeros(2, 3)
    assert isinstance(x.size(), spx.Size) and isinstance(x.shape, tuple)
    assert repr(x.size()) == "spx.Size([2, 3])"
    assert x.size().numel() == 6
    assert x.size(0) == 2 and isinstance(x.size(0), int)


def test_view_dtype_bool_to_uint8():
    check(lambda m, x: (x > 0).view(m.uint8), (2, 3))


def test_int_tensor_shapes():
    check(lambda m, x: x.view(-1).flip(0).reshape(3, 2).t().repeat(1, 2), data((2, 3), kind="int"))


ERROR_CASES = [
    ("view_bad_numel", lambda m, x: x.view(4, 2), RuntimeError),
    ("view_two_minus1", lambda m, x: x.view(-1, -1), RuntimeError),
    ("transpose_out_of_range", lambda m, x: x.transpose(0, 2), IndexError),
    ("t_3d", lambda m, x: x.reshape(1, 2, 3).t(), RuntimeError),
    ("permute_wrong_len", lambda m, x: x.permute(0), RuntimeError),
    ("permute_repeat", lambda m, x: x.permute(0, 0), RuntimeError),
    ("unsqueeze_out_of_range", lambda m, x: x.unsqueeze(3), IndexError),
    ("squeeze_out_of_range", lambda m, x: x.squeeze(2), IndexError),
    ("expand_non_singleton", lambda m, x: x.expand(3, 3), RuntimeError),
    ("expand_fewer", lambda m, x: x.expand(3), RuntimeError),
    ("flatten_bad_order", lambda m, x: x.flatten(1, 0), RuntimeError),
    ("narrow_too_long", lambda m, x: x.narrow(1, 2, 2), RuntimeError),
    ("select_out_of_range", lambda m, x: x.select(0, 2), IndexError),
    ("split_bad_sizes", lambda m, x: x.split([1, 2]), RuntimeError),
    ("split_zero", lambda m, x: x.split(0), RuntimeError),
    ("chunk_zero", lambda m, x: x.chunk(0), RuntimeError),
    ("repeat_fewer", lambda m, x: x.repeat(2), RuntimeError),
    ("unfold_too_big", lambda m, x: x.unfold(1, 4, 1), RuntimeError),
    ("dim_float", lambda m, x: x.size(1.0), TypeError),
    # spx broadcast the shifts over the dims or dropped the extra ones: a silent wrong roll.
    ("roll_more_shifts", lambda m, x: x.roll((1, 2), (0,)), RuntimeError),
    ("roll_fewer_shifts", lambda m, x: x.roll((1,), (0, 1)), RuntimeError),
    ("roll_shifts_no_dims", lambda m, x: x.roll((1, 2)), RuntimeError),
    ("roll_no_shifts", lambda m, x: x.roll((), ()), RuntimeError),
]


@pytest.mark.parametrize("fn,error", [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_shape_errors(fn, error):
    check_raises(fn, (2, 3), error=error)


def test_len_0d_raises():
    with pytest.raises(TypeError):
        len(spx.tensor(1.0))


def test_view_is_a_view_and_reshape_copy_is_not_needed():
    x = spx.zeros(2, 3)
    v = x.view(-1)
    v[0] = 5.0
    assert x[0, 0].item() == 5.0
    np.testing.assert_array_equal(x.reshape(6).numpy(), v.numpy())
