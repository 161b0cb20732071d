"""spx.compile returns fresh gradients packed: p.grad must still read as torch's, however used."""

import numpy as np
import pytest

import spx
from spx import nn
from tests._torch_utils import copy_torch_weights

torch = pytest.importorskip("torch")


def _pair(mixed=False):
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    s = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    copy_torch_weights(t, s)
    if mixed:  # two bfloat16 parameters as well: a second packed buffer
        t, s = _Scaled(t, torch), _Scaled(s, spx)
    return t, s


class _Scaled:
    """``net(x) * scale + shift`` with ``scale``, ``shift`` in bfloat16 (for torch or spx)."""

    def __new__(cls, net, lib):
        base = torch.nn.Module if lib is torch else nn.Module

        class Scaled(base):
            def __init__(self):
                super().__init__()
                self.net = net
                values = np.array([0.5, -1.5, 2.0], np.float32)
                make = torch.tensor if lib is torch else spx.tensor
                self.scale = (torch.nn if lib is torch else nn).Parameter(
                    make(values).to(lib.bfloat16)
                )
                self.shift = (torch.nn if lib is torch else nn).Parameter(
                    make(values * 0.1).to(lib.bfloat16)
                )

            def forward(self, x):
                return self.net(x) * self.scale.float() + self.shift.float()

        return Scaled()


def _data():
    rng = np.random.default_rng(1)
    return rng.standard_normal((5, 4)).astype(np.float32), rng.standard_normal((5, 3)).astype(
        np.float32
    )


def _loss(model, x, y):
    return ((model(x) - y) ** 2).mean()


def _tolerances(mixed):
    # With bfloat16 parameters (8 bits of mantissa, rounded at other points than torch's) every
    # value drifts by up to ~1% over the steps; a misplaced slice would be off by far more.
    return dict(rtol=2e-2, atol=1e-3) if mixed else dict(rtol=1e-5, atol=1e-6)


def _assert_grads(t, s, mixed=False):
    for (name, tp), sp in zip(t.named_parameters(), s.parameters(), strict=True):
        np.testing.assert_allclose(
            np.asarray(sp.grad.float()), tp.grad.float().numpy(), err_msg=name, **_tolerances(mixed)
        )


@pytest.mark.parametrize("mixed", [False, True])
def test_packed_gradients_read_as_torch_through_every_use(mixed):
    t, s = _pair(mixed)
    x, y = _data()
    tx, ty, sx, sy = torch.from_numpy(x), torch.from_numpy(y), spx.tensor(x), spx.tensor(y)
    t_opt = torch.optim.SGD(t.parameters(), lr=0.1, momentum=0.9)
    s_opt = spx.optim.SGD(s.parameters(), lr=0.1, momentum=0.9)

    @spx.compile
    def step(model, opt, x, y):
        opt.zero_grad()
        loss = _loss(model, x, y)
        loss.backward()
        opt.step()
        return loss

    @spx.compile
    def accumulate(model, x, y):
        _loss(model, x, y).backward()

    def t_step():
        t_opt.zero_grad()
        _loss(t, tx, ty).backward()
        t_opt.step()

    # Steps whose gradients nobody reads (each zero_grad() discards the last ones unread).
    for _ in range(3):
        step(s, s_opt, sx, sy)
        t_step()
    # A compiled step that reads them (accumulation), twice.
    for _ in range(2):
        accumulate(s, sx, sy)
        _loss(t, tx, ty).backward()
    _assert_grads(t, s, mixed)
    # Eager code on gradients fresh from a compiled step (clipping), then more steps.
    step(s, s_opt, sx, sy)
    t_step()
    s_norm = spx.nn.utils.clip_grad_norm_(s.parameters(), 0.05)
    t_norm = torch.nn.utils.clip_grad_norm_(t.parameters(), 0.05)
    np.testing.assert_allclose(float(s_norm), float(t_norm), **_tolerances(mixed))
    _assert_grads(t, s, mixed)
    s_opt.step()
    t_opt.step()
    step(s, s_opt, sx, sy)
    t_step()
    _assert_grads(t, s, mixed)
    for tp, sp in zip(t.parameters(), s.parameters(), strict=True):
        np.testing.assert_allclose(
            np.asarray(sp.detach().float()), tp.detach().float().numpy(), **_tolerances(mixed)
        )
    if mixed:  # both dtype groups were packed
        assert len(next(iter(step._programs.values())).record["packed"]) == 2


def test_fresh_gradients_leave_the_program_as_one_buffer():
    # The point of packing (see spx/_compile/packing.py): 4 gradients, one output buffer.
    _, s = _pair()
    x, y = _data()
    opt = spx.optim.AdamW(s.parameters())

    @spx.compile
    def step(model, opt, x, y):
        opt.zero_grad()
        _loss(model, x, y).backward()
        opt.step()

    for _ in range(2):
        step(s, opt, spx.tensor(x), spx.tensor(y))
    # Two programs: the first step's (no gradients, no optimizer state yet) and the rest's.
    assert len(step._programs) == 2
    for program in step._programs.values():
        (group,) = program.record["packed"]
        _positions, shapes, _avals = group
        assert sorted(shapes) == sorted(tuple(p.shape) for p in s.parameters())
    assert {p.grad.shape for p in s.parameters()} == {p.shape for p in s.parameters()}


def test_a_gradient_kept_by_the_step_is_not_packed_and_stays_right():
    # A step that accumulates into existing gradients reads them: those are donated inputs,
    # paired with their outputs, and are not packed.
    t, s = _pair()
    x, y = _data()

    @spx.compile
    def accumulate(model, x, y):
        _loss(model, x, y).backward()

    for _ in range(3):
        accumulate(s, spx.tensor(x), spx.tensor(y))
        _loss(t, torch.from_numpy(x), torch.from_numpy(y)).backward()
    _assert_grads(t, s)
    # The first call's gradients were None (packed); the later calls read them (not packed).
    first, later = accumulate._programs.values()
    assert len(first.record["packed"]) == 1 and later.record["packed"] == ()


def test_a_separately_compiled_update_reads_the_packed_gradients():
    # The forward/backward and the optimizer step compiled apart (and a grad-norm function):
    # the second program takes the first one's packed gradients as its inputs.
    t, s = _pair()
    x, y = _data()
    t_opt = torch.optim.Adam(t.parameters(), lr=0.01)
    s_opt = spx.optim.Adam(s.parameters(), lr=0.01)

    @spx.compile
    def forward_backward(model, opt, x, y):
        opt.zero_grad()
        _loss(model, x, y).backward()

    @spx.compile
    def update(opt):
        opt.step()

    @spx.compile
    def grad_norm(model):
        return spx.stack([p.grad.norm() for p in model.parameters()]).norm()

    for _ in range(3):
        forward_backward(s, s_opt, spx.tensor(x), spx.tensor(y))
        norm = grad_norm(s)
        update(s_opt)
        t_opt.zero_grad()
        _loss(t, torch.from_numpy(x), torch.from_numpy(y)).backward()
        t_norm = torch.stack([p.grad.norm() for p in t.parameters()]).norm()
        t_opt.step()
        np.testing.assert_allclose(float(norm), float(t_norm), rtol=1e-5)
    _assert_grads(t, s)
    for tp, sp in zip(t.parameters(), s.parameters(), strict=True):
        np.testing.assert_allclose(
            np.asarray(sp.detach()), tp.detach().numpy(), rtol=1e-5, atol=1e-6
        )


def test_reading_a_packed_gradient_lets_the_buffer_go():
    _, s = _pair()
    x, y = _data()

    @spx.compile
    def step(model, x, y):
        model.zero_grad()
        _loss(model, x, y).backward()

    step(s, spx.tensor(x), spx.tensor(y))
    g = s[0].weight.grad
    assert g._s.node.values is None and g._s.node.inputs  # packed, not computed
    g.tolist()  # computes every slice of the buffer
    assert g._s.node.values is not None and g._s.node.inputs == ()  # the buffer is released


def test_a_kept_reference_to_an_old_gradient_keeps_its_value_as_in_torch():
    # zero_grad() + backward() give .grad a new tensor in torch: a list of each step's .grad
    # holds every step's values. The compiled step does the same (it reused one object, and
    # a reference held across a retrace kept a tracer).
    hist = {}
    for lib in (torch, spx):
        lib.manual_seed(0)
        model = lib.nn.Linear(3, 1)
        opt = lib.optim.SGD(model.parameters(), lr=0.5)
        x = lib.ones(2, 3)

        def step(model, opt, x, scale):
            opt.zero_grad()
            (model(x).sum() * scale).backward()
            opt.step()

        if lib is spx:
            step = spx.compile(step)
        kept = []
        for scale in (1.0, 2.0, 3.0):
            step(model, opt, x, lib.tensor(scale))
            kept.append(model.bias.grad)
        hist[lib.__name__] = [g.tolist() for g in kept]
        assert len({id(g) for g in kept}) == 3
    assert hist["spx"] == hist["torch"] == [[2.0], [4.0], [6.0]]
