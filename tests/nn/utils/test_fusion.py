"""spx.nn.utils.fusion against torch.nn.utils.fusion: a BatchNorm folded into the conv or
linear layer before it gives torch's fused weights and the unfused layers' outputs."""

import numpy as np
import pytest

import spx
from spx.nn.utils import fusion
from tests.nn._parity import assert_close, copy_weights, host

torch = pytest.importorskip("torch")


def _bn_pair(cls: str, n: int, affine: bool = True, seed: int = 0):
    """An eval-mode BatchNorm in both libraries with random running statistics and affine
    parameters (a fresh one would make the fusion nearly the identity)."""
    torch.manual_seed(seed)
    t = getattr(torch.nn, cls)(n, affine=affine)
    with torch.no_grad():
        t.running_mean.normal_()
        t.running_var.uniform_(0.5, 2.0)
        if affine:
            t.weight.normal_()
            t.bias.normal_()
    s = getattr(spx.nn, cls)(n, affine=affine)
    copy_weights(t, s)
    return t.eval(), s.eval()


CONVS = [
    ("Conv1d", "BatchNorm1d", {"in_channels": 3, "out_channels": 4, "kernel_size": 3}, (2, 3, 9)),
    ("Conv2d", "BatchNorm2d", {"in_channels": 4, "out_channels": 6, "kernel_size": 3,
                               "groups": 2}, (2, 4, 7, 7)),
    ("Conv2d", "BatchNorm2d", {"in_channels": 3, "out_channels": 5, "kernel_size": 2,
                               "bias": False}, (1, 3, 6, 6)),
    ("Conv3d", "BatchNorm3d", {"in_channels": 2, "out_channels": 3, "kernel_size": 2},
     (1, 2, 4, 4, 4)),
    ("ConvTranspose2d", "BatchNorm2d", {"in_channels": 3, "out_channels": 4, "kernel_size": 3,
                                        "stride": 2}, (1, 3, 5, 5)),
]  # fmt: skip


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize(("conv", "bn", "kw", "shape"), CONVS, ids=[c[0] for c in CONVS])
def test_conv_bn_matches_torch(conv, bn, kw, shape, affine):
    torch.manual_seed(1)
    tc = getattr(torch.nn, conv)(**kw).eval()
    sc = getattr(spx.nn, conv)(**kw).eval()
    copy_weights(tc, sc)
    tb, sb = _bn_pair(bn, kw["out_channels"], affine)
    transpose = conv.startswith("ConvTranspose")
    tf = torch.nn.utils.fuse_conv_bn_eval(tc, tb, transpose=transpose)
    sf = spx.nn.utils.fuse_conv_bn_eval(sc, sb, transpose=transpose)
    assert type(sf) is type(sc) and sf is not sc
    assert_close(sf.weight, tf.weight, rtol=1e-5, atol=1e-6)
    assert_close(sf.bias, tf.bias, rtol=1e-5, atol=1e-6)
    # torch: a conv without bias gets a fused bias that does not require grad
    assert sf.bias.requires_grad == tf.bias.requires_grad
    assert isinstance(sf.weight, spx.nn.Parameter) and isinstance(sf.bias, spx.nn.Parameter)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    assert_close(sf(spx.tensor(x)), sb(sc(spx.tensor(x))), rtol=1e-4, atol=1e-5)
    assert_close(sf(spx.tensor(x)), tf(torch.tensor(x)), rtol=1e-4, atol=1e-5)
    # the originals are untouched
    assert_close(sc.weight, tc.weight)
    assert (sc.bias is None) == (tc.bias is None)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("n_bn", [5, 1])
def test_linear_bn_matches_torch(bias, n_bn):
    torch.manual_seed(3)
    tl = torch.nn.Linear(4, 5, bias=bias).eval()
    sl = spx.nn.Linear(4, 5, bias=bias).eval()
    copy_weights(tl, sl)
    tb, sb = _bn_pair("BatchNorm1d", n_bn)
    tf = torch.nn.utils.fuse_linear_bn_eval(tl, tb)
    sf = spx.nn.utils.fuse_linear_bn_eval(sl, sb)
    assert_close(sf.weight, tf.weight)
    assert_close(sf.bias, tf.bias)
    assert sf.bias.requires_grad == tf.bias.requires_grad
    x = np.random.default_rng(4).standard_normal((6, 4)).astype(np.float32)
    assert_close(sf(spx.tensor(x)), tf(torch.tensor(x)), rtol=1e-4, atol=1e-5)


def test_weight_functions_take_tensors_and_none_as_torch():
    rng = np.random.default_rng(5)
    w, b = rng.standard_normal((4, 3, 2)).astype(np.float32), None
    rm, rv = rng.standard_normal(4).astype(np.float32), rng.uniform(0.5, 2, 4).astype(np.float32)
    tw, tb = torch.nn.utils.fuse_conv_bn_weights(
        torch.tensor(w), b, torch.tensor(rm), torch.tensor(rv), 1e-3, None, None
    )
    sw, sb = fusion.fuse_conv_bn_weights(
        spx.tensor(w), b, spx.tensor(rm), spx.tensor(rv), 1e-3, None, None
    )
    assert_close(sw, tw)
    assert_close(sb, tb)
    lw = rng.standard_normal((4, 3)).astype(np.float32)
    bw, bb = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    targs = [torch.tensor(a) for a in (rm, rv)]
    sargs = [spx.tensor(a) for a in (rm, rv)]
    tw, tb = torch.nn.utils.fuse_linear_bn_weights(
        torch.tensor(lw), None, *targs, 1e-5, torch.tensor(bw), torch.tensor(bb)
    )
    sw, sb = fusion.fuse_linear_bn_weights(
        spx.tensor(lw), None, *sargs, 1e-5, spx.tensor(bw), spx.tensor(bb)
    )
    assert_close(sw, tw)
    assert_close(sb, tb)
    assert host(sw).dtype == np.float32


def test_fusion_refuses_training_mode_and_missing_statistics():
    conv, bn = spx.nn.Conv2d(2, 3, 1), spx.nn.BatchNorm2d(3)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        fusion.fuse_conv_bn_eval(conv, bn.eval())
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        torch.nn.utils.fuse_conv_bn_eval(torch.nn.Conv2d(2, 3, 1), torch.nn.BatchNorm2d(3).eval())
    no_stats = spx.nn.BatchNorm2d(3, track_running_stats=False).eval()
    with pytest.raises(AssertionError, match=r"running_mean and bn\.running_var"):
        fusion.fuse_conv_bn_eval(conv.eval(), no_stats)
    with pytest.raises(AssertionError, match=r"linear\.out_features == bn\.num_features"):
        fusion.fuse_linear_bn_eval(spx.nn.Linear(2, 4).eval(), spx.nn.BatchNorm1d(3).eval())
