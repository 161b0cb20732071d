"""Zero-bubble schedules only pay off if splitting B into I and W costs no extra work.

For a stage of a few Linear + tanh layers, XLA's flop estimates of the compiled programs
satisfy I + W ≈ B, with each half cheaper than B; and the two halves produce exactly what B
produces (the input gradient from I, the weight gradients from W).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import spx
from spx import nn
from spx.distributed.pipelining.runtime.programs import StagePrograms

WIDTH, ROWS, LAYERS = 64, 16, 3


def _stage() -> StagePrograms:
    spx.manual_seed(0)
    layers = []
    for _ in range(LAYERS):
        layers += [nn.Linear(WIDTH, WIDTH), nn.Tanh()]
    # A middle stage: its input needs a gradient (I) and its weights do too (W).
    return StagePrograms(nn.Sequential(*layers), is_first=False, is_last=False, loss_fn=None)


def test_backward_input_plus_weight_costs_one_backward():
    programs = _stage()
    train, frozen = programs.read_params()
    x = jax.random.normal(jax.random.key(1), (ROWS, WIDTH))
    out, _, res, _, _ = programs.forward([], jax.random.key(2), (x,), {}, None)
    inputs = [x] if res.layout[2] else None
    saved = (res, inputs, [])
    grads_out = [jax.random.normal(jax.random.key(3), out.shape)]

    g_in_b, acc_b = programs.backward(saved, grads_out, [jnp.zeros_like(p) for p in train])
    g_in_i, bridge = programs.backward_input(saved, grads_out)
    acc_w = programs.backward_weight(saved, grads_out, bridge, [jnp.zeros_like(p) for p in train])

    # Same numbers: I gives B's input gradient, W gives B's weight gradients.
    np.testing.assert_allclose(g_in_i[0], g_in_b[0], rtol=1e-6, atol=1e-7)
    for w, b in zip(acc_w, acc_b, strict=True):
        np.testing.assert_allclose(w, b, rtol=1e-6, atol=1e-7)

    zeros = [jnp.zeros_like(p) for p in train]
    common = (res, train, frozen, inputs, [], grads_out)
    flops_b = programs.cost("B", *common, zeros)
    flops_i = programs.cost("I", *common)
    flops_w = programs.cost("W", *common, bridge, zeros)
    # Each layer's backward is two matmuls (input and weight gradient) of 2·ROWS·WIDTH² flops.
    assert flops_b >= LAYERS * 2 * 2 * ROWS * WIDTH**2
    assert flops_i < flops_b and flops_w < flops_b
    assert abs(flops_i + flops_w - flops_b) <= 0.03 * flops_b, (flops_i, flops_w, flops_b)


def test_forward_residuals_do_not_copy_the_weights():
    """The weights a backward needs are passed back in, never stored per microbatch."""
    programs = _stage()
    train, _ = programs.read_params()
    x = jax.random.normal(jax.random.key(1), (ROWS, WIDTH))
    _, _, res, _, _ = programs.forward([], jax.random.key(2), (x,), {}, None)
    stored = sum(leaf.size for leaf in res.internal)
    weights = sum(p.size for p in train)
    assert stored < weights  # activations only, no weight copies
    # Per layer JAX keeps tanh's output (also the next matmul's input) and 1 - output.
    assert stored <= 2 * LAYERS * ROWS * WIDTH
