"""spx.special's gamma family (gammaln, digamma/psi, polygamma, multigammaln, gammainc,
gammaincc, zeta) against torch.special: values at poles and infinities, gradients, and the
derivatives torch does not implement raising from backward()."""

import jax
import numpy as np
import pytest

import spx
from tests.special._compare import DTYPES, EDGES, compare, torch


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["gammaln", "digamma", "psi"])
def test_unary_values_and_gradients_match_torch(name, dtype):
    compare(lambda m, t: getattr(m.special, name)(t), [EDGES], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
def test_polygamma_matches_torch_at_poles_and_infinities(n, dtype):
    x = np.array([0.5, -1.5, 0.0, -2.0, -1.0, 3.0, 1e-3, 20.0, -30.0, np.inf, -np.inf, np.nan])
    if n >= 6 and dtype == np.float32:
        # torch sums float32 zeta series in float64; between negative poles high orders
        # cancel to a few float32 digits.
        x = x[x != -1.5]
    compare(lambda m, t: m.special.polygamma(n, t), [x], dtype, scale=2.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [2, 3, 4])
def test_polygamma_between_the_negative_poles_matches_torch(n, dtype):
    # XLA's Hurwitz zeta is wrong at negative q (polygamma(2, -9.5) came out 1e14, and inf
    # near -10.03); spx reflects these to 1 - x.
    x = np.array([-0.25, -0.5, -1.5, -2.5, -5.5, -9.5, -10.03, -10.5, -17.3, -23.9976, -0.001])
    compare(lambda m, t: m.special.polygamma(n, t), [x], dtype)


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma_keeps_half_dtypes(name):
    for dtype in ("float16", "bfloat16"):
        x = spx.ones(2, dtype=getattr(spx, dtype))
        t = torch.ones(2, dtype=getattr(torch, dtype))
        a, b = getattr(spx.special, name)(x, x), getattr(torch.special, name)(t, t)
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1] == dtype


def test_polygamma_refuses_a_negative_order():
    with pytest.raises(RuntimeError):
        torch.special.polygamma(-1, torch.tensor([1.0]))
    with pytest.raises(RuntimeError, match="negative n"):
        spx.special.polygamma(-1, spx.tensor([1.0]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [1, 2, 3, 5])
def test_multigammaln_matches_torch(p, dtype):
    x = np.array([0.2, 1.0, 1.5, 2.0, 3.7, 10.0, 100.0])
    compare(lambda m, t: m.special.multigammaln(t, p), [x], dtype)


def test_multigammaln_refuses_p_below_1():
    with pytest.raises(RuntimeError):
        torch.special.multigammaln(torch.tensor([2.0]), 0)
    with pytest.raises(RuntimeError, match="p has to be"):
        spx.special.multigammaln(spx.tensor([2.0]), 0)


ZETA_X = np.array([1.0, 1.5, 2.0, 0.5, 3.0, 2.0, 3.0, 4.0, 2.0, 2.5, 5.0, 3.0, np.nan])
ZETA_Q = np.array([1.0, 2.0, 0.0, 1.0, -1.5, -2.0, 0.0, -0.5, 1e-3, 100.0, 3.0, -3.0, 1.0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_zeta_values_and_gradient_in_q_match_torch(dtype):
    compare(lambda m, x, q: m.special.zeta(x, q), [ZETA_X, ZETA_Q], dtype, grad=(False, True))


@pytest.mark.parametrize("name", ["zeta", "gammainc", "gammaincc"])
def test_gradient_in_input_raises_as_torch(name):
    t = torch.tensor([2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="not implemented"):
        getattr(torch.special, name)(t, torch.tensor([1.5, 2.0])).sum().backward()
    s = spx.tensor([2.0, 3.0], requires_grad=True)
    out = getattr(spx.special, name)(s, spx.tensor([1.5, 2.0]))
    with pytest.raises(RuntimeError, match=f"special.{name}.*'input' is not implemented"):
        out.sum().backward()
    # spx is usable afterwards, and the value itself was right.
    np.testing.assert_allclose(
        out.detach().numpy(),
        getattr(torch.special, name)(t, torch.tensor([1.5, 2.0])).detach(),
        rtol=1e-5,
    )
    (s * 2).sum().backward()
    np.testing.assert_array_equal(s.grad.numpy(), [2.0, 2.0])


A = np.array([0.5, 1.0, 0.0, 2.0, -1.0, 1.0, np.inf, 1.0, 0.0, 3.0, 50.0, np.inf])
X = np.array([0.5, 0.0, 1.0, np.inf, 1.0, -1.0, 1.0, np.nan, 0.0, 2.5, 40.0, np.inf])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma_values_and_gradient_in_x_match_torch(name, dtype):
    compare(lambda m, a, x: getattr(m.special, name)(a, x), [A, X], dtype, grad=(False, True))


@pytest.mark.parametrize("name", ["zeta", "xlogy", "xlog1py"])
def test_a_python_number_on_either_side(name):
    for args in ((2.0, [1.5, 3.0]), ([2.0, 3.0], 1.5)):
        t_args = [torch.tensor(a) if isinstance(a, list) else a for a in args]
        s_args = [spx.tensor(a) if isinstance(a, list) else a for a in args]
        want = getattr(torch.special, name)(*t_args)
        got = getattr(spx.special, name)(*s_args)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_integer_inputs_give_float32():
    for name in ("gammaln", "digamma"):
        assert getattr(spx.special, name)(spx.tensor([1, 2])).dtype == spx.float32
    assert spx.special.polygamma(1, spx.tensor([1, 2])).dtype == spx.float32
    assert spx.special.zeta(spx.tensor([2, 3]), spx.tensor([1, 2])).dtype == spx.float32
    assert torch.special.zeta(torch.tensor([2, 3]), torch.tensor([1, 2])).dtype == torch.float32


def test_zeta_at_negative_q_matches_torch():
    # XLA's Hurwitz zeta is wrong below q ~ -1 (zeta(3, -9.5) came out -7e13; torch 0.005).
    x = [3.0, 3.0, 2.0, 4.0, 5.0, 6.0, 3.0, 2.5, 3.0]
    q = [-9.5, -0.5, -2.25, -1.1, -20.3, -0.3, -3.0, -1.5, 4.0]
    want = torch.special.zeta(torch.tensor(x), torch.tensor(q)).numpy()
    got = spx.special.zeta(spx.tensor(x), spx.tensor(q)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, equal_nan=True)
    qt, qs = torch.tensor(q, requires_grad=True), spx.tensor(q, requires_grad=True)
    finite = [0, 1, 2, 3, 4, 5, 8]
    torch.special.zeta(torch.tensor(x), qt)[finite].sum().backward()
    spx.special.zeta(spx.tensor(x), qs)[finite].sum().backward()
    np.testing.assert_allclose(qs.grad.numpy()[finite], qt.grad.numpy()[finite], rtol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_gammainc_for_large_a_near_x_matches_torch(name, dtype):
    # JAX's value went wrong there (gammainc(1e7, 1e7) was 3521, a probability; torch 0.5):
    # Temme's expansion, as Cephes (torch) uses, for a > 20 and x within 30% of a.
    a = np.repeat([21.0, 50.0, 200.0, 1e3, 3e3, 1e5, 1e7], 6)
    x = a * np.tile([0.71, 0.95, 0.999, 1.0, 1.01, 1.29], 7)
    compare(lambda m, s, t: getattr(m.special, name)(s, t), [a, x], dtype, grad=False)
    # The slope in x against torch's float64 one: torch's own float32 slope is off by up to
    # 7% there (exp of a sum whose terms cancel), spx's takes Temme's variables.
    xt = torch.tensor(x.astype(dtype), dtype=torch.float64, requires_grad=True)
    getattr(torch.special, name)(
        torch.tensor(a.astype(dtype), dtype=torch.float64), xt
    ).sum().backward()
    with jax.enable_x64(dtype == np.float64):
        xs = spx.tensor(x.astype(dtype), requires_grad=True)
        getattr(spx.special, name)(spx.tensor(a.astype(dtype)), xs).sum().backward()
        np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=2e-5, atol=1e-30)
    huge = np.array([1e30, 1e30], dtype)  # no gradient there: its slope overflows
    compare(lambda m, s, t: getattr(m.special, name)(s, t), [huge, huge * [1.0, 1.1]], dtype, False)


def test_gamma_cdf_of_a_large_shape_is_a_probability():
    rate = spx.tensor(1.0)
    got = spx.distributions.Gamma(spx.tensor(1e7), rate).cdf(spx.tensor(1e7)).item()
    want = torch.distributions.Gamma(torch.tensor(1e7), torch.tensor(1.0)).cdf(torch.tensor(1e7))
    np.testing.assert_allclose(got, want.item(), atol=1e-5)


def test_zeta_of_a_huge_x_and_of_a_huge_negative_q_as_torch():
    # zeta(1e4, q) was NaN (torch sums the first terms), and a q below -2**24 never returned:
    # its float32 shift count stopped growing (torch: inf, a non-positive integer).
    x = [1e4, np.inf, 1e4, 1e4, 1e4, 2.0, 2.0, 3.0]
    q = [1.0, 1.0, 0.5, -0.5, 2.0, -3e7, -1e30, -2.0]
    want = torch.special.zeta(torch.tensor(x), torch.tensor(q)).numpy()
    got = spx.special.zeta(spx.tensor(x), spx.tensor(q)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)
