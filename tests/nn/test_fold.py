"""F.unfold / F.fold and nn.Unfold / nn.Fold against torch: values, gradients, errors."""

import numpy as np
import pytest

import spx
import spx.nn.functional as F
from spx import nn
from tests.nn._parity import check_module

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# (input shape, kernel_size, dilation, padding, stride)
UNFOLD_CASES = [
    ((2, 3, 5, 6), 2, 1, 0, 1),
    ((2, 3, 5, 6), (2, 3), 1, 0, 1),
    ((1, 2, 7, 8), (3, 2), (2, 1), (1, 2), (2, 3)),
    ((2, 1, 6, 6), 3, 2, 1, 1),
    ((3, 4, 4), (2, 2), 1, 1, 2),  # unbatched
    ((0, 2, 4, 4), 2, 1, 0, 1),  # empty batch
    ((1, 2, 3, 3), 3, 1, 0, 1),  # one block
    ((1, 2, 4, 5), [1, 2], [1, 1], 0, [2, 1]),  # lists
]


@pytest.mark.parametrize("shape,k,d,p,s", UNFOLD_CASES, ids=str)
def test_unfold_matches_torch(shape, k, d, p, s):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    check_module(torch.nn.Unfold(k, d, p, s), nn.Unfold(k, d, p, s), [x], rtol=0, atol=1e-6)


@pytest.mark.parametrize("shape,k,d,p,s", UNFOLD_CASES, ids=str)
def test_fold_matches_torch(shape, k, d, p, s):
    cols = TF.unfold(torch.zeros(shape), k, d, p, s)
    x = np.random.default_rng(1).standard_normal(tuple(cols.shape)).astype(np.float32)
    out = shape[-2:]
    check_module(torch.nn.Fold(out, k, d, p, s), nn.Fold(out, k, d, p, s), [x], atol=1e-5)


def test_fold_inverts_unfold_up_to_overlap_counts():
    x = np.random.default_rng(2).standard_normal((2, 3, 6, 7)).astype(np.float32)
    cols = F.unfold(spx.tensor(x), 3, padding=1)
    back = F.fold(cols, (6, 7), 3, padding=1)
    counts = F.fold(F.unfold(spx.ones(2, 3, 6, 7), 3, padding=1), (6, 7), 3, padding=1)
    np.testing.assert_allclose((back / counts).numpy(), x, rtol=1e-6, atol=1e-6)


def test_repr_and_state():
    pairs = [
        (nn.Unfold((2, 3), dilation=2, padding=1, stride=(1, 2)),
         torch.nn.Unfold((2, 3), dilation=2, padding=1, stride=(1, 2))),
        (nn.Fold((4, 5), 2, stride=2), torch.nn.Fold((4, 5), 2, stride=2)),
    ]  # fmt: skip
    for s_mod, t_mod in pairs:
        assert repr(s_mod) == repr(t_mod)
        assert dict(s_mod.state_dict()) == {}


@pytest.mark.parametrize(
    "fn,shape,args,kw",
    [
        ("unfold", (1, 2, 3, 3), (4,), {}),
        ("unfold", (1, 2, 3, 3), (2,), {"stride": 0}),
        ("unfold", (1, 2, 3, 3), (0,), {}),
        ("unfold", (1, 2, 3, 3), (2,), {"padding": -1}),
        ("unfold", (1, 2, 3, 3), (2,), {"dilation": (1, 0)}),
        ("unfold", (1, 2, 3, 3), ((2, 2, 2),), {}),
        ("unfold", (1, 0, 3, 3), (2,), {}),
        ("unfold", (1, 2, 3, 3), (2,), {"dilation": [1]}),
        ("unfold", (1, 1, 2, 3, 3), (2,), {}),
        ("fold", (1, 5, 4), ((3, 3), 2), {}),
        ("fold", (1, 8, 5), ((3, 3), 2), {}),
        ("fold", (8,), ((3, 3), 2), {}),
        ("fold", (1, 1, 8, 4), ((3, 3), 2), {}),
        ("fold", (1, 8, 0), ((1, 1), 2), {}),
        ("fold", (1, 8, 4), ((3, 3, 3), 2), {}),
        ("fold", (1, 8, 4), ((3, 3), 2), {"stride": 0}),
        ("fold", (1, 8, 4), ((1, 1), 2), {}),
    ],
)
def test_errors_match_torch(fn, shape, args, kw):
    x = np.zeros(shape, np.float32)
    with pytest.raises(RuntimeError) as want:
        getattr(TF, fn)(torch.tensor(x), *args, **kw)
    with pytest.raises(RuntimeError) as got:
        getattr(F, fn)(spx.tensor(x), *args, **kw)
    assert str(got.value) == str(want.value)


def test_unfold_low_rank_raises_index_error_as_torch():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(IndexError) as want:
        TF.unfold(torch.tensor(x), 2)
    with pytest.raises(IndexError) as got:
        F.unfold(spx.tensor(x), 2)
    assert str(got.value) == str(want.value)


def test_under_compile():
    x = np.random.default_rng(3).standard_normal((2, 2, 5, 5)).astype(np.float32)
    f = spx.compile(lambda t: F.fold(F.unfold(t, 2, stride=1), (5, 5), 2))
    want = TF.fold(TF.unfold(torch.tensor(x), 2), (5, 5), 2).numpy()
    np.testing.assert_allclose(f(spx.tensor(x)).numpy(), want, rtol=1e-6, atol=1e-6)
