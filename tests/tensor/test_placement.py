"""Tensors stay on their device through in-place writes, and ``*_like`` follows its input, as
in torch (the test session has several CPU devices; a second one stands in for a GPU).

Before, ``x.zero_()``, ``x.normal_()`` and ``zeros_like(x)`` came back on JAX's default device,
and ``x.fill_(v)`` / ``x.copy_(src)`` with ``v``/``src`` held on another device failed with
"incompatible devices" (word_language_model's generate loop on a GPU).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import spx

DEV0, DEV1 = jax.devices()[:2]


def on1(*values: float) -> spx.Tensor:
    return spx.tensor(list(values)).to(DEV1)


@pytest.mark.parametrize(
    "write",
    [
        lambda x: x.zero_(),
        lambda x: x.fill_(2.5),
        lambda x: x.add_(1),
        lambda x: x.normal_(),
        lambda x: x.uniform_(),
        lambda x: x.bernoulli_(0.5),
        lambda x: x.exponential_(),
        lambda x: x.random_(0, 5),
        lambda x: x.clamp_(0, 1),
        lambda x: x.__setitem__(0, 7.0),
    ],
)
def test_in_place_writes_keep_the_tensors_device(write):
    x = on1(1.0, 2.0, 3.0)
    write(x)
    assert x.device == DEV1
    assert x._data.devices() == {DEV1}


def test_fill_and_copy_from_another_device_copy_across_as_torch_does():
    x = on1(0.0)
    x.fill_(spx.tensor([1.0, 2.0]).to(DEV0).sum())  # a 0-d tensor on another device
    assert x.device == DEV1 and x.tolist() == [3.0]
    y = on1(0.0, 0.0)
    y.copy_(spx.tensor([4.0, 5.0]).to(DEV0))
    assert y.device == DEV1 and y.tolist() == [4.0, 5.0]
    y.copy_(np.array([6.0, 7.0], np.float32))
    assert y.device == DEV1 and y.tolist() == [6.0, 7.0]


def test_an_uncommitted_tensor_stays_where_it_is_when_filled_from_another_device():
    """A tensor on the default device without being committed to it (``spx.zeros(1).cuda()``
    on a GPU machine: moving to the device it is on already) filled from a scalar held
    elsewhere (``.cpu()``) stays where it was."""
    x = spx.zeros(1).to(DEV0)
    x.fill_(on1(1.0, 2.0).sum())
    assert x.device == DEV0 and x.tolist() == [3.0]
    y = spx.zeros(2).to(DEV0)
    y.copy_(on1(4.0, 5.0))
    assert y.device == DEV0 and y.tolist() == [4.0, 5.0]


@pytest.mark.parametrize(
    "make",
    [
        spx.zeros_like,
        spx.ones_like,
        spx.empty_like,
        lambda x: spx.full_like(x, 3.0),
        spx.randn_like,
        spx.rand_like,
        lambda x: spx.randint_like(x, 5),
    ],
)
@pytest.mark.parametrize("pending", [False, True])
def test_like_functions_make_their_result_on_the_inputs_device(make, pending):
    x = on1(1.0, 2.0)
    if pending:
        x = x * 2 + 1  # recorded, not computed yet: its device is known from its inputs
    out = make(x)
    assert out.device == DEV1
    assert out.shape == x.shape


def test_like_functions_without_history_and_with_an_explicit_device():
    w = on1(1.0, 2.0).requires_grad_()
    z = spx.zeros_like(w * 3)
    assert not z.requires_grad and z.tolist() == [0.0, 0.0]
    assert spx.zeros_like(w, device=DEV0).device == DEV0
    assert spx.randn_like(w, device=DEV0).device == DEV0


def test_tensors_made_without_a_device_stay_on_the_default_one():
    x = spx.ones(2)
    assert x.zero_().device == DEV0
    assert spx.zeros_like(x).device == DEV0
    assert (x + on1(1.0, 1.0)).device == DEV1  # uncommitted values follow committed ones


def test_random_fills_draw_the_same_numbers_wherever_the_tensor_is():
    spx.manual_seed(3)
    a = spx.zeros(4).normal_()
    spx.manual_seed(3)
    b = on1(0.0, 0.0, 0.0, 0.0).normal_()
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
