"""``pipeline()`` / ``pipe_split()`` / ``SplitPoint``: splitting one model into stage modules.

The reference is always the unsplit model itself: chaining the stage modules must reproduce
its output (bit for bit when both run op by op) and its gradients, and the pipelining runtime
running the stages must reproduce its loss and ``param.grad``.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pathlib
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.distributed.pipelining import ScheduleInterleaved1F1B, ScheduleLoopedBFS
from spx.distributed.pipelining.pipe import Pipe, pipeline
from spx.distributed.pipelining.split.marker import SplitPoint, pipe_split

_GPT_PATH = pathlib.Path(__file__).parents[3] / "examples" / "gpt.py"
_spec = importlib.util.spec_from_file_location("_spx_example_gpt", _GPT_PATH)
gpt = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = gpt  # dataclasses look their module up there
_spec.loader.exec_module(gpt)

# Small enough that XLA compiles each program in well under a second.
CFG = gpt.GPTConfig(vocab_size=32, block_size=8, n_layer=2, n_head=2, n_embd=16)
BEGIN, END = SplitPoint.BEGINNING, SplitPoint.END


def make_gpt(seed: int = 0) -> gpt.GPT:
    spx.manual_seed(seed)
    return gpt.GPT(CFG)


# The unsplit reference, compiled once for every GPT of the same structure and input shape.
forward_jit = jax.jit(lambda model, x: model(x))


def tokens(seed: int, batch: int = 2) -> jax.Array:
    return spx.as_tensor(
        jax.random.randint(jax.random.key(seed), (batch, CFG.block_size), 0, CFG.vocab_size)
    )


def run_stages(stages: list[nn.Module], *args: object) -> object:
    """Chain stage modules the way the runtime does: a tuple output is the next args."""
    out = stages[0](*args)
    for stage in stages[1:]:
        out = stage(*(out if isinstance(out, tuple) else (out,)))
    return out


def stage_modules(pipe: Pipe) -> list[nn.Module]:
    return [pipe.get_stage_module(i) for i in range(pipe.num_stages)]


class Marked(nn.Module):
    """Three stages marked with pipe_split(); stage 2 reads a value made in stage 0."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 8)
        self.b = nn.Linear(8, 8)
        self.c = nn.Linear(8, 3)

    def forward(self, x: jax.Array) -> jax.Array:
        h0 = spx.tanh(self.a(x))
        pipe_split()
        h1 = spx.tanh(self.b(h0))
        pipe_split()
        return self.c(h1 + h0) * 2.0 + x[:, :3]


@pytest.mark.parametrize("module", ["split.marker", "pipe"])
def test_docstring_examples_run(module: str) -> None:
    mod = importlib.import_module(f"spx.distributed.pipelining.{module}")
    result = doctest.testmod(mod)
    assert result.attempted > 0 and result.failed == 0


# -- splitting and numerics ------------------------------------------------------------------
def test_pipe_split_markers_reproduce_the_model_and_skip_values_pass_through() -> None:
    spx.manual_seed(0)
    model = Marked()
    x = jax.random.normal(jax.random.key(0), (5, 4))
    pipe = pipeline(model, (x,))
    assert pipe.num_stages == 3
    s0, s1, s2 = stage_modules(pipe)
    h0 = s0(x)
    # h0 and x are both read in stage 2: stage 1 passes them through with its own output.
    h1_out = s1(*h0)
    assert len(h0) == 2 and len(h1_out) == 3
    ref = jax.jit(lambda x: model(x))(x)
    np.testing.assert_array_equal(jax.jit(lambda x: run_stages([s0, s1, s2], x))(x), ref)
    np.testing.assert_allclose(pipe(x), model(x).detach(), rtol=1e-6, atol=1e-6)
    # Stage 1 receives the stage-0 activation and the model's input, and hands both on.
    with spx.no_grad():
        ref_h0 = spx.tanh(model.a(x))
    for received in (h0, h1_out):
        # (In whatever order the split hands them on.)
        assert any(
            v.shape == ref_h0.shape and np.allclose(v, ref_h0, rtol=1e-6, atol=1e-6)
            for v in received
        )
        assert any(np.array_equal(v, x) for v in received)
    assert list(s0.state_dict()) == ["a.weight", "a.bias"]
    assert list(s1.state_dict()) == ["b.weight", "b.bias"]
    assert list(s2.state_dict()) == ["c.weight", "c.bias"]


def test_pipe_split_outside_pipeline_changes_nothing() -> None:
    spx.manual_seed(0)
    model = Marked()
    x = jax.random.normal(jax.random.key(0), (5, 4))

    def plain(m: Marked, x: jax.Array) -> jax.Array:
        h0 = spx.tanh(m.a(x))
        return m.c(spx.tanh(m.b(h0)) + h0) * 2.0 + x[:, :3]

    np.testing.assert_array_equal(model(x).detach(), plain(model, x).detach())
    np.testing.assert_array_equal(
        jax.jit(lambda x: model(x))(x), jax.jit(lambda x: plain(model, x))(x)
    )
    g = jax.grad(lambda x: jnp.asarray(model(x).sum()))(x)
    want = jax.grad(lambda x: jnp.asarray(plain(model, x).sum()))(x)
    np.testing.assert_allclose(g, want, rtol=1e-6)
    np.testing.assert_allclose(
        jax.vmap(model)(x[:, None]), jax.vmap(lambda v: plain(model, v))(x[:, None])
    )


@pytest.mark.parametrize(
    "spec, groups",
    [
        ({"blocks.1": BEGIN}, [["embed", "blocks.0"], ["blocks.1", "head"]]),
        (
            # ln_2 runs before the mlp is called, so it stays with the attention.
            {"blocks.0": END, "blocks.1.mlp": BEGIN, "head": BEGIN},
            [
                ["embed", "blocks.0"],
                ["blocks.1.ln_1", "blocks.1.attn", "blocks.1.ln_2"],
                ["blocks.1.mlp"],
                ["head"],
            ],
        ),
    ],
    ids=["2-stages", "4-stages"],
)
def test_gpt_split_spec_outputs_and_state_dict_names(spec: dict, groups: list) -> None:
    model = make_gpt()
    x = tokens(1)
    pipe = pipeline(model, (x,), split_spec=spec)
    assert pipe.num_stages == len(groups)
    stages = stage_modules(pipe)
    # Both sides compiled as one program taking the weights as arguments: the same
    # operations, so the same bits.
    np.testing.assert_array_equal(jax.jit(run_stages)(stages, x), forward_jit(model, x))

    full = list(model.state_dict())
    for stage, prefixes in zip(stages, groups, strict=True):
        keys = list(stage.state_dict())
        want = [k for k in full if any(k.startswith(p + ".") for p in prefixes)]
        assert keys == want  # exactly the original names, in the model's order
        for k in keys:  # the model's own Parameter objects
            assert stage.get_parameter(k) is model.get_parameter(k)
    union = [k for stage in stages for k in stage.state_dict()]
    assert sorted(union) == sorted(full) and len(union) == len(full)
    # The model is left as it was: no wrapped forward stays behind.
    assert all("forward" not in m.__dict__ for m in model.modules())


def test_markers_inside_jitted_helpers_are_found() -> None:
    spx.manual_seed(0)
    lin1, lin2 = nn.Linear(4, 4), nn.Linear(4, 2)

    @jax.jit
    def helper(h: jax.Array) -> jax.Array:
        h = spx.sin(h)
        pipe_split()
        return h * 3.0

    class Jitted(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.l1, self.l2 = lin1, lin2

        def forward(self, x: jax.Array) -> jax.Array:
            return self.l2(helper(self.l1(x)))

    model = Jitted()
    x = jnp.arange(12.0).reshape(3, 4) / 10
    # The helper's trace is cached (with its marker) before pipeline() reuses it. Without
    # no_grad the eager call raises: a jax.jit function given a Tensor that requires grad
    # would drop its gradient (tests/tensor/test_convert.py).
    with spx.no_grad():
        model(x)
    pipe = pipeline(model, (x,))
    assert pipe.num_stages == 2
    assert list(pipe.get_stage_module(0).state_dict()) == ["l1.weight", "l1.bias"]
    with spx.no_grad():
        np.testing.assert_allclose(pipe(x), model(x), rtol=1e-6, atol=1e-6)


def test_kwargs_and_non_array_arguments() -> None:
    spx.manual_seed(0)

    class KW(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.l1, self.l2 = nn.Linear(3, 3), nn.Linear(3, 3)

        def forward(self, x: jax.Array, *, bias: jax.Array, times: int = 1) -> jax.Array:
            for _ in range(times):
                x = self.l1(x)
            pipe_split()
            return self.l2(x) + bias

    model = KW()
    x, bias = jnp.ones((2, 3)), jnp.arange(3.0)
    pipe = pipeline(model, (x,), {"bias": bias, "times": 2})
    np.testing.assert_array_equal(
        pipe(x, bias=bias, times=2), model(x, bias=bias, times=2).detach()
    )
    with pytest.raises(ValueError, match="traced the model with 2"):
        pipe.get_stage_module(0)(x, bias=bias, times=3)
    with pytest.raises(
        ValueError, match=r"input 0 is float32\[4, 3\].*traced it as float32\[2, 3\]"
    ):
        pipe.get_stage_module(0)(jnp.ones((4, 3)), bias=bias, times=2)


def test_buffers_and_unused_parameters_are_kept_under_their_names() -> None:
    spx.manual_seed(0)

    class WithState(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(3, 3)
            self.spare = nn.Linear(3, 1)  # never called
            self.norm = nn.BatchNorm1d(3)
            self.register_buffer("scale", jnp.full((3,), 2.0), persistent=False)

        def forward(self, x: jax.Array) -> jax.Array:
            h = self.a(x)
            pipe_split()
            return self.norm(h) * self.scale

    model = WithState().eval()
    x = jax.random.normal(jax.random.key(0), (4, 3))
    pipe = pipeline(model, (x,))
    s0, s1 = stage_modules(pipe)
    assert list(s0.state_dict()) == ["a.weight", "a.bias", "spare.weight", "spare.bias"]
    assert list(s1.state_dict()) == [k for k in model.state_dict() if k.startswith("norm.")]
    assert [k for k, _ in s1.named_buffers()] == [k for k, _ in model.named_buffers()]
    np.testing.assert_allclose(pipe(x), model(x).detach(), rtol=1e-6, atol=1e-6)
    # No marker at all: one stage holding everything.
    whole = pipeline(nn.Linear(3, 2), (x,))
    assert whole.num_stages == 1
    assert list(whole.get_stage_module(0).state_dict()) == ["weight", "bias"]


# -- gradients -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gpt_reference() -> tuple:
    """Loss, gradients and logits of the unsplit GPT on a batch of 4 (compiled once)."""
    model = make_gpt(3)
    x, y = tokens(4, batch=4), tokens(5, batch=4)
    (loss, logits), g = jax.jit(
        spx.value_and_grad(lambda m: (gpt.lm_loss(m(x), y), m(x)), has_aux=True)
    )(model)
    return x, y, loss, logits, {k: p.data for k, p in g.named_parameters()}


def test_gradients_through_chained_stages_equal_the_model(gpt_reference: tuple) -> None:
    x, y, ref_loss, _, ref = gpt_reference
    model = make_gpt(3)
    pipe = pipeline(model, (x,), split_spec={"blocks.1": BEGIN, "head": BEGIN})
    assert pipe.num_stages == 3
    stages = stage_modules(pipe)
    loss, g = jax.jit(spx.value_and_grad(lambda ss: gpt.lm_loss(run_stages(ss, x), y)))(stages)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-6)
    got = {k: p.data for stage_g in g for k, p in stage_g.named_parameters()}
    assert sorted(got) == sorted(ref)
    for k in ref:
        np.testing.assert_allclose(got[k], ref[k], rtol=1e-5, atol=1e-6, err_msg=k)


# -- the pipelining runtime, all stages on one rank --------------------------------------------
def test_runtime_interleaved_and_looped_bfs_match_the_model(gpt_reference: tuple) -> None:
    x, y, ref_loss, ref_out, ref = gpt_reference
    model = make_gpt(3)
    pipe = pipeline(model, (x[:2],), split_spec={"blocks.1": BEGIN})
    stages = [pipe.build_stage(i, "cpu") for i in range(pipe.num_stages)]
    # Both schedules run the same stages (and so the same compiled programs).
    for cls in (ScheduleInterleaved1F1B, ScheduleLoopedBFS):
        model.zero_grad()
        losses: list = []
        out = cls(stages, 2, loss_fn=gpt.lm_loss).step(x, target=y, losses=losses)
        np.testing.assert_allclose(np.mean(losses), ref_loss, rtol=1e-5)
        np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-5)
        for k, p in model.named_parameters():  # grads landed on the model's own Parameters
            np.testing.assert_allclose(p.grad, ref[k], rtol=1e-5, atol=4e-5, err_msg=k)


def test_runtime_passes_skip_values_between_stages() -> None:
    spx.manual_seed(0)
    model = Marked()
    x = jax.random.normal(jax.random.key(2), (4, 4))
    y = jax.random.normal(jax.random.key(3), (4, 3))

    def loss_fn(out: jax.Array, target: jax.Array) -> jax.Array:
        return ((out - target) ** 2).mean()

    ref_loss, ref_g = jax.jit(spx.value_and_grad(lambda m: loss_fn(m(x), y)))(model)
    pipe = pipeline(model, (x[:2],))
    stages = [pipe.build_stage(i, "cpu") for i in range(3)]
    losses: list = []
    ScheduleLoopedBFS(stages, 2, loss_fn=loss_fn).step(x, target=y, losses=losses)
    np.testing.assert_allclose(np.mean(losses), ref_loss, rtol=1e-5)
    for k, p in ref_g.named_parameters():
        np.testing.assert_allclose(model.get_parameter(k).grad, p.data, rtol=1e-5, atol=1e-6)


def test_stages_run_on_another_device_with_closed_over_constants() -> None:
    # A constant the forward closes over is committed to device 0; the stages run on device 1
    # and the model's parameters follow them there.
    mask = jax.device_put(jnp.array([1.0, 0.0, 2.0]), jax.devices()[0])
    spx.manual_seed(0)

    class Masked(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 3))

        def forward(self, x: jax.Array) -> jax.Array:
            return self.net(x * mask) * mask

    wrapped = Masked()
    x = jax.random.normal(jax.random.key(0), (4, 3))
    y = jnp.zeros((4, 3))

    def loss_fn(out: jax.Array, target: jax.Array) -> jax.Array:
        return ((out - target) ** 2).mean()

    ref_loss, ref_g = jax.jit(spx.value_and_grad(lambda m: loss_fn(m(x), y)))(wrapped)
    pipe = pipeline(wrapped, (x[:2],), split_spec={"net.2": BEGIN})
    device = jax.devices()[1]
    stages = [pipe.build_stage(i, device) for i in range(2)]
    losses: list = []
    out = ScheduleInterleaved1F1B(stages, 2, loss_fn=loss_fn).step(x, target=y, losses=losses)
    assert out.device == device
    np.testing.assert_allclose(np.mean(losses), ref_loss, rtol=1e-5)
    for k, p in ref_g.named_parameters():
        got = wrapped.get_parameter(k)
        assert got.device == device  # the model's own Parameters moved
        np.testing.assert_allclose(np.asarray(got.grad), np.asarray(p.data), rtol=1e-5, atol=1e-6)


# -- checkpoints -----------------------------------------------------------------------------
def test_full_model_checkpoint_loads_into_each_stage(tmp_path: pathlib.Path) -> None:
    x = tokens(1)
    trained, fresh = make_gpt(1), make_gpt(2)
    full_sd = trained.state_dict()
    pipe = pipeline(fresh, (x,), split_spec={"blocks.1": BEGIN})
    for i in range(pipe.num_stages):
        stage = pipe.get_stage_module(i)
        own = stage.state_dict()
        result = stage.load_state_dict({k: v for k, v in full_sd.items() if k in own})
        assert result.missing_keys == [] and result.unexpected_keys == []
    # Parameter values are read live: the stages now compute the checkpoint's model.
    got = jax.jit(run_stages)(stage_modules(pipe), x)
    np.testing.assert_array_equal(got, forward_jit(trained, x))


def test_serialization_partial_load_into_stage_modules(tmp_path: pathlib.Path) -> None:
    serialization = pytest.importorskip("spx.serialization")
    x = tokens(1)
    trained, fresh = make_gpt(1), make_gpt(2)
    path = tmp_path / "full.safetensors"
    serialization.save(trained.state_dict(), path)
    pipe = pipeline(fresh, (x,), split_spec={"blocks.1": BEGIN, "head": BEGIN})
    for i in range(pipe.num_stages):
        serialization.load_checkpoint(pipe.get_stage_module(i), path, partial=True)
    for k, v in trained.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[k], v)


# -- errors ----------------------------------------------------------------------------------
def test_unknown_split_path_lists_nearby_names_and_restores_the_model() -> None:
    model = make_gpt()
    x = tokens(1)
    with pytest.raises(ValueError, match=r"no submodule 'blocks\.7'.*'blocks\.0'"):
        pipeline(model, (x,), split_spec={"blocks.0": END, "blocks.7": BEGIN})
    with pytest.raises(ValueError, match=r"'embed\.wte\.weight' is a parameter"):
        pipeline(model, (x,), split_spec={"embed.wte.weight": BEGIN})
    with pytest.raises(TypeError, match=r"SplitPoint\.BEGINNING or SplitPoint\.END"):
        pipeline(model, (x,), split_spec={"blocks.0": "end"})
    assert all("forward" not in m.__dict__ for m in model.modules())
    assert pipeline(model, (x,), split_spec={"blocks.0": END}).num_stages == 2


def test_random_forward_is_rejected_until_eval() -> None:
    spx.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Linear(4, 2))
    x = jnp.ones((2, 4))
    key_before = spx.random.get_key()
    with pytest.raises(RuntimeError, match=r"draws random numbers.*model\.eval\(\)"):
        pipeline(model, (x,), split_spec={"2": BEGIN})
    assert spx.random.get_key() is key_before
    pipe = pipeline(model.eval(), (x,), split_spec={"2": BEGIN})
    np.testing.assert_allclose(pipe(x), model(x).detach(), rtol=1e-6, atol=1e-6)


def test_buffer_updates_are_rejected_until_eval() -> None:
    spx.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    x = jax.random.normal(jax.random.key(0), (6, 3))
    mean_before = model[1].running_mean
    with pytest.raises(RuntimeError, match=r"assigns buffer '1\.running_mean'.*model\.eval\(\)"):
        pipeline(model, (x,), split_spec={"2": BEGIN})
    assert model[1].running_mean is mean_before
    pipe = pipeline(model.eval(), (x,), split_spec={"2": BEGIN})
    assert list(pipe.get_stage_module(0).state_dict()) == list(model.state_dict())[:7]
    np.testing.assert_allclose(pipe(x), model(x).detach(), rtol=1e-6, atol=1e-6)


def test_empty_stage_is_rejected() -> None:
    model = make_gpt()
    x = tokens(1)
    with pytest.raises(ValueError, match=r"stage 1 of 3 would be empty.*'blocks\.0'.*'blocks\.1'"):
        pipeline(model, (x,), split_spec={"blocks.0": END, "blocks.1": BEGIN})
    with pytest.raises(ValueError, match="stage 0 of 2 would be empty"):
        pipeline(model, (x,), split_spec={"embed": BEGIN})


def test_marker_inside_control_flow_is_rejected() -> None:
    class Cond(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.l = nn.Linear(2, 2)

        def forward(self, x: jax.Array) -> jax.Array:
            def branch(h: jax.Array) -> jax.Array:
                pipe_split()
                return h

            return jax.lax.cond(x.sum() > 0, branch, lambda h: h, self.l(x))

    with pytest.raises(ValueError, match="inside a `cond`"):
        pipeline(Cond(), (jnp.ones((1, 2)),))


def test_parameter_used_by_two_stages_is_rejected() -> None:
    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Linear(3, 3, bias=False)

        def forward(self, x: jax.Array) -> jax.Array:
            h = self.emb(x)
            pipe_split()
            return h @ self.emb.weight

    with pytest.raises(
        NotImplementedError, match=r"'emb\.weight' is used by pipeline stages 0 and 1"
    ):
        pipeline(Tied(), (jnp.ones((2, 3)),))


def test_bad_stage_index_and_arguments() -> None:
    model = make_gpt()
    x = tokens(1)
    pipe = pipeline(model, (x,), split_spec={"blocks.1": BEGIN})
    with pytest.raises(ValueError, match="Invalid stage index 2"):
        pipe.get_stage_module(2)
    with pytest.raises(TypeError, match=r"wrap a single input: pipeline\(model, \(x,\)"):
        pipeline(model, x)
    with pytest.raises(NotImplementedError, match="split_spec"):
        pipeline(model, (x,), split_policy=lambda gm: gm)
    with pytest.raises(ValueError, match=r"stage 1: input 0 is float32\[2, 4, 16\]"):
        pipe.get_stage_module(1)(jnp.ones((2, 4, 16)))
    with pytest.raises(TypeError, match="stage 1 takes 1 inputs, got 2"):
        pipe.get_stage_module(1)(jnp.ones((2, 8, 16)), jnp.ones((2, 8, 16)))
    model.bfloat16()  # the program was traced for float32 parameters
    with pytest.raises(ValueError, match=r"'embed\.(wte|wpe)\.weight' is bfloat16\["):
        pipe.get_stage_module(0)(x)
