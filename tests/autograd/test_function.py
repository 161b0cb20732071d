"""spx.autograd.Function against torch.autograd.Function: the same class bodies (written once,
run with either library) give the same outputs and gradients, eagerly and inside spx.compile,
and the same errors for bad gradients."""

import numpy as np
import pytest

import spx
from spx import nn
from spx._tensor import program
from tests._torch_utils import copy_torch_weights

torch = pytest.importorskip("torch")


def _functions(lib):
    """Custom Functions written the torch way, over ``lib`` (torch or spx)."""

    class Exp(lib.autograd.Function):  # saves its output
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    class GradReverse(lib.autograd.Function):  # domain adaptation's gradient reversal layer
        @staticmethod
        def forward(ctx, x, lambd):
            ctx.lambd = lambd
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad):
            return grad.neg() * ctx.lambd, None

    class StraightThroughRound(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.round()

        @staticmethod
        def backward(ctx, grad):
            return grad

    class MulAdd(lib.autograd.Function):  # two tensor inputs, two outputs, needs_input_grad
        @staticmethod
        def forward(ctx, a, b, scale=2.0):
            ctx.save_for_backward(a, b)
            ctx.scale = scale
            return a * b * scale, a + b

        @staticmethod
        def backward(ctx, g_prod, g_sum):
            a, b = ctx.saved_tensors
            ga = gb = None
            if ctx.needs_input_grad[0]:
                ga = g_prod * b * ctx.scale + g_sum
            if ctx.needs_input_grad[1]:
                gb = g_prod * a * ctx.scale + g_sum
            return ga, gb, None

    class Square(lib.autograd.Function):  # torch 2's setup_context style
        @staticmethod
        def forward(x):
            return x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    class ArgmaxToo(lib.autograd.Function):  # a non-differentiable output
        @staticmethod
        def forward(ctx, x):
            idx = x.argmax(-1)
            ctx.mark_non_differentiable(idx)
            return x * 3, idx

        @staticmethod
        def backward(ctx, grad, grad_idx):
            return grad * 3

    class KeepsTensorOnCtx(lib.autograd.Function):  # ctx.x = x instead of save_for_backward
        @staticmethod
        def forward(ctx, x):
            ctx.x = x
            return x.sin()

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.x.cos()

    class Broadcasting(lib.autograd.Function):  # a gradient larger than its input: summed
        @staticmethod
        def forward(ctx, bias, x):
            return x + bias

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    return {f.__name__: f for f in (Exp, GradReverse, StraightThroughRound, MulAdd, Square,
                                    ArgmaxToo, KeepsTensorOnCtx, Broadcasting)}  # fmt: skip


X = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
Y = np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32)
B = np.random.default_rng(2).normal(size=(4,)).astype(np.float32)


def _program(lib, fns, name):
    """Outputs and input gradients of a small computation through Function ``name``."""
    x = lib.tensor(X, requires_grad=True)
    y = lib.tensor(Y, requires_grad=True)
    f = fns.get(name)
    if name == "GradReverse":
        out = f.apply(x.sin(), 0.7) * y
    elif name == "MulAdd":
        p, s = f.apply(x, y, scale=3.0)
        out = p.tanh() + s * s
    elif name == "MulAdd-one-input":
        p, s = fns["MulAdd"].apply(x, y.detach(), 2.0)
        out = p + s
    elif name == "ArgmaxToo":
        v, idx = f.apply(x)
        assert not idx.requires_grad and v.requires_grad
        out = v * (idx.float().unsqueeze(-1) + 1)
    elif name == "Broadcasting":
        bias = lib.tensor(B, requires_grad=True)
        out = f.apply(bias, x) * y
        out.sum().backward()
        return [out, bias.grad, x.grad]
    else:
        out = f.apply(x * 1.5) * y
    out.pow(2).sum().backward()
    return [out, x.grad, y.grad]


NAMES = ["Exp", "GradReverse", "StraightThroughRound", "MulAdd", "MulAdd-one-input", "Square",
         "ArgmaxToo", "KeepsTensorOnCtx", "Broadcasting"]  # fmt: skip


def _np(t):
    return None if t is None else t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


@pytest.mark.parametrize("name", NAMES)
def test_eager_matches_torch(name):
    expected = _program(torch, _functions(torch), name)
    got = _program(spx, _functions(spx), name)
    for g, e in zip(got, expected, strict=True):
        if e is None:
            assert g is None
        else:
            np.testing.assert_allclose(_np(g), _np(e), rtol=1e-5, atol=1e-6)


def test_a_number_on_ctx_that_changes_is_honoured_in_eager_steps():
    grads = {}
    for lib in (torch, spx):
        rev = _functions(lib)["GradReverse"]
        x = lib.ones(3, requires_grad=True)
        for lambd in (0.5, 2.0, 0.25):
            rev.apply(x, lambd).sum().backward()
        grads[lib.__name__] = x.grad.tolist()
    assert grads["spx"] == grads["torch"] == [-2.75] * 3


def test_no_grad_and_inputs_without_grad_return_plain_results():
    fns = _functions(spx)
    x = spx.tensor(X)
    assert not fns["Exp"].apply(x).requires_grad
    with spx.no_grad():
        assert not fns["Exp"].apply(spx.tensor(X, requires_grad=True)).requires_grad


def test_a_training_loop_with_a_custom_function_matches_torch_inside_spx_compile():
    losses = {}
    torch.manual_seed(0)
    torch_model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 1))
    spx_model = spx.nn.Sequential(spx.nn.Linear(4, 8), spx.nn.Linear(8, 1))
    copy_torch_weights(torch_model, spx_model)  # before torch trains its copy
    for lib in (torch, spx):
        fns = _functions(lib)
        model = spx_model if lib is spx else torch_model
        opt = lib.optim.SGD(model.parameters(), lr=0.1)

        def step(model, opt, x, y, lambd, fns=fns):
            opt.zero_grad()
            hidden = fns["GradReverse"].apply(model[0](x), lambd)
            loss = (fns["Square"].apply(model[1](hidden) - y)).mean()
            loss.backward()
            opt.step()
            return loss

        if lib is spx:
            step = spx.compile(step)
        x, y = lib.tensor(X), lib.tensor(Y[:, :1])
        # lambd changes every step: spx.compile traces it, and ctx carries the traced value.
        losses[lib.__name__] = [float(step(model, opt, x, y, 0.1 * k)) for k in range(5)]
    np.testing.assert_allclose(losses["spx"], losses["torch"], rtol=1e-5)


def _bad(lib, backward):
    class Bad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, n):
            return x * n

    Bad.backward = staticmethod(backward)
    x = lib.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        Bad.apply(x, 2).sum().backward()
    return str(info.value)


@pytest.mark.parametrize(
    "backward",
    [
        lambda ctx, g: g,  # one gradient for two inputs
        lambda ctx, g: (g, g),  # a gradient for the int
        lambda ctx, g: (g[:1], None),  # a shape that does not broadcast back
        lambda ctx, g: (g[:, :2], None),
    ],
)
def test_bad_gradients_raise_torchs_errors(backward):
    assert _bad(spx, backward) == _bad(torch, backward)


@pytest.mark.parametrize("n_grads", [2, 3])
@pytest.mark.parametrize("keyword", [False, True])
def test_gradients_are_counted_per_given_argument_as_in_torch(n_grads, keyword):
    # torch: one gradient per argument given (keywords included), defaults not given take none.
    def outcome(lib):
        class Scaled(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b, scale=2.0):
                return a * b * scale

            @staticmethod
            def backward(ctx, g):
                return (g,) * n_grads

        x = lib.ones(2, requires_grad=True)
        out = Scaled.apply(x, x, scale=3.0) if keyword else Scaled.apply(x, x)
        try:
            out.sum().backward()
        except RuntimeError as e:
            return str(e)
        return x.grad.tolist()

    assert outcome(spx) == outcome(torch)


def test_torchs_errors_for_missing_methods_and_legacy_calls():
    for lib in (torch, spx):

        class NoForward(lib.autograd.Function):
            pass

        class NoBackward(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

        with pytest.raises(NotImplementedError, match="must implement the forward"):
            NoForward.apply(lib.ones(1, requires_grad=True))
        with pytest.raises(NotImplementedError, match="must implement either the backward"):
            NoBackward.apply(lib.ones(1, requires_grad=True)).sum().backward()
        with pytest.raises(RuntimeError, match="Legacy autograd function"):
            NoBackward()(lib.ones(1))


def test_an_unhashable_ctx_value_names_itself_and_the_fix():
    class KeepsBuffer(spx.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.raw = bytearray(b"xy")  # neither a tensor, a pytree of them, nor hashable
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match=r"ctx.raw = bytearray.*pass the value as a tensor"):
        KeepsBuffer.apply(spx.ones(2, requires_grad=True))


def _scaled_by(lib, where):
    """A Function whose backward reads a scale from ``where`` ("ctx-list", "class")."""

    class Scale(lib.autograd.Function):
        factor = 1.0

        @staticmethod
        def forward(ctx, x, ys):
            ctx.ys = ys  # a list of tensors on ctx (torch allows any object)
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g * ctx.ys[0] * Scale.factor, None

    return Scale


def test_tensors_in_containers_on_ctx_and_class_attributes_are_read_each_call():
    # A list of tensors on ctx must be an input of the compiled backward (not a constant that
    # recompiles every step), and a class attribute the backward reads (a schedule) must be
    # its current value, not the one of the first trace.
    grads = {}
    for lib in (torch, spx):
        fn = _scaled_by(lib, "class")
        x = lib.ones(2, requires_grad=True)
        for step in range(3):
            fn.factor = 1.0 / (step + 1)
            fn.apply(x, [lib.full((2,), float(step + 1))]).sum().backward()
        grads[lib.__name__] = x.grad.tolist()
    assert grads["spx"] == pytest.approx(grads["torch"])
    fn = _scaled_by(spx, "class")
    x = spx.ones(2, requires_grad=True)
    for _ in range(2):  # the first call has no .grad to accumulate into: its own program
        fn.apply(x, [spx.full((2,), 1.0)]).sum().backward()
    before = len(program._PROGRAMS)
    for step in range(3):
        fn.apply(x, [spx.full((2,), float(step))]).sum().backward()
    assert len(program._PROGRAMS) == before  # one program serves every value


def test_complex_inputs_get_torchs_gradients():
    c0 = np.array([1 - 2j, 0.5 + 1j], np.complex64)
    grads = {}
    for lib in (torch, spx):

        class MulConst(lib.autograd.Function):
            @staticmethod
            def forward(ctx, z, c):
                ctx.save_for_backward(c)
                return z * c

            @staticmethod
            def backward(ctx, g):
                (c,) = ctx.saved_tensors
                return g * c.conj(), None

        z = lib.tensor(np.array([2 + 1j, -1 + 3j], np.complex64), requires_grad=True)
        MulConst.apply(z, lib.tensor(c0)).abs().sum().backward()
        grads[lib.__name__] = z.grad.numpy()
    np.testing.assert_allclose(grads["spx"], grads["torch"], rtol=1e-6)


def test_trailing_none_gradients_and_signed_zero_constants_as_in_torch():
    results = {}
    for lib in (torch, spx):

        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, s):
                ctx.s = s
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2 * ctx.s, None, None  # torch accepts extra trailing Nones

        out = []
        for s in (0.0, -0.0):  # equal as keys of a dict, different gradients
            x = lib.ones(2, requires_grad=True)
            Twice.apply(x, s).sum().backward()
            out.append([np.copysign(1.0, v) for v in x.grad.tolist()])
        results[lib.__name__] = out
    assert results["spx"] == results["torch"] == [[1.0, 1.0], [-1.0, -1.0]]


def test_mark_dirty_is_refused_with_the_fix():
    class InPlace(spx.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x

    with pytest.raises(NotImplementedError, match=r"x\.clone"):
        InPlace.apply(spx.ones(2, requires_grad=True))


def test_layers_inside_a_function_keep_their_parameters_out_of_its_graph():
    # As in torch: forward runs without recording, so a parameter used only inside forward
    # gets no gradient; the Function's backward decides every input's gradient.
    layer = nn.Linear(2, 2)

    class Through(spx.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return layer(x)

        @staticmethod
        def backward(ctx, g):
            return g

    x = spx.ones(1, 2, requires_grad=True)
    Through.apply(x).sum().backward()
    assert layer.weight.grad is None
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((1, 2), np.float32))


def test_a_none_gradient_leaves_grad_none_as_in_torch():
    # backward returns None for b: torch's engine gives b no gradient at all, so an optimizer
    # with momentum or weight decay skips it.
    def run(lib):
        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * 2, b * 3

            @staticmethod
            def backward(ctx, ga, gb):
                return ga * 2, None

        a = lib.ones(2, requires_grad=True)
        b = lib.ones(2, requires_grad=True)
        oa, ob = Twice.apply(a, b)
        (oa.sum() + ob.sum()).backward()
        loss = sum(o.sum() for o in Twice.apply(a, b))
        ga, gb = lib.autograd.grad(loss, [a, b], allow_unused=True)
        return a.grad, b.grad, ga, gb

    got, want = run(spx), run(torch)
    assert want[1] is None and want[3] is None
    assert got[1] is None and got[3] is None
    np.testing.assert_allclose(np.asarray(got[0]), want[0].numpy())
    np.testing.assert_allclose(np.asarray(got[2]), want[2].numpy())
