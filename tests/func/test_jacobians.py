"""``jacrev``/``jacfwd``/``hessian`` and ``vjp``/``jvp`` against torch.func's numbers."""

import numpy as np
import pytest

import spx
from spx.func import jacrev, jvp, vjp

torch = pytest.importorskip("torch")

X = np.linspace(-1.0, 1.5, 6, dtype=np.float32).reshape(2, 3)
W = np.linspace(0.5, 2.0, 12, dtype=np.float32).reshape(3, 4)


def _close(actual, expected, rtol=1e-5, atol=1e-6):
    if isinstance(expected, tuple | list):
        assert isinstance(actual, type(expected)) and len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            _close(a, e, rtol, atol)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected)
        for k in expected:
            _close(actual[k], expected[k], rtol, atol)
    else:
        assert isinstance(actual, spx.Tensor), type(actual)
        assert tuple(actual.shape) == tuple(expected.shape)
        np.testing.assert_allclose(np.asarray(actual), expected.detach().numpy(), rtol, atol)


def _f(x, w):
    return (x @ w).tanh() * x.sum()


def _pytree_f(p):
    return {"out": (p["x"] @ p["w"]).sin(), "norm": (p["x"] ** 2).sum()}


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0)])
def test_jacobians_match_torch(name, argnums):
    t = getattr(torch.func, name)(_f, argnums=argnums)(torch.tensor(X), torch.tensor(W))
    s = getattr(spx.func, name)(_f, argnums=argnums)(spx.tensor(X), spx.tensor(W))
    _close(s, t)


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_jacobians_of_pytrees_nest_as_torchs(name):
    t = getattr(torch.func, name)(_pytree_f)({"x": torch.tensor(X), "w": torch.tensor(W)})
    s = getattr(spx.func, name)(_pytree_f)({"x": spx.tensor(X), "w": spx.tensor(W)})
    _close(s, t)


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_jacobian_has_aux(name):
    def f(lib):
        return lambda x: (x.exp(), (x.sum(), x * 2))

    t = getattr(torch.func, name)(f(torch), has_aux=True)(torch.tensor(X))
    s = getattr(spx.func, name)(f(spx), has_aux=True)(spx.tensor(X))
    _close(s, t)


@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_hessian_matches_torch(argnums):
    def f(x, w):
        return ((x @ w) ** 3).sum()

    t = torch.func.hessian(f, argnums=argnums)(torch.tensor(X), torch.tensor(W))
    s = spx.func.hessian(f, argnums=argnums)(spx.tensor(X), spx.tensor(W))
    _close(s, t, rtol=1e-4, atol=1e-4)


def test_jacrev_chunk_size_is_checked_and_does_not_change_numbers():
    t = torch.func.jacrev(_f, chunk_size=2)(torch.tensor(X), torch.tensor(W))
    _close(jacrev(_f, chunk_size=2)(spx.tensor(X), spx.tensor(W)), t)
    for lib in (torch, spx):
        with pytest.raises(ValueError, match=r"jacrev: `chunk_size` should be greater than 0\."):
            lib.func.jacrev(_f, chunk_size=0)


def test_vjp_matches_torch():
    ct = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    t_out, t_fn = torch.func.vjp(_f, torch.tensor(X), torch.tensor(W))
    out, fn = vjp(_f, spx.tensor(X), spx.tensor(W))
    _close(out, t_out)
    _close(fn(spx.tensor(ct)), t_fn(torch.tensor(ct)))
    _close(fn(spx.tensor(ct * 2)), t_fn(torch.tensor(ct * 2)))  # callable again


def test_vjp_pytrees_and_aux():
    def f(p):
        return _pytree_f(p), p["x"].mean()

    cts = {"out": np.ones((2, 4), np.float32), "norm": np.float32(3.0)}
    t_out, t_fn, t_aux = torch.func.vjp(
        f, {"x": torch.tensor(X), "w": torch.tensor(W)}, has_aux=True
    )
    out, fn, aux = vjp(f, {"x": spx.tensor(X), "w": spx.tensor(W)}, has_aux=True)
    _close(out, t_out)
    _close(aux, t_aux)
    _close(
        fn({k: spx.tensor(v) for k, v in cts.items()}),
        t_fn({k: torch.tensor(v) for k, v in cts.items()}),
    )


def test_vjp_errors_match_torch():
    for lib in (torch, spx):
        _, fn = lib.func.vjp(lambda x: (x, x * 2), lib.ones(2))
        with pytest.raises(RuntimeError, match="Expected pytree structure of cotangents"):
            fn(lib.ones(2))
        with pytest.raises(RuntimeError, match="All outputs of f must be floating-point"):
            lib.func.vjp(lambda x: (x > 0).long(), lib.ones(2))
        with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\)"):
            lib.func.vjp(lambda x: x, lib.ones(2), has_aux=True)


def test_jvp_matches_torch():
    tx = np.full_like(X, 0.5)
    tw = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
    t = torch.func.jvp(_f, (torch.tensor(X), torch.tensor(W)), (torch.tensor(tx), torch.tensor(tw)))
    s = jvp(_f, (spx.tensor(X), spx.tensor(W)), (spx.tensor(tx), spx.tensor(tw)))
    _close(s, t)


def test_jvp_has_aux_and_strict():
    def f(x):
        return x.sin(), {"c": x.cos()}

    t = torch.func.jvp(f, (torch.tensor(X),), (torch.ones(2, 3),), has_aux=True)
    s = jvp(f, (spx.tensor(X),), (spx.ones(2, 3),), has_aux=True)
    _close(s, t)
    for lib in (torch, spx):
        with pytest.raises(RuntimeError, match="independent of the inputs"):
            const = lib.ones(2)
            lib.func.jvp(lambda x, c=const: c, (lib.ones(2),), (lib.ones(2),), strict=True)


def test_jvp_errors_match_torch():
    for lib in (torch, spx):
        with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
            lib.func.jvp(lambda x: x, lib.ones(2), (lib.ones(2),))
        with pytest.raises(RuntimeError, match="Expected primals and tangents to have the same"):
            lib.func.jvp(lambda x, y: x, (lib.ones(2), lib.ones(2)), (lib.ones(2),))
        with pytest.raises(RuntimeError, match="different size than that of the original Tensor"):
            lib.func.jvp(lambda x: x, (lib.ones(2),), (lib.ones(3),))


def test_hessian_of_a_dict_input_nests_dicts_as_torch():
    def f(p):
        return (p["x"].sin() * p["y"].sum() ** 2).sum()

    inputs = {"x": X[0], "y": W[0]}
    t = torch.func.hessian(f)({k: torch.tensor(v) for k, v in inputs.items()})
    s = spx.func.hessian(f)({k: spx.tensor(v) for k, v in inputs.items()})
    _close(s, t, rtol=1e-4, atol=1e-4)
