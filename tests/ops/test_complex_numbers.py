"""spx.complex, spx.polar, spx.view_as_complex, spx.view_as_real and Tensor.cfloat/cdouble
against torch: values, dtypes, shapes, gradients, errors, and LLaMA's rotary embeddings
(``precompute_freqs_cis`` + ``apply_rotary_emb`` as in Meta's ``model.py``) eagerly and inside
spx.compile."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import spx
from tests._torch_utils import assert_params_match, copy_torch_weights
from tests.tensor._parity import assert_same, check, check_grad, data, to_spx, to_torch

torch = pytest.importorskip("torch")

X = (3, 4)
PAIRS = (2, 3, 2)  # (*, 2): pairs view_as_complex reads
POS = data(X, 1, "pos")
INT32 = np.arange(6, dtype=np.int32).reshape(3, 2)  # int32 on both sides: the names agree


def _as_complex(m, a, b):
    """A complex tensor built without the functions under test (no shared bug can hide)."""
    return a.to(m.complex64) + b.to(m.complex64) * 1j


# -- values, dtypes, shapes ------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [(X, X), ((3, 1), (1, 4)), ((), X), ((0, 2), (0, 2))], ids=str)
def test_complex(shapes):
    check(lambda m, a, b: m.complex(a, b), *shapes)
    check(lambda m, a, b: m.complex(real=a, imag=b), *shapes)


@pytest.mark.parametrize("shapes", [(X, X), ((3, 1), (1, 4)), (X, ())], ids=str)
def test_polar(shapes):
    check(lambda m, r, th: m.polar(r, th), *shapes, rtol=1e-5, atol=1e-6)
    check(lambda m, r, th: m.polar(abs=r, angle=th * 10), *shapes, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(3, 2), PAIRS, (2,), (2, 1, 3, 2)], ids=str)
def test_view_as_complex(shape):
    check(lambda m, x: m.view_as_complex(x), shape)


def test_view_as_complex_of_an_empty_tensor():
    # m.zeros, not data from numpy: torch gives an empty tensor from numpy strides (0, 0).
    check(lambda m: m.view_as_complex(m.zeros(0, 3, 2)))


def test_view_as_complex_of_views_torch_accepts():
    base = data((4, 5, 4))
    check(lambda m, x: m.view_as_complex(x.reshape(4, 5, 2, 2)), base)  # a view of x
    check(lambda m, x: m.view_as_complex(x[1:, ::2, 2:]), base)  # even strides
    check(lambda m, x: m.view_as_complex(x[:1, :1, :2]), base)  # size-1 dims: any stride
    check(lambda m, x: m.view_as_complex(x[:, :1, :2].expand(4, 3, 2)), base)  # stride 0
    check(lambda m, x: m.view_as_complex(x.transpose(0, 1)[..., :2]), base)


@pytest.mark.parametrize("shape", [X, (), (0,), (2, 1, 3)], ids=str)
def test_view_as_real(shape):
    check(lambda m, a, b: m.view_as_real(_as_complex(m, a, b)), shape, shape)


def test_round_trips():
    check(lambda m, x: m.view_as_real(m.view_as_complex(x)), PAIRS)
    check(lambda m, a, b: m.view_as_complex(m.view_as_real(m.complex(a, b))), X, X)
    check(lambda m, r, th: m.polar(m.complex(r, th).abs(), m.complex(r, th).angle()), POS, X)


def test_special_values_keep_torchs_parts():
    inf, nan = float("inf"), float("nan")
    re = np.array([inf, -inf, nan, 0.0, 1.0], np.float32)
    im = np.array([0.0, nan, 1.0, inf, -0.0], np.float32)
    # Compared part by part: real + 1j * imag would turn 0 * inf into nan parts.
    check(lambda m, a, b: m.view_as_real(m.complex(a, b)), re, im)
    check(lambda m, a, b: m.view_as_real(m.polar(a, b)), np.abs(re), im)


def test_complex_arithmetic_after_the_functions():
    # What rotary embeddings and spectral code do with the results.
    check(lambda m, a, b: m.view_as_real(m.complex(a, b) * m.polar(b.abs(), a)), X, X)
    check(lambda m, a, b: (m.complex(a, b).conj() * m.complex(b, a)).imag, X, X)
    check(lambda m, a, b: m.complex(a, b).abs(), X, X)
    check(lambda m, a, b: m.complex(a, b).real, X, X)


def test_cfloat_and_cdouble():
    check(lambda m, x: x.cfloat(), X)
    check(lambda m, x: x.int().cfloat(), X)
    check(lambda m, a, b: _as_complex(m, a, b).cfloat(), X, X)
    # cdouble is complex128 in torch; JAX without x64 computes it as complex64, as spx's
    # double() is float32.
    x = data(X)
    got, want = spx.tensor(x).cdouble(), torch.tensor(x).cdouble()
    assert want.dtype == torch.complex128 and got.dtype == spx.complex64
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_results_are_views_sharing_the_inputs_values_as_torchs():
    results = []
    for lib in (spx, torch):
        x = lib.tensor(data(PAIRS))
        z = lib.view_as_complex(x)
        z[0, 0] = 5.0 + 5.0j  # reaches x
        pairs = lib.view_as_real(z)
        pairs[0, 1] = 0.0  # reaches z and x
        x[1].mul_(2)  # reaches z and pairs
        results.append([np.asarray(t.tolist()) for t in (x, z, pairs)])
    for got, want in zip(*results, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


# -- gradients -------------------------------------------------------------------------------
GRADS = {
    "complex": lambda m, a, b: m.view_as_real(m.complex(a, b) * m.complex(b, a)),
    "complex_abs_angle": lambda m, a, b: (m.complex(a, b).abs(), m.complex(a, b).angle()),
    "complex_broadcast": lambda m, a, b: m.view_as_real(m.complex(a, b[:1]) ** 2),
    "polar": lambda m, a, b: m.view_as_real(m.polar(a, b)),
    "polar_times": lambda m, a, b: (m.polar(a, b) * m.complex(b, a)).imag,
    "view_as_complex": lambda m, a, b: m.view_as_real(m.view_as_complex(a.reshape(3, 2, 2)) ** 3),
    "view_as_complex_abs": lambda m, a, b: m.view_as_complex(a.reshape(3, 2, 2)).abs(),
    "view_as_real": lambda m, a, b: m.view_as_real(_as_complex(m, a, b).exp()),
    "cfloat": lambda m, a, b: m.view_as_real(a.cfloat() * _as_complex(m, b, a)),
}


@pytest.mark.parametrize("fn", list(GRADS.values()), ids=list(GRADS))
def test_real_gradients_through_complex_intermediates(fn):
    check_grad(fn, X, X, rtol=1e-5, atol=1e-5)


def _weighted_loss(m, outs, seed=100):
    outs = outs if isinstance(outs, tuple) else (outs,)
    convert = to_spx if m is spx else to_torch
    return sum((o * convert(data(tuple(o.shape), seed + i))).sum() for i, o in enumerate(outs))


@pytest.mark.parametrize("fn", list(GRADS.values()), ids=list(GRADS))
def test_real_gradients_inside_spx_compile(fn):
    @spx.compile
    def step(a, b):
        loss = _weighted_loss(spx, fn(spx, a, b))
        loss.backward()
        return loss

    a, b = spx.tensor(data(X), requires_grad=True), spx.tensor(data(X, 1), requires_grad=True)
    ta, tb = torch.tensor(data(X), requires_grad=True), torch.tensor(data(X, 1), requires_grad=True)
    _weighted_loss(torch, fn(torch, ta, tb)).backward()
    step(a, b)
    assert_same(a.grad, ta.grad, rtol=1e-5, atol=1e-5, path="a.grad")
    assert_same(b.grad, tb.grad, rtol=1e-5, atol=1e-5, path="b.grad")


def test_polar_gradients_at_zero_and_negative_abs_are_torchs():
    # torch differentiates abs as sgn(result): 0 where abs is 0, sign-flipped where it is
    # negative (outside polar's documented domain, but what a torch script gets).
    r = np.array([[1.5, 0.0, -2.0], [0.0, -0.5, 3.0]], np.float32)
    check_grad(lambda m, r, th: m.view_as_real(m.polar(r, th)), r, (2, 3))


def test_polar_second_derivatives_are_torchs():
    r = np.array([1.5, 0.0, -2.0, 0.7], np.float32)
    th, w = data((4,), 1), data((4, 2), 2)
    got = {}
    for m, convert in ((spx, to_spx), (torch, to_torch)):
        a, b = convert(r, True), convert(th, True)
        loss = (m.view_as_real(m.polar(a, b)) * convert(w)).sum()
        ga, gb = m.autograd.grad(loss, (a, b), create_graph=True)
        (ga * convert(th) + gb.square() * convert(r)).sum().backward()
        got[m] = (ga, gb, a.grad, b.grad)
    assert_same(got[spx], got[torch], rtol=1e-5, atol=1e-6)


def test_complex_leaf_gradients_follow_torchs_convention():
    # torch's .grad of a complex leaf is the conjugate of JAX's: spx gives torch's.
    a, b, w = data(X), data(X, 1), data((*X, 2), 2)
    grads = {}
    for m, convert in ((spx, to_spx), (torch, to_torch)):
        z = _as_complex(m, convert(a), convert(b)).detach().requires_grad_()
        pairs = m.view_as_real(z * z.conj().exp())
        (pairs * convert(w)).sum().backward()
        grads[m] = z.grad
    assert_same(grads[spx], grads[torch], rtol=1e-5, atol=1e-5)


def test_view_as_complex_of_two_real_leaves_gradients():
    # loss = view_as_real(view_as_complex(x) * c).sum() with x real: torch's real gradient.
    x, c = data(PAIRS), data(PAIRS, 3)
    check_grad(lambda m, x, c: m.view_as_real(m.view_as_complex(x) * m.view_as_complex(c)), x, c)


# -- errors ----------------------------------------------------------------------------------
def _torch_message(fn, *args) -> str:
    with pytest.raises(Exception) as caught:
        fn(torch, *[to_torch(a) for a in args])
    return str(caught.value)


def _same_error(fn, *args, error=RuntimeError):
    """spx raises ``error`` with exactly torch's message."""
    message = _torch_message(fn, *args)
    with pytest.raises(error) as caught:
        fn(spx, *[to_spx(a) for a in args])
    assert str(caught.value) == message


F32 = data((3, 2))
F16 = F32.astype(np.float16)

ERRORS = {
    "complex_ints": (lambda m, a, b: m.complex(a, b), INT32, INT32),
    "complex_int_float": (lambda m, a, b: m.complex(a, b), INT32, F32),
    "complex_bool": (lambda m, a, b: m.complex(a, b), F32 > 0, F32 > 0),
    "complex_bf16": (lambda m, a, b: m.complex(a, b.bfloat16()), F32, F32),
    "complex_complex": (lambda m, a, b: m.complex(a.cfloat(), b.cfloat()), F32, F32),
    "complex_mixed_float": (lambda m, a, b: m.complex(a, b), F32, F16),
    "complex_mixed_half": (lambda m, a, b: m.complex(a, b), F16, F32),
    "complex_shapes": (lambda m, a, b: m.complex(a, b), F32, data((4,))),
    "polar_ints": (lambda m, a, b: m.polar(a, b), F32, INT32),
    "polar_mixed": (lambda m, a, b: m.polar(a, b), F32, F16),
    "polar_shapes": (lambda m, a, b: m.polar(a, b), data((2, 3)), data((3, 2))),
    "vac_last_dim": (lambda m, x: m.view_as_complex(x), data((3, 3))),
    "vac_0d": (lambda m, x: m.view_as_complex(x), np.float32(1.0)),
    "vac_int": (lambda m, x: m.view_as_complex(x), INT32),
    "vac_bool": (lambda m, x: m.view_as_complex(x), F32 > 0),
    "vac_bf16": (lambda m, x: m.view_as_complex(x.bfloat16()), F32),
    "vac_complex": (lambda m, x: m.view_as_complex(x.cfloat()), F32),
    "vac_transposed": (lambda m, x: m.view_as_complex(x.t()), data((2, 3))),
    "vac_odd_stride": (lambda m, x: m.view_as_complex(x[:, :2]), data((3, 3))),
    "vac_expanded_pair": (lambda m, x: m.view_as_complex(x[:, :1].expand(3, 2)), F32),
    "var_float": (lambda m, x: m.view_as_real(x), F32),
    "var_int": (lambda m, x: m.view_as_real(x), INT32),
}


# torch warns as it allocates the complex32 result its mixed-dtype check then refuses.
@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("case", list(ERRORS.values()), ids=list(ERRORS))
def test_errors_have_torchs_messages(case):
    _same_error(*case)


def test_non_tensor_arguments_are_type_errors():
    for fn in (lambda m: m.view_as_complex([1.0, 2.0]), lambda m: m.view_as_real([1.0])):
        with pytest.raises(TypeError):
            fn(torch)
        with pytest.raises(TypeError, match="must be a Tensor"):
            fn(spx)
    with pytest.raises(TypeError, match="'imag' must be a Tensor"):
        spx.complex(spx.ones(2), [1.0, 2.0])
    with pytest.raises(TypeError):
        spx.polar(spx.ones(2))  # torch: missing "angle" too


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, x: m.view_as_complex(x),
        lambda m, x: m.complex(x, x),
        lambda m, x: m.polar(x, x),
    ],
    ids=["view_as_complex", "complex", "polar"],
)
def test_float16_is_refused_with_the_fix(fn):
    # torch gives complex32 (ComplexHalf); JAX has no complex type narrower than complex64.
    with pytest.raises(RuntimeError, match=r"complex32 .*Cast to float32 first: spx\.\w+\("):
        fn(spx, spx.tensor(F16))


# -- LLaMA's rotary embeddings, ported by renaming -------------------------------------------
# Meta's llama/model.py, verbatim but for the rename (and ``tuple`` for typing's ``Tuple``).
def _llama_torch():
    def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
        freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
        t = torch.arange(end, device=freqs.device)  # type: ignore
        freqs = torch.outer(t, freqs).float()  # type: ignore
        freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # complex64
        return freqs_cis

    def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor):
        ndim = x.ndim
        assert 0 <= 1 < ndim
        assert freqs_cis.shape == (x.shape[1], x.shape[-1])
        shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
        return freqs_cis.view(*shape)

    def apply_rotary_emb(
        xq: torch.Tensor,
        xk: torch.Tensor,
        freqs_cis: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
        xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
        xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
        return xq_out.type_as(xq), xk_out.type_as(xk)

    return precompute_freqs_cis, apply_rotary_emb


def _llama_spx():
    def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
        freqs = 1.0 / (theta ** (spx.arange(0, dim, 2)[: (dim // 2)].float() / dim))
        t = spx.arange(end, device=freqs.device)  # type: ignore
        freqs = spx.outer(t, freqs).float()  # type: ignore
        freqs_cis = spx.polar(spx.ones_like(freqs), freqs)  # complex64
        return freqs_cis

    def reshape_for_broadcast(freqs_cis: spx.Tensor, x: spx.Tensor):
        ndim = x.ndim
        assert 0 <= 1 < ndim
        assert freqs_cis.shape == (x.shape[1], x.shape[-1])
        shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
        return freqs_cis.view(*shape)

    def apply_rotary_emb(
        xq: spx.Tensor,
        xk: spx.Tensor,
        freqs_cis: spx.Tensor,
    ) -> tuple[spx.Tensor, spx.Tensor]:
        xq_ = spx.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = spx.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
        xq_out = spx.view_as_real(xq_ * freqs_cis).flatten(3)
        xk_out = spx.view_as_real(xk_ * freqs_cis).flatten(3)
        return xq_out.type_as(xq), xk_out.type_as(xk)

    return precompute_freqs_cis, apply_rotary_emb


LLAMA = {torch: _llama_torch(), spx: _llama_spx()}
HEAD_DIM, MAX_SEQ, START = 16, 32, 5
QK = (2, 6, 3, HEAD_DIM)  # (bsz, seqlen, n_local_heads, head_dim), as llama's Attention
WEIGHTS = data(QK, 50), data(QK, 51)  # so the gradients are not all ones


def test_the_spx_copy_is_the_torch_copy_renamed():
    assert inspect.getsource(_llama_torch).replace("torch", "spx") == inspect.getsource(_llama_spx)


def test_precompute_freqs_cis_matches_torch():
    got = LLAMA[spx][0](HEAD_DIM, MAX_SEQ * 2)
    want = LLAMA[torch][0](HEAD_DIM, MAX_SEQ * 2)
    assert_same(got, want, rtol=1e-5, atol=2e-5)  # angles up to 63 rad: float32 sin/cos


def _rotary_loss(m, xq, xk, freqs_cis):
    xq_out, xk_out = LLAMA[m][1](xq, xk, freqs_cis)
    w = [to_spx(a) if m is spx else to_torch(a) for a in WEIGHTS]
    loss = (xq_out.float() * w[0]).sum() + (xk_out.float() * w[1]).sum().square() / 100
    return loss, xq_out, xk_out


def _torch_reference(q, k, dtype):
    xq = torch.tensor(q).to(dtype).requires_grad_()
    xk = torch.tensor(k).to(dtype).requires_grad_()
    freqs_cis = LLAMA[torch][0](HEAD_DIM, MAX_SEQ * 2)[START : START + QK[1]]
    loss, xq_out, xk_out = _rotary_loss(torch, xq, xk, freqs_cis)
    loss.backward()
    return loss, xq_out, xk_out, xq.grad, xk.grad


DTYPES = {"float32": (1e-5, 1e-5), "bfloat16": (2e-2, 2e-2)}


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_apply_rotary_emb_and_its_gradients_match_torch(dtype):
    rtol, atol = DTYPES[dtype]
    q, k = data(QK, 1), data(QK, 2)
    want = _torch_reference(q, k, getattr(torch, dtype))
    xq = spx.tensor(q).to(getattr(spx, dtype)).requires_grad_()
    xk = spx.tensor(k).to(getattr(spx, dtype)).requires_grad_()
    freqs_cis = LLAMA[spx][0](HEAD_DIM, MAX_SEQ * 2)[START : START + QK[1]]
    loss, xq_out, xk_out = _rotary_loss(spx, xq, xk, freqs_cis)
    loss.backward()
    got = (loss, xq_out, xk_out, xq.grad, xk.grad)
    for name, g, w in zip(("loss", "xq_out", "xk_out", "xq.grad", "xk.grad"), got, want,
                          strict=True):  # fmt: skip
        assert_same(g, w, rtol=rtol, atol=atol * 10 if name == "loss" else atol, path=name)


def test_apply_rotary_emb_inside_spx_compile_matches_torch():
    @spx.compile
    def step(xq, xk, freqs_cis):
        loss, xq_out, xk_out = _rotary_loss(spx, xq, xk, freqs_cis)
        loss.backward()
        return loss, xq_out, xk_out

    freqs_cis = LLAMA[spx][0](HEAD_DIM, MAX_SEQ * 2)[START : START + QK[1]]
    xq = spx.tensor(data(QK, 1), requires_grad=True)
    xk = spx.tensor(data(QK, 2), requires_grad=True)
    for _ in range(3):  # .grad accumulates, as torch's
        loss, xq_out, xk_out = step(xq, xk, freqs_cis)
    want = _torch_reference(data(QK, 1), data(QK, 2), torch.float32)
    for g, w in zip((loss, xq_out, xk_out), want[:3], strict=True):
        assert_same(g, w, rtol=1e-5, atol=1e-4)
    assert_same(xq.grad, want[3] * 3, rtol=1e-5, atol=1e-5, path="xq.grad")
    assert_same(xk.grad, want[4] * 3, rtol=1e-5, atol=1e-5, path="xk.grad")
    # One program without .grad (the first call), one that accumulates into it: no more.
    assert step.trace_count == 2


def _attention_lib(m):
    """A projection + rotary embedding + attention score layer over ``m`` (torch or spx)."""
    precompute_freqs_cis, apply_rotary_emb = LLAMA[m]
    bsz, seqlen, n_heads, head_dim = QK

    class Rotary(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.wq = m.nn.Linear(8, n_heads * head_dim, bias=False)
            self.wk = m.nn.Linear(8, n_heads * head_dim, bias=False)
            self.freqs_cis = precompute_freqs_cis(head_dim, MAX_SEQ * 2)

        def forward(self, x):
            xq = self.wq(x).view(bsz, seqlen, n_heads, head_dim)
            xk = self.wk(x).view(bsz, seqlen, n_heads, head_dim)
            xq, xk = apply_rotary_emb(xq, xk, self.freqs_cis[START : START + seqlen])
            scores = m.matmul(xq.transpose(1, 2), xk.transpose(1, 2).transpose(2, 3))
            return scores.softmax(-1).square().mean()

    return Rotary


def test_training_a_rotary_layer_inside_spx_compile_matches_torch():
    torch.manual_seed(0)
    t_model, s_model = _attention_lib(torch)(), _attention_lib(spx)()
    copy_torch_weights(t_model, s_model)
    initial = t_model.wq.weight.detach().numpy().copy()
    t_opt = torch.optim.SGD(t_model.parameters(), lr=5.0)
    s_opt = spx.optim.SGD(s_model.parameters(), lr=5.0)

    @spx.compile
    def step(model, opt, x):
        opt.zero_grad()
        loss = model(x)
        loss.backward()
        opt.step()
        return loss

    for i in range(3):
        x = data((QK[0], QK[1], 8), 10 + i)
        t_opt.zero_grad()
        t_loss = t_model(torch.tensor(x))
        t_loss.backward()
        t_opt.step()
        s_loss = step(s_model, s_opt, spx.tensor(x))
        np.testing.assert_allclose(float(s_loss), t_loss.item(), rtol=1e-5)
    assert_params_match(t_model, s_model, rtol=1e-4, atol=1e-6)
    assert not np.allclose(s_model.wq.weight.numpy(force=True), initial)  # it trained


def test_complex_dtype_names_as_torch():
    # torch.cfloat is torch.complex64 and torch.cdouble torch.complex128; without x64 JAX
    # creates the latter as complex64, as spx.double tensors are float32.
    assert spx.cfloat is spx.complex64 and torch.cfloat is torch.complex64
    assert spx.cdouble is spx.complex128 and torch.cdouble is torch.complex128
    assert spx.ones(2, dtype=spx.cfloat).dtype is spx.complex64
    assert spx.ones(2).to(spx.cdouble).dtype is spx.complex64


@pytest.mark.parametrize("fill", [1 + 2j, 3, 2.5, True, np.int64(3), np.float64(0.5)])
def test_full_infers_torchs_dtype_from_the_fill_value(fill):
    # A complex fill lost its imaginary part (float32 [1., 1.]) before.
    got, want = spx.full((2,), fill), torch.full((2,), fill)
    np.testing.assert_array_equal(got.numpy(), want.numpy().astype(got.numpy().dtype))
    names = {"int64": "int32"}  # spx's ints are int32 without x64
    want_dtype = str(want.dtype).replace("torch.", "")
    assert str(got.dtype) == names.get(want_dtype, want_dtype)
