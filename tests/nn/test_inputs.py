"""Every layer takes Tensors, jax arrays and numpy arrays alike and returns Tensors."""

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn

RNG = np.random.default_rng(0)
X2 = RNG.standard_normal((4, 6)).astype(np.float32)
X4 = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
IDX = np.array([[0, 3], [2, 1]], np.int32)

CASES = [
    ("Linear", lambda: nn.Linear(6, 2), [X2]),
    ("Bilinear", lambda: nn.Bilinear(6, 6, 2), [X2, X2]),
    ("LayerNorm", lambda: nn.LayerNorm(6), [X2]),
    ("BatchNorm1d", lambda: nn.BatchNorm1d(6), [X2]),
    ("GroupNorm", lambda: nn.GroupNorm(3, 3), [X4]),
    ("Conv2d", lambda: nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"), [X4]),
    ("MaxPool2d", lambda: nn.MaxPool2d(2), [X4]),
    ("AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2d(2), [X4]),
    ("Flatten", lambda: nn.Flatten(), [X4]),
    ("Unflatten", lambda: nn.Unflatten(1, (2, 3)), [X2]),
    ("Embedding", lambda: nn.Embedding(4, 3), [IDX]),
    ("GELU", lambda: nn.GELU(), [X2]),
    ("Dropout(eval)", lambda: nn.Dropout(0.5).eval(), [X2]),
    ("Sequential", lambda: nn.Sequential(nn.Linear(6, 3), nn.Tanh()), [X2]),
    ("MSELoss", lambda: nn.MSELoss(), [X2, X2 * 2]),
    ("CrossEntropyLoss", lambda: nn.CrossEntropyLoss(), [X2, np.array([0, 5, 2, 1], np.int32)]),
]


@pytest.mark.parametrize(("name", "make", "inputs"), CASES, ids=[c[0] for c in CASES])
def test_tensor_jax_and_numpy_inputs_give_the_same_tensor(name, make, inputs):
    layer = make()
    outs = []
    for convert in (spx.tensor, jnp.asarray, np.asarray):
        with spx.no_grad():
            out = layer(*[convert(x) for x in inputs])
        assert isinstance(out, spx.Tensor), (name, convert, type(out))
        outs.append(out.numpy())
    if name == "BatchNorm1d":  # training mode: each call also updates the running stats
        assert int(layer.num_batches_tracked) == 3
    for other in outs[1:]:
        np.testing.assert_allclose(other, outs[0], rtol=1e-6, atol=1e-6)
