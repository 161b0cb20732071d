"""spx.gradient against torch.gradient: spacing by a number, one number per dim or sample
coordinates, chosen dims, edge_order 1 and 2, integer samples, gradients, and the errors."""

import numpy as np
import pytest

from tests.tensor._parity import check, check_grad, check_raises

torch = pytest.importorskip("torch")

Y = np.array([[1.0, 2.0, 4.0, 7.0], [3.0, -5.0, 9.0, 0.5], [0.0, 1.5, -2.0, 6.0]], np.float32)
C0 = np.array([0.0, 0.5, 2.0], np.float32)  # uneven coordinates along dim 0
C1 = np.array([0.0, 1.0, 3.0, 3.5], np.float32)  # and along dim 1


@pytest.mark.parametrize("edge_order", [1, 2])
def test_uniform_spacing(edge_order):
    check(lambda m, y: m.gradient(y, edge_order=edge_order), Y)
    check(lambda m, y: m.gradient(y, spacing=0.25, edge_order=edge_order), Y)
    check(lambda m, y: m.gradient(y, spacing=[2.0, 0.5], edge_order=edge_order), Y)
    check(lambda m, y: m.gradient(y, dim=1, edge_order=edge_order), Y)
    check(lambda m, y: m.gradient(y, spacing=3.0, dim=-2, edge_order=edge_order), Y)
    check(lambda m, y: m.gradient(y, spacing=[0.5], dim=[1], edge_order=edge_order), Y)
    check_grad(lambda m, y: m.gradient(y, spacing=0.5, edge_order=edge_order), Y)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_sample_coordinates(edge_order):
    check(lambda m, y, a, b: m.gradient(y, spacing=(a, b), edge_order=edge_order), Y, C0, C1)
    check(lambda m, y, b: m.gradient(y, spacing=(b,), dim=1, edge_order=edge_order), Y, C1)
    check_grad(lambda m, y, b: m.gradient(y, spacing=(b,), dim=1, edge_order=edge_order), Y, C1)


def test_integer_samples_give_floats():
    check(lambda m, y: m.gradient(y), np.array([1, 2, 4, 7], np.int64))
    check(lambda m, y: m.gradient(y, spacing=2), np.array([[1, 2, 4], [2, 5, 9]], np.int32))


def test_three_dims():
    y = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    check(lambda m, y: m.gradient(y, edge_order=2), y)
    check(lambda m, y: m.gradient(y, dim=(2, 0)), y)


ERRORS = [
    ("edge_order_3", lambda m, y: m.gradient(y, edge_order=3)),
    ("too_short_for_edge_order", lambda m, y: m.gradient(y[:2], edge_order=2)),
    ("one_sample", lambda m, y: m.gradient(y[:1], dim=0)),
    ("spacing_list_length", lambda m, y: m.gradient(y, spacing=[1.0, 2.0, 3.0])),
    ("spacing_list_vs_dim", lambda m, y: m.gradient(y, spacing=[1.0, 2.0], dim=0)),
]


@pytest.mark.parametrize("fn", [e[1] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors(fn):
    check_raises(fn, Y, error=RuntimeError)
