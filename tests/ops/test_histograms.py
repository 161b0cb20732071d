"""spx.histogram against torch.histogram: bin counts, explicit ranges and edges, weights,
density, values on and outside the edges, equal min and max, and the errors."""

import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_raises

torch = pytest.importorskip("torch")

X = np.array([1.0, 2.0, 1.0, 5.0, -3.0, 0.0, 4.0, 4.0, 2.5, 10.0], np.float32)
W = np.linspace(0.5, 2.0, X.size).astype(np.float32)


@pytest.mark.parametrize("bins", [1, 3, 4, 7])
@pytest.mark.parametrize("density", [False, True])
def test_bin_count_over_the_data_range(bins, density):
    check(lambda m, x: m.histogram(x, bins, density=density), X)


@pytest.mark.parametrize("range_", [(0.0, 4.0), (-1.0, 12.0), (2.0, 2.5)])
def test_explicit_range_drops_values_outside_and_keeps_the_right_edge(range_):
    check(lambda m, x: m.histogram(x, 4, range=range_), X)


def test_weights_and_density():
    check(lambda m, x, w: m.histogram(x, 5, weight=w), X, W)
    check(lambda m, x, w: m.histogram(x, 5, weight=w, density=True), X, W)


def test_bin_edges_tensor():
    edges = np.array([-1.0, 1.0, 2.0, 4.0, 5.0], np.float32)
    check(lambda m, x, e: m.histogram(x, e), X, edges)
    check(lambda m, x, e, w: m.histogram(x, e, weight=w, density=True), X, edges, W)


def test_equal_min_and_max_widen_by_one_half():
    check(lambda m, x: m.histogram(x, 3), np.array([1.0, 1.0, 1.0], np.float32))


def test_2d_input_is_flattened():
    check(lambda m, x: m.histogram(x, 4), X.reshape(2, 5))


def test_integer_input_and_bad_bins_raise():
    check_raises(lambda m, x: m.histogram(x, 3), np.array([1, 2, 3]), error=RuntimeError)
    check_raises(lambda m, x: m.histogram(x, 0), X, error=RuntimeError)
    check_raises(lambda m, x: m.histogram(x, 3, range=(2.0, 1.0)), X, error=RuntimeError)


def test_results_do_not_require_grad():
    hist, edges = spx.histogram(spx.tensor(X, requires_grad=True), 3)
    assert not hist.requires_grad and not edges.requires_grad
