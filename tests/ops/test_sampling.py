"""spx's random sampling functions: shapes, dtypes, seeding, distributions, no gradient."""

import numpy as np
import pytest

import spx

torch = pytest.importorskip("torch")


def test_multinomial_with_replacement_frequencies():
    spx.manual_seed(0)
    p = spx.tensor([0.1, 0.0, 0.6, 0.3])
    draws = spx.multinomial(p, 20000, replacement=True)
    assert draws.shape == (20000,) and draws.dtype == spx.int32
    freq = np.bincount(draws.numpy(), minlength=4) / 20000
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=0.015)


def test_multinomial_unnormalized_rows():
    spx.manual_seed(1)
    w = spx.tensor([[1.0, 3.0], [5.0, 0.0]])
    draws = spx.multinomial(w, 4000, replacement=True)
    assert draws.shape == (2, 4000)
    assert abs(draws[0].float().mean().item() - 0.75) < 0.03
    assert (draws[1] == 0).all().item()


def test_multinomial_without_replacement():
    spx.manual_seed(2)
    p = spx.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 1.0, 1.0]])
    for _ in range(20):
        draws = spx.multinomial(p, 4).numpy()
        for row in draws:
            assert sorted(row.tolist()) == [0, 1, 2, 3]  # each category once
        assert draws[0, 3] == 1  # the zero-weight category comes last, as in torch
    # the first draw follows the probabilities
    firsts = np.array([spx.multinomial(p[0], 1).item() for _ in range(400)])
    assert abs((firsts == 2).mean() - 0.6) < 0.08


def test_multinomial_seeded_and_fresh():
    p = spx.ones(10)
    spx.manual_seed(7)
    a = spx.multinomial(p, 5).tolist()
    b = spx.multinomial(p, 5).tolist()
    spx.manual_seed(7)
    assert spx.multinomial(p, 5).tolist() == a
    assert a != b


MULTINOMIAL_ERRORS = [
    (lambda m: m.multinomial(m.ones(3), 4), "without replacement"),
    (lambda m: m.multinomial(m.ones(3), 0), "n_sample <= 0"),
    (lambda m: m.multinomial(m.ones(2, 2, 2), 1), "1 or 2 dim"),
    (lambda m: m.multinomial(m.tensor([-1.0, 2.0]), 1), "element < 0"),
]


@pytest.mark.parametrize("fn,match", MULTINOMIAL_ERRORS)
def test_multinomial_errors(fn, match):
    with pytest.raises(RuntimeError):
        fn(torch)
    with pytest.raises(RuntimeError, match=match):
        fn(spx)


def test_normal_overloads():
    spx.manual_seed(3)
    x = spx.normal(2.0, 3.0, size=(20000,))
    assert x.shape == (20000,) and x.dtype == spx.float32
    assert abs(x.mean().item() - 2.0) < 0.1 and abs(x.std().item() - 3.0) < 0.1
    m = spx.normal(spx.tensor([0.0, 100.0]), 1.0)
    assert m.shape == (2,) and abs(m[1].item() - 100) < 6
    s = spx.normal(0.0, spx.tensor([0.0, 0.0, 1.0]))
    assert s.shape == (3,) and s[:2].tolist() == [0.0, 0.0]
    b = spx.normal(spx.zeros(2, 1), spx.ones(3))
    assert b.shape == (2, 3)
    with pytest.raises(TypeError, match="size="):
        spx.normal(0.0, 1.0)
    with pytest.raises(RuntimeError, match="std >= 0"):
        spx.normal(0.0, -1.0, size=(2,))


def test_bernoulli():
    spx.manual_seed(4)
    p = spx.full((20000,), 0.3)
    d = spx.bernoulli(p)
    assert d.dtype == spx.float32 and set(np.unique(d.numpy())) <= {0.0, 1.0}
    assert abs(d.mean().item() - 0.3) < 0.02
    assert abs(spx.bernoulli(spx.zeros(20000), p=0.8).mean().item() - 0.8) < 0.02
    assert spx.bernoulli(spx.ones(5)).tolist() == [1.0] * 5
    assert p.bernoulli().shape == (20000,)


def test_poisson():
    spx.manual_seed(5)
    d = spx.poisson(spx.full((20000,), 4.0))
    assert d.dtype == spx.float32 and abs(d.mean().item() - 4.0) < 0.1


def test_samples_carry_zero_gradient_like_torch():
    for lib in (torch, spx):
        mean = lib.zeros(3, requires_grad=True)
        prob = lib.full((3,), 0.5, requires_grad=True)
        (lib.normal(mean, 1.0).sum() + lib.bernoulli(prob).sum()).backward()
        assert mean.grad.tolist() == [0.0] * 3 and prob.grad.tolist() == [0.0] * 3
