"""Distribution parity against torch.distributions: one case, both libraries, same numbers.

A :class:`Case` builds the distribution with one function used for both libraries
(``lambda D, p: D.Normal(p["loc"], p["scale"])`` with ``D`` either ``torch.distributions`` or
``spx.distributions``), so the test also shows that torch code ports by renaming the module.
Parameters are float32 numpy arrays; each library gets leaf tensors that require grad, and
gradients come from ``.backward()`` on both sides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import spx
import spx.distributions as SD

torch = pytest.importorskip("torch")
TD = torch.distributions

RTOL, ATOL = 2e-5, 1e-6


def host(t: Any) -> np.ndarray:
    if isinstance(t, spx.Tensor):
        return t.numpy(force=True)
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return np.asarray(t)


def assert_close(actual: Any, expected: Any, rtol=RTOL, atol=ATOL, what: str = "") -> None:
    np.testing.assert_allclose(
        host(actual).astype(np.float64),
        host(expected).astype(np.float64),
        rtol=rtol,
        atol=atol,
        err_msg=what,
    )


def leaves(params: dict[str, Any], lib: str) -> dict[str, Any]:
    """Fresh leaf tensors (requiring grad if floating) of ``params`` for ``lib``."""
    out = {}
    for k, v in params.items():
        if not isinstance(v, np.ndarray):
            out[k] = v  # a Python number stays one (torch's scalar parameters)
            continue
        floating = np.issubdtype(v.dtype, np.floating)
        if lib == "torch":
            out[k] = torch.tensor(v, requires_grad=floating)
        else:
            out[k] = spx.tensor(v, requires_grad=floating)
    return out


def value(v: np.ndarray, lib: str) -> Any:
    return torch.tensor(v) if lib == "torch" else spx.tensor(v)


@dataclass
class Case:
    """One parameterization of one distribution, checked against torch.

    Args:
        id: test id.
        make: ``(D, params) -> distribution`` for ``D`` either library's module.
        params: name -> float32 array (leaves requiring grad) or Python number.
        values: points for ``log_prob`` (and ``cdf`` unless ``cdf_values`` is given).
        props: the properties compared (``mean``, ``variance``, ...).
        entropy: whether ``entropy()`` is compared.
        cdf: whether ``cdf`` is compared; ``icdf`` whether ``icdf`` is (on ``quantiles``).
        cdf_grad: whether the gradient of ``cdf`` is compared too.
        rtol: tolerance for values and gradients.
    """

    id: str
    make: Callable[[Any, dict[str, Any]], Any]
    params: dict[str, Any]
    values: np.ndarray
    props: tuple[str, ...] = ("mean", "variance", "stddev", "mode")
    entropy: bool = True
    cdf: bool = False
    icdf: bool = False
    cdf_values: np.ndarray | None = None
    quantiles: np.ndarray = field(
        default_factory=lambda: np.array([0.1, 0.25, 0.5, 0.9], np.float32)
    )
    cdf_grad: bool = True
    rtol: float = RTOL
    atol: float = ATOL
    sample_shapes: tuple[tuple[int, ...], ...] = ((), (5,), (2, 3))

    def pair(self) -> tuple[Any, dict, Any, dict]:
        tp, sp = leaves(self.params, "torch"), leaves(self.params, "spx")
        return self.make(TD, tp), tp, self.make(SD, sp), sp


def _grads(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v.grad for k, v in params.items() if hasattr(v, "grad") and v.requires_grad}


def assert_grads_match(tp: dict, sp: dict, rtol: float, atol: float, what: str) -> None:
    tg, sg = _grads(tp), _grads(sp)
    assert tg.keys() == sg.keys(), what
    for k in tg:
        if tg[k] is None:
            assert sg[k] is None or not host(sg[k]).any(), f"{what}: {k}"
            continue
        assert sg[k] is not None, f"{what}: no spx grad for {k}"
        assert_close(sg[k], tg[k], rtol, atol, f"{what}: d/d{k}")


def check_values(case: Case) -> None:
    """log_prob, entropy, properties, cdf/icdf, shapes: values equal to torch's."""
    td, _, sd, _ = case.pair()
    assert tuple(sd.batch_shape) == tuple(td.batch_shape)
    assert tuple(sd.event_shape) == tuple(td.event_shape)
    assert isinstance(sd.batch_shape, spx.Size)
    assert sd.has_rsample == td.has_rsample
    assert sd.has_enumerate_support == td.has_enumerate_support
    tol = {"rtol": case.rtol, "atol": case.atol}
    assert_close(sd.log_prob(value(case.values, "spx")), td.log_prob(value(case.values, "torch")),
                 what="log_prob", **tol)  # fmt: skip
    for name in case.props:
        got, want = getattr(sd, name), getattr(td, name)
        assert tuple(got.shape) == tuple(want.shape), name
        assert_close(got, want, what=name, **tol)
    if case.entropy:
        assert_close(sd.entropy(), td.entropy(), what="entropy", **tol)
        assert_close(sd.perplexity(), td.perplexity(), what="perplexity", **tol)
    if case.cdf:
        cv = case.values if case.cdf_values is None else case.cdf_values
        assert_close(sd.cdf(value(cv, "spx")), td.cdf(value(cv, "torch")), what="cdf", **tol)
    if case.icdf:
        q = case.quantiles.reshape((-1,) + (1,) * len(td.batch_shape))
        assert_close(sd.icdf(value(q, "spx")), td.icdf(value(q, "torch")), what="icdf", **tol)


def check_grads(case: Case) -> None:
    """Gradients of log_prob (and entropy, and the mean) with respect to every parameter."""
    if not any(isinstance(v, np.ndarray) and v.dtype.kind == "f" for v in case.params.values()):
        pytest.skip("Python-number parameters: nothing to differentiate")
    terms: list[tuple[str, Callable[[Any, str], Any]]] = [
        ("log_prob", lambda d, lib: d.log_prob(value(case.values, lib)).sum()),
    ]
    if case.entropy:
        terms.append(("entropy", lambda d, lib: d.entropy().sum()))
    if "mean" in case.props:
        terms.append(("mean", lambda d, lib: d.mean.sum()))
    if case.cdf and case.cdf_grad:
        cv = case.values if case.cdf_values is None else case.cdf_values
        terms.append(("cdf", lambda d, lib: d.cdf(value(cv, lib)).sum()))
    for what, loss in terms:
        td, tp, sd, sp = case.pair()
        tl, sl = loss(td, "torch"), loss(sd, "spx")
        if not tl.requires_grad:  # e.g. a Normal's entropy with a constant scale
            continue
        tl.backward()
        sl.backward()
        assert_grads_match(tp, sp, case.rtol, 10 * case.atol, f"{case.id} {what}")


def check_shapes(case: Case) -> None:
    """sample/rsample shapes for several sample_shape values, and expand()."""
    td, _, sd, _ = case.pair()
    for shape in case.sample_shapes:
        want = tuple(td.sample(shape).shape)
        got = sd.sample(shape)
        assert tuple(got.shape) == want, (shape, got.shape, want)
        assert not got.requires_grad
        if td.has_rsample:
            assert tuple(sd.rsample(shape).shape) == want
    batch = (4, *td.batch_shape)
    te, se = td.expand(batch), sd.expand(batch)
    assert type(se) is type(sd)
    assert tuple(se.batch_shape) == tuple(te.batch_shape)
    assert tuple(se.event_shape) == tuple(te.event_shape)
    assert tuple(se.sample((2,)).shape) == tuple(te.sample((2,)).shape)
    x = te.sample((3,))  # values of the expanded shape, in the support
    assert_close(se.log_prob(value(host(x), "spx")), te.log_prob(x), case.rtol, case.atol)
    if case.entropy:
        assert_close(se.entropy(), te.entropy(), case.rtol, case.atol, "expanded entropy")


def check_sample_moments(sample: Any, mean: Any, var: Any, n_se: float = 5.0) -> None:
    """The sample mean and variance along dim 0 within ``n_se`` standard errors of ``mean``
    and ``var`` (the errors estimated from the sample itself)."""
    x = host(sample).astype(np.float64)
    n = x.shape[0]
    m, v = x.mean(0), x.var(0)
    mean, var = host(mean).astype(np.float64), host(var).astype(np.float64)
    se_mean = np.sqrt(var / n)
    np.testing.assert_array_less(np.abs(m - mean), n_se * se_mean + 1e-7)
    fourth = ((x - m) ** 4).mean(0)
    se_var = np.sqrt(np.maximum(fourth - v**2, 0) / n)
    np.testing.assert_array_less(np.abs(v - var), n_se * se_var + 1e-7)
