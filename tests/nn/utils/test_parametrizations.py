"""spx.nn.utils.parametrizations (weight_norm, spectral_norm, orthogonal) against torch's."""

from __future__ import annotations

import numpy as np
import pytest

import spx
from spx import nn
from spx.nn.utils import parametrizations as SP
from spx.nn.utils import parametrize as P
from tests.nn.utils._parity import assert_state_matches, host, load_from_torch, train_and_compare

torch = pytest.importorskip("torch")
TP = torch.nn.utils.parametrizations

LAYERS = {
    "linear": (lambda: torch.nn.Linear(5, 3), lambda: nn.Linear(5, 3), (4, 5)),
    "conv2d": (lambda: torch.nn.Conv2d(2, 4, 3), lambda: nn.Conv2d(2, 4, 3), (2, 2, 6, 6)),
    "convT1d": (
        lambda: torch.nn.ConvTranspose1d(3, 2, 3),
        lambda: nn.ConvTranspose1d(3, 2, 3),
        (2, 3, 5),
    ),
}


def _pair(layer, register_t, register_s):
    """The torch and spx layer, alike before and after registration (spx loads torch's state)."""
    make_t, make_s, shape = LAYERS[layer]
    torch.manual_seed(0)
    t, s = make_t(), make_s()
    load_from_torch(t, s)
    register_t(t)
    register_s(s)
    return t, s, shape


# -- weight norm ---------------------------------------------------------------------------------
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("dim", [0, 1, None])
@pytest.mark.parametrize("layer", ["linear", "conv2d"])
def test_weight_norm_matches_torch(layer, dim, compiled):
    t, s, shape = _pair(
        layer, lambda m: TP.weight_norm(m, dim=dim), lambda m: SP.weight_norm(m, dim=dim)
    )
    assert "parametrizations.weight.original0" in s.state_dict()
    # The initial originals come from right_inverse: equal without loading anything.
    assert_state_matches(t, s, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(host(s.weight), host(t.weight), rtol=1e-5, atol=1e-6)
    assert repr(s) == repr(t)
    train_and_compare(t, s, shape, steps=3, compiled=compiled)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_weight_norm_loads_an_old_api_state_dict_like_torch():
    torch.manual_seed(0)
    old = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3))
    with torch.no_grad():
        old.weight_g.mul_(2.0)
    sd = {k: v.detach().numpy() for k, v in old.state_dict().items()}
    t = TP.weight_norm(torch.nn.Linear(4, 3))
    t.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()})
    s = SP.weight_norm(nn.Linear(4, 3))
    missing, unexpected = s.load_state_dict(sd)
    assert missing == [] and unexpected == []
    assert "weight_g" in sd  # the caller's dict is left as it was
    assert_state_matches(t, s, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(host(s.weight), host(t.weight), rtol=1e-5, atol=1e-6)


def test_weight_norm_assignment_and_removal():
    t, s, _ = _pair("linear", TP.weight_norm, SP.weight_norm)
    W = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    t.weight = torch.from_numpy(W)
    s.weight = spx.from_numpy(W)
    np.testing.assert_allclose(host(s.weight), W, rtol=1e-5, atol=1e-6)
    assert_state_matches(t, s, rtol=1e-6, atol=1e-6)
    torch.nn.utils.parametrize.remove_parametrizations(t, "weight")
    P.remove_parametrizations(s, "weight")
    assert list(s.state_dict()) == list(t.state_dict()) == ["bias", "weight"]
    assert isinstance(s.weight, nn.Parameter)
    assert_state_matches(t, s)


# -- spectral norm -------------------------------------------------------------------------------
def _spectral(n_power_iterations=1, dim=None, eps=1e-12):
    def t_fn(m):
        return TP.spectral_norm(m, n_power_iterations=n_power_iterations, dim=dim, eps=eps)

    def s_fn(m):
        return SP.spectral_norm(m, n_power_iterations=n_power_iterations, dim=dim, eps=eps)

    return t_fn, s_fn


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("n_power_iterations", [1, 3])
@pytest.mark.parametrize(
    "layer",
    [
        "linear",
        "conv2d",
        "convT1d",
    ],
)
def test_spectral_norm_training_matches_torch(layer, n_power_iterations, compiled):
    t, s, shape = _pair(layer, *_spectral(n_power_iterations))
    keys = ["parametrizations.weight.original", "parametrizations.weight.0._u",
            "parametrizations.weight.0._v"]  # fmt: skip
    assert [k for k in s.state_dict() if k != "bias"] == keys
    # u, v start random: spx starts from torch's (the state dict holds them).
    load_from_torch(t, s)
    np.testing.assert_allclose(host(s.weight), host(t.weight), rtol=1e-5, atol=1e-6)
    # Each training step updates u and v in place (compared in the state dict).
    train_and_compare(t, s, shape, steps=4, compiled=compiled)


@pytest.mark.parametrize("layer", ["conv2d", "convT1d"])
def test_spectral_norm_of_convolutions_reads_and_evaluates_like_torch(layer):
    t, s, shape = _pair(layer, *_spectral(n_power_iterations=2))
    load_from_torch(t, s)
    for _ in range(3):  # each read in training mode: one power method run (u, v compared)
        np.testing.assert_allclose(host(s.weight), host(t.weight), rtol=1e-5, atol=1e-6)
        assert_state_matches(t, s)
    t.eval()
    s.eval()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(
        host(s(spx.from_numpy(x))), host(t(torch.from_numpy(x))), rtol=1e-5, atol=1e-5
    )
    assert_state_matches(t, s)


def test_spectral_norm_default_dim_is_the_output_dim():
    _, s, _ = _pair("convT1d", *_spectral())
    assert tuple(s.parametrizations.weight[0]._u.shape) == (2,)  # out channels, weight dim 1
    _, s, _ = _pair("conv2d", *_spectral(dim=1))
    assert tuple(s.parametrizations.weight[0]._u.shape) == (2,)


def test_spectral_norm_eval_uses_u_v_without_updating_them():
    t, s, _ = _pair("linear", *_spectral())
    load_from_torch(t, s)
    t.eval()
    s.eval()
    assert not s.parametrizations.weight[0].training
    u = host(s.parametrizations.weight[0]._u)
    x = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    for _ in range(2):
        np.testing.assert_allclose(
            host(s(spx.from_numpy(x))), host(t(torch.from_numpy(x))), rtol=1e-5, atol=1e-6
        )
    np.testing.assert_array_equal(host(s.parametrizations.weight[0]._u), u)
    assert_state_matches(t, s)
    t.train()
    s.train()
    _ = s.weight, t.weight  # every read in training mode runs the power method
    assert not np.array_equal(host(s.parametrizations.weight[0]._u), u)
    assert_state_matches(t, s)


def test_spectral_norm_buffers_update_in_place_and_cached_iterates_once():
    t, s, _ = _pair("linear", *_spectral())
    load_from_torch(t, s)
    alias = s.state_dict()["parametrizations.weight.0._u"]
    with torch.nn.utils.parametrize.cached():
        _ = t.weight, t.weight
    with P.cached():
        _ = s.weight, s.weight
    assert_state_matches(t, s)
    np.testing.assert_array_equal(host(alias), host(s.parametrizations.weight[0]._u))


def test_spectral_norm_two_forwards_one_backward_like_a_gan():
    t, s, _ = _pair("linear", *_spectral())
    load_from_torch(t, s)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((3, 5)).astype(np.float32) for _ in range(2))
    (t(torch.from_numpy(a)).mean() - t(torch.from_numpy(b)).mean()).backward()
    (s(spx.from_numpy(a)).mean() - s(spx.from_numpy(b)).mean()).backward()
    np.testing.assert_allclose(
        host(s.parametrizations.weight.original.grad),
        host(t.parametrizations.weight.original.grad),
        rtol=1e-5,
        atol=1e-6,
    )
    assert_state_matches(t, s)


def test_spectral_norm_of_a_vector_normalizes_it():
    tm, sm = torch.nn.Module(), nn.Module()
    v = np.array([3.0, 4.0], np.float32)
    tm.v = torch.nn.Parameter(torch.from_numpy(v))
    sm.v = nn.Parameter(spx.from_numpy(v))
    TP.spectral_norm(tm, "v")
    SP.spectral_norm(sm, "v")
    assert list(sm.state_dict()) == list(tm.state_dict()) == ["parametrizations.v.original"]
    np.testing.assert_allclose(host(sm.v), [0.6, 0.8], rtol=1e-6)


def test_spectral_norm_errors_match_torch():
    for lib, fn in ((torch, TP.spectral_norm), (spx, SP.spectral_norm)):
        with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
            fn(lib.nn.Linear(2, 2), "kernel")
        with pytest.raises(ValueError, match="n_power_iterations=0"):
            fn(lib.nn.Linear(2, 2), n_power_iterations=0)
        with pytest.raises(IndexError, match="Dimension out of range"):
            fn(lib.nn.Linear(2, 2), dim=2)


# -- orthogonal ----------------------------------------------------------------------------------
ORTH_SHAPES = {"tall": (3, 5), "wide": (5, 3), "square": (4, 4)}  # Linear(in, out): W is out x in


def _orth_pair(shape, orthogonal_map, use_trivialization=True):
    n_in, n_out = ORTH_SHAPES[shape]
    torch.manual_seed(0)
    t, s = torch.nn.Linear(n_in, n_out), nn.Linear(n_in, n_out)
    load_from_torch(t, s)
    kw = {"orthogonal_map": orthogonal_map, "use_trivialization": use_trivialization}
    TP.orthogonal(t, **kw)
    SP.orthogonal(s, **kw)
    return t, s, (6, n_in)


def _assert_orthogonal(Q):
    Q = host(Q)
    Q = Q if Q.shape[0] >= Q.shape[1] else Q.T
    np.testing.assert_allclose(Q.T @ Q, np.eye(Q.shape[1]), atol=1e-5)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("shape", list(ORTH_SHAPES))
def test_orthogonal_matches_torch(shape, orthogonal_map, compiled):
    t, s, x_shape = _orth_pair(shape, orthogonal_map)
    keys = ["bias", "parametrizations.weight.original", "parametrizations.weight.0.base"]
    assert list(s.state_dict()) == list(t.state_dict()) == keys
    # The initial Q is the QR of the weight (completed at random when not square, which
    # leaves its first columns, Q itself, unchanged): torch's, without loading.
    _assert_orthogonal(s.weight)
    np.testing.assert_allclose(host(s.weight), host(t.weight), rtol=1e-4, atol=1e-5)
    load_from_torch(t, s)
    np.testing.assert_allclose(host(s.weight), host(t.weight), rtol=1e-5, atol=1e-5)
    train_and_compare(t, s, x_shape, steps=3, compiled=compiled, rtol=1e-4, atol=1e-5)
    _assert_orthogonal(s.weight)


@pytest.mark.parametrize("shape", list(ORTH_SHAPES))
def test_orthogonal_householder_without_trivialization_matches_torch(shape):
    t, s, x_shape = _orth_pair(shape, "householder", use_trivialization=False)
    assert (
        list(s.state_dict()) == list(t.state_dict()) == ["bias", "parametrizations.weight.original"]
    )
    # right_inverse's reflectors (geqrf) are deterministic: torch's values without loading.
    assert_state_matches(t, s, rtol=1e-4, atol=1e-5)
    _assert_orthogonal(s.weight)
    train_and_compare(t, s, x_shape, steps=3, rtol=1e-4, atol=1e-5)


def _batched(lib):
    class Batched(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.Parameter(lib.randn(2, 5, 3))

        def forward(self, x):
            return x @ self.w

    return Batched()


@pytest.mark.parametrize(
    ("orthogonal_map", "use_trivialization"),
    [("matrix_exp", True), ("cayley", True), ("householder", True), ("householder", False)],
)
def test_orthogonal_of_a_batch_of_matrices_matches_torch(orthogonal_map, use_trivialization):
    torch.manual_seed(0)
    t, s = _batched(torch), _batched(spx)
    load_from_torch(t, s)
    kw = {"orthogonal_map": orthogonal_map, "use_trivialization": use_trivialization}
    TP.orthogonal(t, "w", **kw)
    SP.orthogonal(s, "w", **kw)
    np.testing.assert_allclose(host(s.w), host(t.w), rtol=1e-4, atol=1e-5)
    load_from_torch(t, s)
    train_and_compare(t, s, (2, 4, 5), steps=2, rtol=1e-4, atol=1e-5)
    for Q in host(s.w):
        _assert_orthogonal(Q)


def test_orthogonal_assignment_and_default_maps():
    t, s, _ = _orth_pair("square", None)
    assert s.parametrizations.weight[0].orthogonal_map.name == "matrix_exp"
    _, s_tall, _ = _orth_pair("tall", None)
    assert s_tall.parametrizations.weight[0].orthogonal_map.name == "householder"
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((4, 4)))[0].astype(np.float32)
    t.weight = torch.from_numpy(Q)
    s.weight = spx.from_numpy(Q)
    np.testing.assert_allclose(host(s.weight), Q, atol=1e-5)
    assert_state_matches(t, s, atol=1e-5)


def test_householder_product_matches_torch():
    from spx.nn.utils._orthogonal import _householder_product

    rng = np.random.default_rng(0)
    for m, n, k in ((5, 3, 3), (4, 4, 2), (6, 2, 1)):
        A = rng.standard_normal((2, m, n)).astype(np.float32)
        tau = rng.uniform(0.5, 1.5, (2, k)).astype(np.float32)
        expected = torch.linalg.householder_product(torch.from_numpy(A), torch.from_numpy(tau))
        np.testing.assert_allclose(
            np.asarray(_householder_product(A, tau)), expected.numpy(), rtol=1e-5, atol=1e-5
        )


def test_orthogonal_errors_match_torch():
    for lib, fn in ((torch, TP.orthogonal), (spx, SP.orthogonal)):
        with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
            fn(lib.nn.Linear(2, 2), "kernel")
        with pytest.raises(ValueError, match="Got a tensor of 1 dimensions"):
            fn(lib.nn.Linear(2, 2), "bias")
        with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
            fn(lib.nn.Linear(2, 2), orthogonal_map="qr")
        m = fn(lib.nn.Linear(3, 3), orthogonal_map="cayley", use_trivialization=False)
        with pytest.raises(NotImplementedError, match="use_trivialization=False"):
            m.weight = lib.eye(3)
        m = fn(lib.nn.Linear(3, 3))
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices of shape"):
            m.weight = lib.eye(2)
