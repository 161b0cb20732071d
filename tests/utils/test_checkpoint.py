"""spx.utils.checkpoint against torch.utils.checkpoint: same values and gradients (eagerly and
inside spx.compile), torch's warnings and errors, and a backward program that really
recomputes (jax.checkpoint) instead of keeping the activations."""

import warnings

import jax
import numpy as np
import pytest

import spx
from spx._tensor import program
from spx.utils.checkpoint import checkpoint, checkpoint_sequential
from tests._torch_utils import copy_torch_weights

torch = pytest.importorskip("torch")
tcheck = pytest.importorskip("torch.utils.checkpoint")

X = np.random.default_rng(0).normal(size=(4, 6, 8)).astype(np.float32)


def _model(lib):
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = lib.nn.LayerNorm(8)
            self.up = lib.nn.Linear(8, 32)
            self.down = lib.nn.Linear(32, 8)

        def forward(self, x, scale=1.0):
            return x + self.down(lib.nn.functional.gelu(self.up(self.ln(x)))) * scale

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = lib.nn.ModuleList([Block() for _ in range(3)])
            self.head = lib.nn.Linear(8, 3)

        def forward(self, x, ckpt, reentrant=False):
            for block in self.blocks:
                if ckpt:
                    fn = tcheck.checkpoint if lib is torch else checkpoint
                    if reentrant:
                        x = fn(block, x, use_reentrant=True)
                    else:
                        x = fn(block, x, use_reentrant=False, scale=0.5)
                else:
                    x = block(x) if reentrant else block(x, scale=0.5)
            return self.head(x).pow(2).mean()

    return Net()


def _pair():
    torch.manual_seed(0)
    t = _model(torch)
    s = _model(spx)
    copy_torch_weights(t, s)
    return t, s


def _grads(model, lib, ckpt, reentrant=False):
    x = lib.tensor(X, requires_grad=True)
    loss = model(x, ckpt, reentrant)
    loss.backward()
    out = [float(loss), x.grad.numpy()] + [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    return out


@pytest.mark.parametrize("reentrant", [False, True])
def test_values_and_gradients_equal_torchs_checkpoint(reentrant):
    t, s = _pair()
    expected = _grads(t, torch, True, reentrant)
    got = _grads(s, spx, True, reentrant)
    plain = _grads(s, spx, False, reentrant)
    for g, e, p in zip(got, expected, plain, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g, p, rtol=1e-6, atol=1e-7)


def test_the_backward_program_recomputes_the_region():
    # The compiled backward must contain jax.checkpoint's recomputation: captured from the
    # program that loss.backward() runs.
    _, s = _pair()
    seen = []
    original = program._program

    def capture(key):
        fn = original(key)

        def run(*args):
            seen.append(str(jax.make_jaxpr(fn)(*args)))
            return fn(*args)

        return run

    program._program = capture
    try:
        _grads(s, spx, True)
        with_ckpt = "\n".join(seen)
        seen.clear()
        _grads(s, spx, False)
        without = "\n".join(seen)
    finally:
        program._program = original
    assert with_ckpt.count("checkpoint[") + with_ckpt.count("remat") >= 3  # one per block
    assert "checkpoint[" not in without and "remat" not in without


def test_dropout_inside_draws_the_same_mask_when_recomputed():
    def run(ckpt):
        spx.manual_seed(3)
        layer = spx.nn.Sequential(spx.nn.Linear(8, 8), spx.nn.Dropout(0.5), spx.nn.Tanh())
        x = spx.tensor(X, requires_grad=True)
        y = checkpoint(layer, x, use_reentrant=False) if ckpt else layer(x)
        y.pow(2).sum().backward()
        return [y.numpy(force=True), x.grad.numpy(), layer[0].weight.grad.numpy()]

    # Another mask would differ by O(1); the tolerance is float rounding (5e-7 seen on an
    # H100, where the recomputed block fuses differently).
    for a, b in zip(run(True), run(False), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_compiled_training_loop_with_checkpointed_blocks_matches_torch():
    t, s = _pair()
    losses = {}
    for lib, model in ((torch, t), (spx, s)):
        opt = lib.optim.AdamW(model.parameters(), lr=1e-2)

        def step(model, opt, x):
            opt.zero_grad()
            loss = model(x, True)
            loss.backward()
            opt.step()
            return loss

        if lib is spx:
            step = spx.compile(step)
        x = lib.tensor(X)
        losses[lib.__name__] = [float(step(model, opt, x)) for _ in range(4)]
    np.testing.assert_allclose(losses["spx"], losses["torch"], rtol=1e-5)


def test_checkpoint_sequential_matches_torch():
    torch.manual_seed(1)
    t = torch.nn.Sequential(*[torch.nn.Linear(8, 8) if i % 2 == 0 else torch.nn.Tanh()
                              for i in range(8)])  # fmt: skip
    s = spx.nn.Sequential(*[spx.nn.Linear(8, 8) if i % 2 == 0 else spx.nn.Tanh()
                            for i in range(8)])  # fmt: skip
    copy_torch_weights(t, s)
    out = {}
    for lib, model, fn in ((torch, t, tcheck.checkpoint_sequential),
                           (spx, s, checkpoint_sequential)):  # fmt: skip
        x = lib.tensor(X, requires_grad=True)
        fn(model, 3, x, use_reentrant=False).sum().backward()
        out[lib.__name__] = [x.grad.numpy()] + [p.grad.numpy() for p in model.parameters()]
    for a, b in zip(out["spx"], out["torch"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_torchs_warnings_and_errors():
    for lib, fn in ((torch, tcheck.checkpoint), (spx, checkpoint)):
        layer = lib.nn.Linear(8, 8)
        x = lib.tensor(X)
        with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
            fn(layer, x.requires_grad_())
        with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
            fn(lambda x, scale: x * scale, x, use_reentrant=True, scale=2.0)
        # Reentrant with no input requiring grad: torch warns and the output has no grad.
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            y = fn(layer, lib.tensor(X), use_reentrant=True)
        assert not y.requires_grad, lib.__name__
        # Non-reentrant: the layer's parameters still get gradients.
        fn(layer, lib.tensor(X), use_reentrant=False).sum().backward()
        assert layer.weight.grad is not None, lib.__name__


def test_structured_outputs_and_pass_through_inputs():
    x = spx.tensor(X, requires_grad=True)
    w = spx.nn.Parameter(spx.ones(8))

    def fn(a):
        return {"scaled": a * w, "same": a, "pair": (a.sin(), 3)}

    out = checkpoint(fn, x, use_reentrant=False)
    assert out["same"] is x and out["pair"][1] == 3
    (out["scaled"].sum() + out["pair"][0].sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones_like(X) + np.cos(X), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), X.reshape(-1, 8).sum(0), rtol=1e-5)


def test_a_value_computed_inside_keeps_the_activations_and_says_so():
    layer = spx.nn.Linear(8, 8)

    def fn(a):
        h = layer(a)
        h.sum().item()
        return h.tanh()

    x = spx.tensor(X, requires_grad=True)
    with pytest.warns(UserWarning, match="computed a value while it ran"):
        y = checkpoint(fn, x, use_reentrant=False)
    y.sum().backward()
    expected_x = spx.tensor(X, requires_grad=True)
    layer.zero_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn(expected_x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), expected_x.grad.numpy(), rtol=1e-6)


def test_under_no_grad_it_is_a_plain_call():
    layer = spx.nn.Linear(8, 8)
    with spx.no_grad():
        y = checkpoint(layer, spx.tensor(X), use_reentrant=False)
    assert not y.requires_grad
    np.testing.assert_allclose(y.numpy(), layer(spx.tensor(X)).numpy(force=True), rtol=1e-6)


def test_no_grad_inside_is_a_constant_and_outputs_keep_their_requires_grad():
    results = {}
    for lib, fn in ((torch, tcheck.checkpoint), (spx, checkpoint)):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        c = lib.tensor([5.0, 6.0])

        def f(x, lib=lib, c=c):
            with lib.no_grad():
                y = x * 2  # a constant for autograd
            return y * x, y, c * 3

        out, y, z = fn(f, a * 1, use_reentrant=False)
        out.sum().backward()
        results[lib.__name__] = (a.grad.tolist(), y.requires_grad, z.requires_grad)
    assert results["spx"] == results["torch"] == ([2.0, 4.0], False, False)


def test_returned_objects_keep_identity_views_and_retain_grad():
    results = {}
    for lib, fn in ((torch, tcheck.checkpoint), (spx, checkpoint)):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)

        def f(a):
            b = a * 2
            b.retain_grad()
            return b, b[0], b

        b, row, same = fn(f, x, use_reentrant=False)
        assert same is b, lib.__name__
        row.mul_(10)  # in place through a view of an output
        b.sum().backward()
        results[lib.__name__] = (b.tolist(), x.grad.tolist(), b.grad.tolist())
    assert results["spx"] == results["torch"]


def test_a_backward_through_one_output_leaves_the_others_inputs_grad_none():
    # torch connects b only to the second output: a loss on the first leaves b.grad None.
    grads = []
    for lib, ck in ((torch, torch.utils.checkpoint), (spx, spx.utils.checkpoint)):
        a, b, x = (lib.tensor([v], requires_grad=True) for v in (2.0, 3.0, 1.5))
        first, _ = ck.checkpoint(lambda x, a=a, b=b: (a * x, b * x), x, use_reentrant=False)
        (first * 2).sum().backward()
        grads.append([None if t.grad is None else t.grad.tolist() for t in (a, b, x)])
    assert grads[0] == grads[1] == [[3.0], None, [4.0]]
