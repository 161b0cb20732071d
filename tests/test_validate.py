"""The one shared validator of integer and real arguments, and the entry points that use it:
numpy integers are sizes as torch accepts them, bools and floats are not."""

import pathlib
import re

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import _validate, nn
from spx.data import DataLoader
from spx.distributed.pipelining import PipelineStage
from spx.distributed.pipelining.microbatch import split_args_kwargs_into_chunks
from spx.distributed.pipelining.tables.orders.interleaved import interleaved_1f1b_order

torch = pytest.importorskip("torch")


def test_as_int_accepts_what_python_can_index_with():
    for value in (3, np.int64(3), np.int32(3), np.uint8(3), np.array(3), jnp.int32(3)):
        out = _validate.as_int(value, "n", "X", minimum=0)
        assert out == 3 and type(out) is int
    for bad in (True, np.bool_(True), 3.0, "3", None, np.array([3])):
        with pytest.raises(TypeError, match=r"X: n must be an int, got"):
            _validate.as_int(bad, "n", "X")
    with pytest.raises(ValueError, match=r"X: n must be a positive int, got 0; try 1"):
        _validate.as_int(0, "n", "X", minimum=1, hint="try 1")
    with pytest.raises(ValueError, match=r"must be an int in \[0, 7\], got 8"):
        _validate.as_int(8, "n", "X", minimum=0, maximum=7)
    with pytest.raises(ValueError, match="must be an int"):
        _validate.as_int(2.5, "n", "X", wrong_type=ValueError)


def test_as_float_and_as_int_tuple():
    for value in (0.5, np.float32(0.5), np.float64(0.5), jnp.float32(0.5), np.array(0.5)):
        out = _validate.as_float(value, "p", "X", minimum=0, maximum=1)
        assert out == 0.5 and type(out) is float
    assert _validate.as_float(1, "p", "X") == 1.0
    for bad in (True, "0.5", 1j, None, [0.5]):
        with pytest.raises(TypeError, match=r"X: p must be a"):
            _validate.as_float(bad, "p", "X")
    for bad in (float("nan"), -0.1, 1.5):
        with pytest.raises(ValueError, match=r"must be a number in \[0, 1\]"):
            _validate.as_float(bad, "p", "X", minimum=0, maximum=1)
    assert _validate.as_int_tuple(np.int64(3), 2, "k", "X") == (3, 3)
    assert _validate.as_int_tuple([2], 3, "k", "X") == (2, 2, 2)
    assert _validate.as_int_tuple((1, np.int16(2)), 2, "k", "X") == (1, 2)
    with pytest.raises(ValueError, match="sequence of 2 ints"):
        _validate.as_int_tuple((1, 2, 3), 2, "k", "X")
    with pytest.raises(TypeError, match=r"k\[1\] must be an int, got float"):
        _validate.as_int_tuple((1, 2.0), 2, "k", "X")
    with pytest.raises(ValueError, match=r"k\[0\] must be a positive int, got 0"):
        _validate.as_int_tuple((0, 2), 2, "k", "X", minimum=1)


def test_numpy_integer_sizes_are_accepted_like_torch():
    # Before: ValueError "Linear: in_features must be a non-negative int, got np.int64(3)".
    t_layer = torch.nn.Linear(np.int64(3), 2)
    layer = nn.Linear(np.int64(3), 2)
    assert layer.weight.shape == tuple(t_layer.weight.shape) == (2, 3)
    assert type(layer.in_features) is int  # plain ints: static structure hashes and compares
    assert repr(layer) == repr(t_layer)


@pytest.mark.parametrize(
    "build",
    [
        lambda i: nn.Embedding(i(5), i(2), padding_idx=i(0)),
        lambda i: nn.Conv2d(i(3), i(4), i(3), stride=(i(1), i(2)), groups=i(1)),
        lambda i: nn.BatchNorm1d(i(3)),
        lambda i: nn.LayerNorm(i(4)),
        lambda i: nn.GroupNorm(i(2), i(4)),
        lambda i: nn.MultiheadAttention(i(4), i(2)),
        lambda i: nn.MaxPool2d(i(2)),
        lambda i: nn.Flatten(i(0)),
        lambda i: nn.Softmax(dim=i(1)),
        lambda i: nn.Bilinear(i(2), i(3), i(4)),
        lambda i: nn.Dropout(np.float32(0.25)),
        lambda i: nn.Sequential(nn.ReLU()) * i(2),
        lambda i: DataLoader(list(range(6)), batch_size=i(2), num_workers=i(0)),
        lambda i: spx.zeros(i(2), i(3)),
        lambda i: spx.manual_seed(i(3)),
        lambda i: PipelineStage(nn.Linear(2, 2), i(0), i(2), spx.device("cpu")),
        lambda i: split_args_kwargs_into_chunks((jnp.ones((4, 2)),), {}, i(2)),
        lambda i: interleaved_1f1b_order(i(2), i(4), i(4)),
    ],
)
def test_entry_points_take_numpy_integers(build):
    build(np.int64)  # must not raise
    build(int)  # and Python ints keep working


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda: nn.Embedding(5, True), TypeError, r"Embedding: embedding_dim must be an int"),
        (lambda: nn.Conv2d(3, 4, 2.5), TypeError, r"Conv2d: kernel_size must be an int"),
        (lambda: nn.BatchNorm1d(0), ValueError, r"num_features must be a positive int, got 0"),
        (lambda: nn.Embedding(5, 2, padding_idx=5), ValueError, r"padding_idx must be an int in"),
        (lambda: nn.Dropout(1.5), ValueError, r"Dropout: p .* in \[0, 1\], got 1.5"),
        (lambda: DataLoader([1], batch_size=0), ValueError, r"batch_size must be a positive int"),
        (lambda: DataLoader([1], num_workers=1.5), ValueError, r"num_workers must be an int"),
    ],
)
def test_bad_values_name_the_argument_and_value(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_no_hand_written_int_checks_are_left():
    # The class of bug (numpy ints refused, bools accepted) is fixed once, in spx._validate.
    root = pathlib.Path(spx.__file__).parent
    pattern = re.compile(r"isinstance\((\w+), bool\) or not isinstance\(\1, int")
    offenders = [
        f"{path.relative_to(root)}:{n}"
        for path in root.rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []
