"""Activation recomputation per stage: same numbers, fewer residuals kept between F and B."""

import jax
import jax.numpy as jnp
import numpy as np

import spx
from spx import nn
from spx.distributed.pipelining import PipelineStage, ScheduleInterleaved1F1B

D = 32


def _block(seed: int) -> nn.Module:
    spx.manual_seed(seed)
    return nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D), nn.Tanh())


def _loss(out, target):
    return ((out - target) ** 2).mean()


def _run(recompute: bool):
    blocks = [_block(s) for s in range(2)]
    stages = [
        PipelineStage(b, i, 2, spx.device("cpu"), recompute=recompute) for i, b in enumerate(blocks)
    ]
    schedule = ScheduleInterleaved1F1B(stages, 2, loss_fn=_loss)
    x = jax.random.normal(jax.random.key(0), (4, D))
    t = jax.random.normal(jax.random.key(1), (4, D))
    losses = []
    schedule.step(x, target=t, losses=losses)
    return blocks, stages, x, t, losses


def test_recompute_gives_the_reference_gradients():
    blocks, _, x, t, losses = _run(recompute=True)
    reference = nn.Sequential(*[_block(s) for s in range(2)])
    ref_loss = spx.backward(lambda m: _loss(m(x), t), reference)
    np.testing.assert_allclose(np.mean([float(v) for v in losses]), float(ref_loss), rtol=1e-6)
    got = [p.grad for b in blocks for p in b.parameters()]
    for g, p in zip(got, reference.parameters(), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(p.grad), rtol=1e-5, atol=1e-6)


def test_recompute_keeps_only_the_stage_inputs():
    def residual_bytes(recompute: bool) -> int:
        _, stages, x, _, _ = _run(recompute)
        stage = stages[0]
        stage._begin_step()
        stage.forward_one_chunk(0, (x[:2],), {}, None, train=True)
        vjp = stage._residuals[0]
        return sum(
            leaf.nbytes for leaf in jax.tree_util.tree_leaves(vjp) if isinstance(leaf, jax.Array)
        )

    full, recomputed = residual_bytes(False), residual_bytes(True)
    # The (2, 4*D) hidden activations are no longer stored; parameters and inputs still are.
    assert recomputed < full
    assert full - recomputed >= 2 * 4 * D * jnp.dtype(jnp.float32).itemsize
