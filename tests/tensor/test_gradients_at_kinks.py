"""Gradients where JAX's and torch's derivative conventions differ: at zeros of abs and of
norms, at ties of inf-norms. torch's are the reference (abs' = sgn, a zero norm has gradient
0, ties share the gradient evenly); JAX's (abs'(0) = 1, NaN/inf at zero norms, the first tie)
silently changed L1 losses, penalties and normalizations at exact zeros."""

import numpy as np
import pytest

import spx

torch = pytest.importorskip("torch")

X = np.array([[3.0, -3.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0], [2.0, 0.0, -2.0, 1.0]], np.float32)
T = np.array([[3.0, 1.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.5], [2.0, 0.0, 0.0, 1.0]], np.float32)

CASES = {
    "abs": lambda m, x: x.abs().sum(),
    "abs_fn": lambda m, x: m.abs(x).sum(),
    "abs_builtin": lambda m, x: abs(x).sum(),
    "absolute": lambda m, x: m.absolute(x).sum(),
    "l1_loss": lambda m, x: m.nn.functional.l1_loss(x, m.tensor(T)),
    "l1_penalty": lambda m, x: (x * 2).abs().mean() + x.pow(2).sum(),
    "norm_p1": lambda m, x: x.norm(p=1, dim=-1).sum(),
    "norm_p2_zero_row": lambda m, x: x.norm(dim=-1).sum(),
    "norm_fro": lambda m, x: x.norm().sum(),
    "norm_inf_ties": lambda m, x: x.norm(p=float("inf"), dim=-1).sum(),
    "norm_p3": lambda m, x: x.norm(p=3, dim=1, keepdim=True).sum(),
    "vector_norm_1": lambda m, x: m.linalg.vector_norm(x, ord=1, dim=-1).sum(),
    "vector_norm_inf": lambda m, x: m.linalg.vector_norm(x, ord=float("inf"), dim=-1).sum(),
    "vector_norm_-inf": lambda m, x: m.linalg.vector_norm(x, ord=float("-inf"), dim=-1).sum(),
    "vector_norm_0.5": lambda m, x: m.linalg.vector_norm(x, ord=0.5, dim=-1).sum(),
    "vector_norm_-1": lambda m, x: m.linalg.vector_norm(x, ord=-1, dim=-1).sum(),
    "vector_norm_1.5_all": lambda m, x: m.linalg.vector_norm(x, ord=1.5),
    "matrix_norm_1": lambda m, x: m.linalg.matrix_norm(x, ord=1),
    "normalize_p1": lambda m, x: (m.nn.functional.normalize(x, p=1.0, dim=-1) * 3).sum(),
    "normalize_p2": lambda m, x: m.nn.functional.normalize(x, dim=-1).pow(3).sum(),
    "cdist_p1": lambda m, x: m.cdist(x, m.tensor(T), p=1.0).sum(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_torch(name):
    grads = []
    for lib in (torch, spx):
        x = lib.tensor(X, requires_grad=True)
        CASES[name](lib, x).backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)
