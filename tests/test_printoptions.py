"""spx.set_printoptions and Tensor repr: the same text as torch's, option for option."""

import math

import numpy as np
import pytest

import spx
from spx._tensor.printing import get_printoptions, printoptions

torch = pytest.importorskip("torch")
from torch._tensor_str import get_printoptions as torch_get_printoptions  # noqa: E402


@pytest.fixture(autouse=True)
def _restore_print_options():
    """Print options are process-wide in both libraries: put both back after each test."""
    spx_before, torch_before = get_printoptions(), torch_get_printoptions()
    yield
    spx.set_printoptions(**spx_before)
    torch.set_printoptions(**torch_before)


_rng = np.random.default_rng(0)
VALUES = {
    "mixed signs": [1.0, -2.5],
    "past float16": np.array([1.5, -2.0, 7e4], np.float32),
    "integral 2d": [[1.0, 2.0], [3.0, -4.0]],
    "tiny": [1e-5, 1.0],
    "huge": [1e9, 1.0],
    "wide span": [0.1, 123456.7],
    "nonfinite": [math.nan, 1.0, math.inf],
    "zeros": [0.0, -0.0, 0.0],
    "scalar": 3.5,
    "one": [1.0],
    "ints": np.arange(20, dtype=np.int32),
    "bools": [True, False],
    "random 3d": _rng.standard_normal((3, 4, 5)).astype(np.float32),
    "scaled": _rng.standard_normal(30).astype(np.float32) * 1e5,
    "2000 floats": np.arange(2000, dtype=np.float32).reshape(40, 50),
    "3000 ints": np.arange(3000, dtype=np.int32),
    "long rows": _rng.standard_normal((2, 1001)).astype(np.float32),
    "complex": np.array([1 + 2j, -3.5 - 0.5j], np.complex64),
    "float16": np.array([1.5, 2.25, -7.0], np.float16),
    "int 0-d": np.array(7, np.int32),
    "int 3d": np.arange(8, dtype=np.int32).reshape(2, 2, 2),
    "cube": _rng.standard_normal((12, 12, 12)).astype(np.float32),
    "empty 2d": np.zeros((0, 3), np.float32),
    "empty": np.zeros(0, np.float32),
    "empty int": np.zeros(0, np.int32),
}
OPTIONS = {
    "default": {},
    "precision=2": {"precision": 2},
    "sci_mode=True": {"sci_mode": True},
    "sci_mode=False": {"sci_mode": False},
    "short": {"profile": "short"},
    "full": {"profile": "full"},
    "threshold=5": {"threshold": 5},
    "edgeitems=1": {"edgeitems": 1, "threshold": 10},
    "edgeitems=0": {"edgeitems": 0, "threshold": 3},
    "linewidth=40": {"linewidth": 40},
    "precision=0": {"precision": 0},
    "precision=8 linewidth=120": {"precision": 8, "linewidth": 120},
}


def _pair(value):
    """The same values as a torch and an spx tensor; spx's int32 stands for torch's int64."""
    if isinstance(value, np.ndarray):
        t = torch.from_numpy(value.copy())
        return (t.long() if value.dtype == np.int32 else t), spx.tensor(value)
    return torch.tensor(value), spx.tensor(value)


def _torch_text(t) -> str:
    # torch's int64 is spx's default integer (int32 without jax_enable_x64).
    long = f"spx.{spx.tensor([1]).dtype.name}"
    return repr(t).replace("torch.int64", long).replace("torch.", "spx.")


@pytest.mark.parametrize("options", list(OPTIONS.values()), ids=list(OPTIONS))
@pytest.mark.parametrize("value", list(VALUES.values()), ids=list(VALUES))
def test_repr_matches_torch(value, options):
    torch.set_printoptions(**options)
    spx.set_printoptions(**options)
    t, s = _pair(value)
    assert repr(s) == _torch_text(t)


@pytest.mark.parametrize("linewidth", [80, 30])
def test_suffixes_match_torch_and_wrap_at_linewidth(linewidth):
    torch.set_printoptions(linewidth=linewidth)
    spx.set_printoptions(linewidth=linewidth)
    values = np.linspace(-1, 1, 7, dtype=np.float32)
    t = torch.tensor(values, dtype=torch.float16, requires_grad=True)
    s = spx.tensor(values, dtype=spx.float16, requires_grad=True)
    assert repr(s) == _torch_text(t)
    # The result of an operation names its backward node instead.
    assert repr(s * 2) == _torch_text(t * 2)
    assert repr(spx.nn.Parameter(spx.ones(3))) == repr(torch.nn.Parameter(torch.ones(3)))
    assert repr(spx.nn.Parameter(spx.ones(3), requires_grad=False)) == repr(
        torch.nn.Parameter(torch.ones(3), requires_grad=False)
    )


def test_sci_mode_is_reset_by_every_call_as_in_torch():
    for lib in (torch, spx):
        lib.set_printoptions(sci_mode=True)
        lib.set_printoptions(precision=3)  # sci_mode not given: back to automatic
    assert repr(spx.tensor([1.5])) == _torch_text(torch.tensor([1.5])) == "tensor([1.500])"


def test_profile_then_overrides_and_get_printoptions():
    spx.set_printoptions(profile="short", precision=5)
    assert get_printoptions() == {
        "precision": 5, "threshold": 1000, "edgeitems": 2, "linewidth": 80, "sci_mode": None,
    }  # fmt: skip
    spx.set_printoptions(profile="full")
    assert get_printoptions()["threshold"] == math.inf
    spx.set_printoptions(profile="default")
    assert get_printoptions() == torch_get_printoptions()


def test_printoptions_context_restores():
    with printoptions(precision=1):
        assert repr(spx.tensor([0.25, 1.0])) == "tensor([0.2, 1.0])"
    assert repr(spx.tensor([0.25, 1.0])) == "tensor([0.2500, 1.0000])"


@pytest.mark.parametrize(
    "kwargs,error",
    [
        ({"profile": "long"}, ValueError),
        ({"precision": -1}, ValueError),
        ({"precision": 2.5}, TypeError),
        ({"edgeitems": "3"}, TypeError),
        ({"threshold": -1}, ValueError),
        ({"sci_mode": "yes"}, TypeError),
    ],
)
def test_bad_options_raise_and_change_nothing(kwargs, error):
    before = get_printoptions()
    with pytest.raises(error, match="set_printoptions"):
        spx.set_printoptions(**kwargs)
    assert get_printoptions() == before


def test_default_dtype_decides_which_dtype_repr_leaves_out():
    for lib in (torch, spx):
        lib.set_default_dtype(lib.float16)
    try:
        for dtype in ("float16", "float32"):
            t = torch.tensor([1.5, 2.0], dtype=getattr(torch, dtype))
            s = spx.tensor([1.5, 2.0], dtype=getattr(spx, dtype))
            assert repr(s) == _torch_text(t)
        assert repr(spx.zeros(0)) == _torch_text(torch.zeros(0))
    finally:
        for lib in (torch, spx):
            lib.set_default_dtype(lib.float32)
