"""CTC loss against torch: values and gradients for every target form, reduction and length
form, impossible alignments (inf / NaN / zero_infinity), the unbatched form, the module and the
errors torch raises."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx.nn.functional.ctc_loss import ctc_loss
from spx.nn.modules.ctc_loss import CTCLoss
from tests.nn._parity import assert_close, check_module, host

torch = pytest.importorskip("torch")

REDUCTIONS = ["none", "mean", "sum"]
RTOL, ATOL = 1e-5, 1e-5


def _case(time, batch, classes, max_len, seed, blank=0):
    """Logits, padded targets (no blank), target and input lengths (all possible alignments)."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((time, batch, classes)).astype(np.float32)
    labels = [c for c in range(classes) if c != blank]
    targets = rng.choice(labels, (batch, max_len)).astype(np.int64)
    if max_len > 1:
        targets[0, 1] = targets[0, 0]  # a repeated label needs a blank between: no skip
    target_lengths = rng.integers(0, max_len + 1, batch)
    target_lengths[0] = max_len
    # Room for every label and a blank between repeats: 2 * S + 1 frames always suffice.
    input_lengths = rng.integers(np.minimum(2 * target_lengths + 1, time), time + 1, batch)
    input_lengths[0] = time
    return logits, targets, input_lengths.astype(np.int64), target_lengths.astype(np.int64)


def _concat(targets, target_lengths):
    return np.concatenate([t[:n] for t, n in zip(targets, target_lengths, strict=True)])


def _both(logits, targets, input_lengths, target_lengths, *, lengths_as="tensor", leaf="logits",
          **kwargs):  # fmt: skip
    """The loss and the gradient of the leaf on both sides, after ``(loss * cot).sum()``."""
    t_leaf = torch.tensor(logits, requires_grad=True)
    s_leaf = spx.tensor(logits, requires_grad=True)
    t_lp = t_leaf.log_softmax(-1) if leaf == "logits" else t_leaf
    s_lp = s_leaf.log_softmax(-1) if leaf == "logits" else s_leaf
    if lengths_as == "tensor":
        t_len = (torch.tensor(input_lengths), torch.tensor(target_lengths))
        s_len = (spx.tensor(input_lengths), spx.tensor(target_lengths))
    else:
        seq = tuple if lengths_as == "tuple" else list
        t_len = s_len = (seq(map(int, input_lengths)), seq(map(int, target_lengths)))
    t_out = torch.nn.functional.ctc_loss(t_lp, torch.tensor(targets), *t_len, **kwargs)
    s_out = ctc_loss(s_lp, spx.tensor(targets), *s_len, **kwargs)
    cot = np.random.default_rng(7).standard_normal(tuple(t_out.shape)).astype(np.float32)
    (t_out * torch.tensor(cot)).sum().backward()
    (s_out * spx.tensor(cot)).sum().backward()
    assert tuple(s_out.shape) == tuple(t_out.shape)
    assert s_out.dtype == spx.float32
    return s_out, t_out, s_leaf.grad, t_leaf.grad


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("form", ["padded", "concatenated"])
@pytest.mark.parametrize(
    "shape", [(12, 3, 5, 4), (30, 4, 8, 9), (7, 1, 3, 3), (20, 5, 20, 1)], ids=str
)
def test_matches_torch(shape, form, reduction):
    logits, targets, il, tl = _case(*shape, seed=sum(shape))
    if form == "concatenated":
        targets = _concat(targets, tl)
    s_out, t_out, s_grad, t_grad = _both(logits, targets, il, tl, reduction=reduction)
    assert_close(s_out, t_out, RTOL, ATOL, "loss")
    assert_close(s_grad, t_grad, RTOL, ATOL, "gradient of the logits")


@pytest.mark.parametrize("lengths_as", ["tuple", "list", "tensor"])
@pytest.mark.parametrize("form", ["padded", "concatenated"])
def test_length_forms(lengths_as, form):
    logits, targets, il, tl = _case(10, 3, 6, 4, seed=3)
    if form == "concatenated":
        targets = _concat(targets, tl)
    s_out, t_out, s_grad, t_grad = _both(logits, targets, il, tl, lengths_as=lengths_as)
    assert_close(s_out, t_out, RTOL, ATOL, "loss")
    assert_close(s_grad, t_grad, RTOL, ATOL, "gradient")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_log_probs_leaf_gradient_is_torchs(reduction):
    # torch's gradient for a log_probs leaf is exp(log_probs) - posterior, not -posterior.
    logits, targets, il, tl = _case(9, 3, 5, 3, seed=11)
    logp = np.asarray(jax.nn.log_softmax(logits, -1))
    s_out, t_out, s_grad, t_grad = _both(logp, targets, il, tl, leaf="log_probs",
                                         reduction=reduction)  # fmt: skip
    assert_close(s_out, t_out, RTOL, ATOL, "loss")
    assert_close(s_grad, t_grad, RTOL, ATOL, "gradient of log_probs")
    assert np.abs(host(t_grad).sum(-1)).max() < 1e-5  # rows sum to 0: not -posterior


@pytest.mark.parametrize("blank", [2, 4])
def test_blank_not_zero(blank):
    logits, targets, il, tl = _case(11, 3, 5, 4, seed=5, blank=blank)
    for reduction in REDUCTIONS:
        s_out, t_out, s_grad, t_grad = _both(
            logits, targets, il, tl, blank=blank, reduction=reduction
        )
        assert_close(s_out, t_out, RTOL, ATOL, f"loss, {reduction}")
        assert_close(s_grad, t_grad, RTOL, ATOL, f"gradient, {reduction}")


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_impossible_alignments(reduction, zero_infinity):
    # Sample 1: 3 labels with a repeat need 5 frames but get 3; sample 2: no frames, 1 label.
    # Sample 3 has no frames and no labels: loss 0.
    logits = np.random.default_rng(0).standard_normal((6, 4, 5)).astype(np.float32)
    targets = np.array([[1, 2, 3], [1, 1, 2], [3, 0, 0], [0, 0, 0]])
    il, tl = np.array([6, 3, 0, 0]), np.array([3, 3, 1, 0])
    for leaf in ("logits", "log_probs"):
        s_out, t_out, s_grad, t_grad = _both(
            logits, targets, il, tl, leaf=leaf, reduction=reduction, zero_infinity=zero_infinity
        )
        assert_close(s_out, t_out, RTOL, ATOL, "loss (inf where torch's is)")
        g, tg = host(s_grad), host(t_grad)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(tg))
        assert_close(np.nan_to_num(g), np.nan_to_num(tg), RTOL, ATOL, "gradient")
        if zero_infinity:
            assert np.isfinite(g).all()
    if reduction == "none":
        assert np.isinf(host(t_out)[1]) != zero_infinity


def test_unbatched():
    logits, targets, il, tl = _case(8, 1, 4, 3, seed=2)
    for reduction in REDUCTIONS:
        t_leaf = torch.tensor(logits[:, 0], requires_grad=True)
        s_leaf = spx.tensor(logits[:, 0], requires_grad=True)
        args = (torch.tensor(targets[0]), torch.tensor(il[0]), torch.tensor(tl[0]))
        t_out = torch.nn.functional.ctc_loss(t_leaf.log_softmax(-1), *args, reduction=reduction)
        s_args = (spx.tensor(targets[0]), spx.tensor(il[0]), spx.tensor(tl[0]))
        s_out = ctc_loss(s_leaf.log_softmax(-1), *s_args, reduction=reduction)
        assert tuple(s_out.shape) == tuple(t_out.shape) == ()
        t_out.backward()
        s_out.backward()
        assert_close(s_out, t_out, RTOL, ATOL, reduction)
        assert_close(s_leaf.grad, t_leaf.grad, RTOL, ATOL, reduction)


def test_compiles_with_traced_lengths_and_targets():
    # Inside jit nothing is known: the concatenated width falls back to its bound.
    logits, targets, il, tl = _case(10, 3, 6, 4, seed=9)
    flat = _concat(targets, tl)
    lp = jax.nn.log_softmax(logits, -1)

    @jax.jit
    def loss_and_grad(lp, flat, il, tl):
        def f(lp):
            return jnp.asarray(ctc_loss(lp, flat, il, tl, reduction="sum"))

        return jax.value_and_grad(f)(lp)

    value, grad = loss_and_grad(lp, flat, il, tl)
    t_lp = torch.tensor(np.asarray(lp), requires_grad=True)
    t_out = torch.nn.functional.ctc_loss(
        t_lp, torch.tensor(flat), torch.tensor(il), torch.tensor(tl), reduction="sum"
    )
    t_out.backward()
    assert_close(value, t_out, RTOL, ATOL, "loss")
    assert_close(grad, t_lp.grad, RTOL, ATOL, "gradient")


class _LongArgs(torch.nn.Module):
    """Feeds torch's loss the int64 indices it wants (spx takes int32 ones as they are)."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, log_probs, *ints):
        return self.layer(log_probs, *[x.long() for x in ints])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("form", ["padded", "concatenated"])
def test_module(reduction, form):
    kwargs = dict(blank=1, reduction=reduction, zero_infinity=True)
    t_loss, s_loss = torch.nn.CTCLoss(**kwargs), CTCLoss(**kwargs)
    assert repr(s_loss) == repr(t_loss) == "CTCLoss()"
    assert list(s_loss.state_dict()) == list(t_loss.state_dict()) == []
    assert (s_loss.blank, s_loss.reduction, s_loss.zero_infinity) == (1, reduction, True)
    logits, targets, il, tl = _case(9, 3, 5, 3, seed=4, blank=1)
    logp = np.asarray(jax.nn.log_softmax(logits, -1))
    if form == "concatenated":
        targets = _concat(targets, tl)
    inputs = [logp, targets.astype(np.int32), il.astype(np.int32), tl.astype(np.int32)]
    # torch flow (Tensors, loss.backward()) and jax.vjp under jax.jit (traced lengths).
    check_module(_LongArgs(t_loss), s_loss, inputs, rtol=RTOL, atol=ATOL, diff=[0])


def test_defaults_match_torch():
    import inspect

    t_sig = inspect.signature(torch.nn.functional.ctc_loss)
    s_sig = inspect.signature(ctc_loss)
    assert list(s_sig.parameters) == list(t_sig.parameters)
    for name, p in t_sig.parameters.items():
        assert s_sig.parameters[name].default == p.default, name
    t_init = inspect.signature(torch.nn.CTCLoss.__init__).parameters
    s_init = inspect.signature(CTCLoss.__init__).parameters
    assert [(k, p.default) for k, p in s_init.items()] == [
        (k, p.default) for k, p in t_init.items()
    ]


_LP = np.asarray(jax.nn.log_softmax(np.zeros((5, 2, 4), np.float32), -1))
_TG, _IL, _TL = np.array([[1, 2, 2], [3, 0, 0]]), np.array([5, 4]), np.array([3, 1])


@pytest.mark.parametrize(
    "change, error, match",
    [
        (dict(blank=4), RuntimeError, "blank must be in label range"),
        (dict(blank=-1), RuntimeError, "blank must be in label range"),
        (dict(input_lengths=np.array([5, 4, 3])), RuntimeError, "input_lengths must be of size"),
        (dict(target_lengths=np.array([3])), RuntimeError, "target_lengths must be of size"),
        (dict(input_lengths=np.array([6, 4])), RuntimeError, "at most 5"),
        (dict(input_lengths=np.array([-1, 4])), RuntimeError, "at least 0"),
        (dict(target_lengths=np.array([4, 1])), RuntimeError, "S=3"),
        (dict(target_lengths=np.array([-1, 1])), RuntimeError, "at least 0"),
        (dict(input_lengths=np.array([5.0, 4.0])), RuntimeError, "input_lengths must be integral"),
        (dict(target_lengths=np.array([3.0, 1.0])), RuntimeError, "target_lengths must be integ"),
        (dict(targets=np.array([1, 2, 2, 3, 0])), RuntimeError, "sum\\(target_lengths\\) = 4"),
        (dict(targets=_TG[:1]), RuntimeError, "N=2"),
        (dict(targets=_TG[None]), RuntimeError, "targets must be"),
        (dict(log_probs=_LP[None]), RuntimeError, "log_probs must be"),
        (dict(reduction="avg"), ValueError, "not a valid value for reduction"),
    ],
    ids=lambda v: str(v)[:40] if isinstance(v, dict) else None,
)
def test_errors_like_torch(change, error, match):
    args = dict(log_probs=_LP, targets=_TG, input_lengths=_IL, target_lengths=_TL)
    args.update(change)
    t_args = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}
    with pytest.raises(error):
        torch.nn.functional.ctc_loss(**t_args)
    with pytest.raises(error, match=match):
        ctc_loss(**{k: spx.tensor(v) if isinstance(v, np.ndarray) else v for k, v in args.items()})


def test_out_of_range_label_is_named():
    # torch reads out-of-range labels as garbage; spx names the label when it is known.
    with pytest.raises(IndexError, match=r"target label 7 is out of range .* C=4"):
        ctc_loss(spx.tensor(_LP), spx.tensor(np.array([[1, 7, 2], [3, 0, 0]])), _IL, _TL)
    with pytest.raises(TypeError, match="must hold ints"):
        ctc_loss(spx.tensor(_LP), spx.tensor(_TG), (5.0, 4), (3, 1))
    with pytest.raises(ValueError, match="blank"):
        CTCLoss(blank=-1)
