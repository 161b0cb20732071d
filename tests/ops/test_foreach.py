"""torch's ``_foreach_*`` list-wise operations, against torch 2.13 (values, in-place forms,
operand kinds, errors), and timm's EMA update written with them."""

from __future__ import annotations

import numpy as np
import pytest

import spx
from spx.ops import foreach

torch = pytest.importorskip("torch")

SHAPES = [(2, 3), (4,), ()]


def _lists(seed: int = 0, positive: bool = False):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(0.2, 0.9, s) if positive else rng.standard_normal(s) for s in SHAPES]
    arrays = [np.asarray(a, np.float32) for a in arrays]
    return [spx.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


def _close(ours, theirs):
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", foreach._UNARY)
def test_unary_operations_and_their_in_place_forms(op):
    s, t = _lists(positive=op in ("acos", "asin", "log", "log10", "log2", "rsqrt", "sqrt"))
    _close(getattr(spx, f"_foreach_{op}")(s), getattr(torch, f"_foreach_{op}")(t))
    assert getattr(spx, f"_foreach_{op}_")(s) is None
    getattr(torch, f"_foreach_{op}_")(t)
    _close(s, t)


OTHERS = {
    "number": lambda lib, ts: 0.7,
    "list of numbers": lambda lib, ts: [0.5, 1.5, -2.0],
    "0-d tensor": lambda lib, ts: lib.tensor(1.25),
    "list of tensors": lambda lib, ts: [x * 0.5 + 1 for x in ts],
}


@pytest.mark.parametrize("kind", sorted(OTHERS))
@pytest.mark.parametrize("op", sorted(foreach._BINARY))
def test_binary_operations_take_torchs_operand_kinds(op, kind):
    s, t = _lists(positive=op == "pow")
    theirs = getattr(torch, f"_foreach_{op}")(t, OTHERS[kind](torch, t))
    _close(getattr(spx, f"_foreach_{op}")(s, OTHERS[kind](spx, s)), theirs)
    getattr(torch, f"_foreach_{op}_")(t, OTHERS[kind](torch, t))
    getattr(spx, f"_foreach_{op}_")(s, OTHERS[kind](spx, s))
    _close(s, t)


def test_alpha_addcmul_addcdiv_lerp_norm_max_and_friends():
    s, t = _lists()
    s2, t2 = _lists(1, positive=True)
    _close(spx._foreach_add(s, s2, alpha=-3), torch._foreach_add(t, t2, alpha=-3))
    _close(spx._foreach_sub(s, s2, alpha=2), torch._foreach_sub(t, t2, alpha=2))
    for value in (0.5, [1.0, -2.0, 3.0]):
        _close(spx._foreach_addcmul(s, s2, s, value), torch._foreach_addcmul(t, t2, t, value))
        _close(spx._foreach_addcdiv(s, s, s2, value), torch._foreach_addcdiv(t, t, t2, value))
    _close(
        spx._foreach_addcmul(s, s2, s, spx.tensor([1.0, 2.0, 3.0])),
        torch._foreach_addcmul(t, t2, t, torch.tensor([1.0, 2.0, 3.0])),
    )
    for weight in (0.25, [0.1, 0.5, 0.9]):
        _close(spx._foreach_lerp(s, s2, weight), torch._foreach_lerp(t, t2, weight))
    for ord in (1, 2, float("inf")):
        _close(spx._foreach_norm(s, ord), torch._foreach_norm(t, ord))
    _close(spx._foreach_max(s), torch._foreach_max(t))
    _close(spx._foreach_clone(s), torch._foreach_clone(t))
    m = [spx.tensor(np.eye(2, dtype=np.float32) * 2)]
    _close(spx._foreach_mm(m, m), torch._foreach_mm([torch.eye(2) * 2], [torch.eye(2) * 2]))
    spx._foreach_addcmul_(s, s2, s, 0.5)
    torch._foreach_addcmul_(t, t2, t, 0.5)
    _close(s, t)
    spx._foreach_copy_(s, s2)
    torch._foreach_copy_(t, t2)
    _close(s, t)
    spx._foreach_zero_(s)
    assert all(float(x.abs().sum()) == 0 for x in s)


def test_timm_style_ema_update_matches_torch():
    rng = np.random.default_rng(3)
    weights = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    s_ema, t_ema = [spx.tensor(w) for w in weights], [torch.tensor(w) for w in weights]
    for step in range(3):
        new = [w + step + 1 for w in weights]
        s_new, t_new = [spx.tensor(w) for w in new], [torch.tensor(w) for w in new]
        with spx.no_grad():
            spx._foreach_lerp_(s_ema, s_new, 1 - 0.9)
        with torch.no_grad():
            torch._foreach_lerp_(t_ema, t_new, 1 - 0.9)
        _close(s_ema, t_ema)
    spx._foreach_mul_(s_ema, 0.5)
    spx._foreach_add_(s_ema, s_new, alpha=0.5)
    torch._foreach_mul_(t_ema, 0.5)
    torch._foreach_add_(t_ema, t_new, alpha=0.5)
    _close(s_ema, t_ema)


def test_torchs_errors():
    s, t = _lists()
    cases = [
        (lambda lib, x: lib._foreach_add(x, x[:1]), "same number of tensors"),
        (lambda lib, x: lib._foreach_mul(x, [1.0]), "same number of elements"),
        (lambda lib, x: lib._foreach_add([], 1), "at least one tensor"),
        (lambda lib, x: lib._foreach_mul(x, lib.ones(2)), "expected to be 0 dim"),
    ]
    for call, match in cases:
        with pytest.raises(RuntimeError, match=match):
            call(torch, t)
        with pytest.raises(RuntimeError, match=match):
            call(spx, s)
    with pytest.raises(TypeError):
        torch._foreach_sub(t, 1, alpha=2)
    with pytest.raises(TypeError, match="alpha= needs a list of Tensors"):
        spx._foreach_sub(s, 1, alpha=2)
    with pytest.raises(TypeError, match="list or tuple of Tensors"):
        spx._foreach_mul_(spx.ones(2), 2)


def test_maximum_and_minimum_in_place_refuse_a_float_result_in_int_tensors():
    for op in ("_foreach_maximum_", "_foreach_minimum_"):
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            getattr(torch, op)([torch.tensor([1, 5])], 2.5)
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            getattr(spx, op)([spx.tensor([1, 5])], 2.5)  # was truncated silently


def _exponents(lib):
    """Exponent lists of several dtypes (int, float, half, bool) and shapes."""
    return [
        lib.tensor([0, 1, 3, -1], dtype=lib.int32),
        lib.tensor([[0.5, -1.5], [2.0, 0.0]]),
        lib.tensor([1.0, 2.5], dtype=lib.float16),
        lib.tensor([True, False]),
        lib.tensor(3, dtype=lib.uint8),
    ]


def _same_results(ours, theirs):
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs, strict=True):
        # torch's int64 is spx's int32 (JAX without x64); every other dtype is torch's.
        want = "int32" if t.dtype == torch.int64 else str(t.dtype).removeprefix("torch.")
        assert str(o.dtype) == want
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-3 if want == "float16" else 1e-6)


def _torch_has_no_kernel(base, dtype: str) -> bool:
    """torch raises for these (see the errors test): leave them out of the value checks."""
    return (isinstance(base, bool) and dtype == "bool") or (
        isinstance(base, complex) and dtype == "float16"
    )


@pytest.mark.parametrize("base", [2, -2, 0, 2.0, 0.5, True, 300, 1.5j])
def test_pow_of_a_number_base_over_a_list_of_exponents(base):
    pairs = [
        (s, t)
        for s, t in zip(_exponents(spx), _exponents(torch), strict=True)
        if not _torch_has_no_kernel(base, str(s.dtype))
    ]
    ours = spx._foreach_pow(base, [s for s, _ in pairs])
    _same_results(ours, torch._foreach_pow(base, [t for _, t in pairs]))


def test_pow_base_as_a_numpy_scalar_or_a_0d_tensor_is_a_number():
    # Read as a Python number: it takes part in type promotion as a scalar, not as a tensor.
    for s_base, t_base in [
        (np.float32(2.5), np.float32(2.5)),
        (np.int64(3), np.int64(3)),
        (spx.tensor(2.5), torch.tensor(2.5)),
        (spx.tensor(2), torch.tensor(2)),
    ]:
        _same_results(
            spx._foreach_pow(s_base, _exponents(spx)), torch._foreach_pow(t_base, _exponents(torch))
        )


def test_pow_of_a_number_base_passes_gradients_to_the_exponents():
    xs = [np.array([1.0, 2.0], np.float32), np.array(-0.5, np.float32)]
    s = [spx.tensor(x, requires_grad=True) for x in xs]
    t = [torch.tensor(x, requires_grad=True) for x in xs]
    sum(r.sum() for r in spx._foreach_pow(3.0, s)).backward()
    sum(r.sum() for r in torch._foreach_pow(3.0, t)).backward()
    for a, b in zip(s, t, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6)


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_pow_of_a_number_base_raises_torchs_errors():
    cases = [
        (lambda lib: lib._foreach_pow(2, []), RuntimeError, "at least one tensor"),
        (lambda lib: lib._foreach_pow(True, [lib.tensor([True])]), NotImplementedError, "Bool"),
        (
            lambda lib: lib._foreach_pow(2j, [lib.tensor([1.0], dtype=lib.float16)]),
            NotImplementedError,
            "ComplexHalf",
        ),
        (lambda lib: lib._foreach_pow(2, [1.0]), TypeError, None),
        (lambda lib: lib._foreach_pow(2, lib.tensor([1.0])), TypeError, None),
        (lambda lib: lib._foreach_pow(2, [lib.ones(1)], alpha=2), TypeError, None),
        (
            lambda lib: lib._foreach_pow(lib.tensor(2.0, requires_grad=True), [lib.ones(1)]),
            TypeError,
            None,
        ),
        # No in-place form of the number-base pow, in torch or here.
        (lambda lib: lib._foreach_pow_(2.0, [lib.ones(1)]), TypeError, None),
    ]
    for call, error, match in cases:
        with pytest.raises(error, match=match):
            call(torch)
        with pytest.raises(error, match=match):
            call(spx)
    with pytest.raises(TypeError, match="no in-place form"):
        spx._foreach_pow_(2.0, [spx.ones(1)])


def test_pow_takes_torchs_keyword_names():
    s, t = _lists(positive=True)
    _close(spx._foreach_pow(s, exponent=2), torch._foreach_pow(t, exponent=2))
    _close(spx._foreach_pow(self=2.0, exponent=s), torch._foreach_pow(self=2.0, exponent=t))
    spx._foreach_pow_(s, exponent=0.5)
    torch._foreach_pow_(t, exponent=0.5)
    _close(s, t)
