"""AdaptiveLogSoftmaxWithLoss vs torch: state_dict, outputs, losses, gradients and errors."""

import numpy as np
import pytest

import spx
from spx import nn
from tests.nn._parity import assert_close, copy_weights, host

torch = pytest.importorskip("torch")

IN, CLASSES, CUTOFFS = 16, 30, [5, 12, 20]
# Targets in the head and in every cluster, on both sides of each cutoff.
TARGETS = np.array([0, 4, 5, 11, 12, 19, 20, 29, 3, 7, 25, 1])


def _pair(**kwargs):
    """A torch module and an spx one with torch's weights."""
    kwargs = {"in_features": IN, "n_classes": CLASSES, "cutoffs": CUTOFFS, **kwargs}
    torch.manual_seed(0)
    t_asm = torch.nn.AdaptiveLogSoftmaxWithLoss(**kwargs)
    asm = nn.AdaptiveLogSoftmaxWithLoss(**kwargs)
    copy_weights(t_asm, asm)
    return t_asm, asm


def _x(n, seed=0):
    return np.random.default_rng(seed).standard_normal((n, IN)).astype(np.float32)


@pytest.mark.parametrize(
    "kwargs",
    [dict(), dict(head_bias=True, div_value=2.0), dict(in_features=3, cutoffs=[2, 5])],
    ids=["default", "head_bias", "empty_projections"],
)
def test_state_dict_matches_torch(kwargs):
    t_asm, asm = _pair(**kwargs)
    sd, sd_t = asm.state_dict(), t_asm.state_dict()
    assert list(sd) == list(sd_t)
    for k in sd_t:
        assert tuple(sd[k].shape) == tuple(sd_t[k].shape), k
    assert repr(asm) == repr(t_asm)
    for name in ("in_features", "n_classes", "cutoffs", "div_value", "head_bias",
                 "shortlist_size", "n_clusters", "head_size"):  # fmt: skip
        assert getattr(asm, name) == getattr(t_asm, name), name


@pytest.mark.parametrize(
    "targets",
    [TARGETS, np.array([0, 1, 2, 3, 4, 0]), np.array([13, 14, 2, 19])],
    ids=["all_clusters", "head_only", "some_clusters"],
)
@pytest.mark.parametrize("head_bias", [False, True])
def test_forward_and_gradients_match_torch(targets, head_bias):
    t_asm, asm = _pair(head_bias=head_bias, div_value=2.0)
    x_np = _x(len(targets))
    x, xt = spx.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    out = asm(x, spx.tensor(targets))
    out_t = t_asm(xt, torch.tensor(targets))
    assert type(out).__name__ == "_ASMoutput" and out._fields == ("output", "loss")
    assert tuple(out.output.shape) == tuple(out_t.output.shape) and out.loss.shape == ()
    assert_close(out.output, out_t.output, 1e-5, 1e-6, "output")
    assert_close(out.loss, out_t.loss, 1e-5, 1e-6, "loss")
    out.loss.backward()
    out_t.loss.backward()
    assert_close(x.grad, xt.grad, 1e-5, 1e-7, "input grad")
    params = dict(asm.named_parameters())
    for name, p in t_asm.named_parameters():
        if p.grad is None:  # a cluster without targets: torch never evaluates it
            assert params[name].grad is None, name
        else:
            assert_close(params[name].grad, p.grad, 1e-5, 1e-7, name)


def test_unbatched_input():
    t_asm, asm = _pair()
    x_np = _x(1)[0]
    for target in (3, 17):
        x, xt = spx.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
        out, out_t = asm(x, spx.tensor(target)), t_asm(xt, torch.tensor(target))
        assert out.output.shape == () and out.loss.shape == ()
        assert_close(out.output, out_t.output)
        out.loss.backward()
        out_t.loss.backward()
        assert_close(x.grad, xt.grad, 1e-5, 1e-7)


def test_log_prob_and_predict_match_torch():
    t_asm, asm = _pair(head_bias=True)
    with torch.no_grad():  # push some rows' head argmax into the clusters
        t_asm.head.bias[CUTOFFS[0] :] += 0.3
    copy_weights(t_asm, asm)
    x_np = _x(64, seed=3)
    lp, lp_t = asm.log_prob(x_np), t_asm.log_prob(torch.tensor(x_np))
    assert tuple(lp.shape) == (64, CLASSES)
    assert_close(lp, lp_t, 1e-5, 1e-6)
    np.testing.assert_allclose(np.exp(host(lp)).sum(1), 1.0, rtol=1e-5)
    pred, pred_t = asm.predict(x_np), t_asm.predict(torch.tensor(x_np))
    head_choice = host(asm.head(x_np)).argmax(1)
    assert (head_choice < CUTOFFS[0]).any() and (head_choice >= CUTOFFS[0]).any()
    np.testing.assert_array_equal(host(pred), pred_t.numpy())
    np.testing.assert_array_equal(host(pred), host(lp).argmax(1))
    # The output's targets are log_prob's entries.
    out = asm(x_np[: len(TARGETS)], spx.tensor(TARGETS)).output
    np.testing.assert_allclose(
        host(out), host(lp)[np.arange(len(TARGETS)), TARGETS], rtol=1e-5, atol=1e-6
    )


def test_loads_torch_state_dict_and_trains_like_torch_under_compile():
    t_asm, asm = _pair(head_bias=True)
    asm.load_state_dict({k: v.numpy() for k, v in t_asm.state_dict().items()})
    t_opt = torch.optim.SGD(t_asm.parameters(), lr=0.5)
    opt = spx.optim.SGD(asm.parameters(), lr=0.5)

    @spx.compile
    def step(x, target):
        opt.zero_grad()
        loss = asm(x, target).loss
        loss.backward()
        opt.step()
        return loss

    rng = np.random.default_rng(1)
    for i in range(3):
        x_np = rng.standard_normal((12, IN)).astype(np.float32)
        targets = rng.permutation(TARGETS)  # every cluster: torch's grads are all set
        t_opt.zero_grad()
        t_loss = t_asm(torch.tensor(x_np), torch.tensor(targets)).loss
        t_loss.backward()
        t_opt.step()
        if i == 0:  # the trace warns (the targets are unknown there), later calls do not
            with pytest.warns(UserWarning, match="zero gradients, where torch's are None"):
                loss = step(spx.tensor(x_np), spx.tensor(targets))
        else:
            loss = step(spx.tensor(x_np), spx.tensor(targets))
        np.testing.assert_allclose(float(loss), t_loss.item(), rtol=1e-5)
    for name, p in t_asm.named_parameters():
        assert_close(dict(asm.named_parameters())[name], p, 1e-5, 1e-6, name)


def test_eager_calls_do_not_warn(recwarn):
    _, asm = _pair()
    asm(spx.tensor(_x(3)), spx.tensor([1, 7, 25])).loss.backward()
    assert not [w for w in recwarn if "AdaptiveLogSoftmax" in str(w.message)]


def test_overflowing_clusters_on_other_rows_leave_the_gradient_finite():
    """A cluster's logits on a row of another cluster are masked out of the result; their
    overflow must not turn the masked zero gradient into NaN (torch never evaluates them)."""
    t_asm = torch.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [5], div_value=1.0)
    asm = nn.AdaptiveLogSoftmaxWithLoss(4, 10, [5], div_value=1.0)
    with torch.no_grad():
        t_asm.tail[0][0].weight.fill_(1e36)
        t_asm.head.weight.fill_(0.1)
    asm.load_state_dict({k: v.numpy() for k, v in t_asm.state_dict().items()})
    x = np.array([[1e-3] * 4, [1e3] * 4], np.float32)
    targets = [7, 1]
    t_asm(torch.tensor(x), torch.tensor(targets)).loss.backward()
    asm(spx.tensor(x), spx.tensor(targets)).loss.backward()
    for name, p in t_asm.named_parameters():
        assert_close(dict(asm.named_parameters())[name].grad, p.grad, 1e-5, 1e-6, name)


@pytest.mark.filterwarnings("ignore:AdaptiveLogSoftmaxWithLoss")
def test_traced_out_of_range_target_is_nan():
    _, asm = _pair()
    f = spx.compile(lambda x, t: asm(x, t).output)
    out = host(f(spx.tensor(_x(3)), spx.tensor([1, CLASSES, 25])))
    assert np.isfinite(out[[0, 2]]).all() and np.isnan(out[1])


def test_empty_batch_like_torch():
    t_asm, asm = _pair()
    out = asm(np.zeros((0, IN), np.float32), spx.tensor(np.zeros(0, np.int64)))
    out_t = t_asm(torch.zeros(0, IN), torch.zeros(0, dtype=torch.long))
    assert out.output.shape == (0,) and tuple(out_t.output.shape) == (0,)
    assert np.isnan(host(out.loss)) and torch.isnan(out_t.loss)


@pytest.mark.parametrize(
    ("cutoffs", "error", "match"),
    [
        ([], ValueError, "length larger than 0"),
        ([12, 5], ValueError, "unique, positive integers sorted"),
        ([0, 5], ValueError, "between 1 and n_classes-1 = 29; got \\[0, 5\\]"),
        ([5, 30], ValueError, "between 1 and n_classes-1"),
        ([5, 5], ValueError, "unique"),
        ([2.5], ValueError, "integers"),
        ([5.0, 12], TypeError, "cutoffs must be ints"),  # torch: a TypeError building Linear
    ],
    ids=str,
)
def test_constructor_errors_like_torch(cutoffs, error, match):
    with pytest.raises(error):
        torch.nn.AdaptiveLogSoftmaxWithLoss(IN, CLASSES, cutoffs)
    with pytest.raises(error, match=match):
        nn.AdaptiveLogSoftmaxWithLoss(IN, CLASSES, cutoffs)


@pytest.mark.parametrize(
    ("x_shape", "target", "error", "match"),
    [
        ((4, IN), [1, 2, 3, 30], RuntimeError,
         r"Target values should be in \[0, 29\], but values in range \[1, 30\] were found"),
        ((4, IN), [1, 2, 3, -1], RuntimeError, r"values in range \[-1, 3\]"),
        ((3, IN), [1, 2, 3, 4], RuntimeError, "same size in the batch dimension"),
        ((IN,), list(range(IN)), RuntimeError, "1D target tensor expects 2D input"),
        ((4, IN), 1, RuntimeError, "0D target tensor expects 1D input"),
        ((4, IN), [[1, 2], [3, 4]], RuntimeError, "multi-target not supported"),
        ((2, IN), [1.0, 2.0], RuntimeError, "integer class indices"),
        ((4, IN + 1), [1, 2, 3, 4], RuntimeError, "in_features"),
    ],
    ids=str,
)  # fmt: skip
def test_forward_errors_like_torch(x_shape, target, error, match):
    t_asm, asm = _pair()
    x = np.zeros(x_shape, np.float32)
    with pytest.raises(error):
        t_asm(torch.tensor(x), torch.tensor(target))
    with pytest.raises(error, match=match):
        asm(spx.tensor(x), spx.tensor(target))


def test_log_prob_and_predict_need_2d_input_like_torch():
    t_asm, asm = _pair()
    for method in ("log_prob", "predict"):
        with pytest.raises(IndexError):
            getattr(t_asm, method)(torch.zeros(IN))
        with pytest.raises(IndexError, match=r"2-D \(N, in_features\) input, got shape \(16,\)"):
            getattr(asm, method)(spx.zeros(IN))
