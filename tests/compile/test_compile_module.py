"""spx.compile(model) as torch.compile(model): an OptimizedModule whose outputs backpropagate
(training equals torch's eager loop step for step), torch's state_dict keys and attribute
access; torch.compile's options; and a compiled function whose results would lose their
gradient raises instead of silently cutting it."""

import numpy as np
import pytest

import spx
from tests._torch_utils import copy_torch_weights

torch = pytest.importorskip("torch")


def _models():
    t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 2))
    s = spx.nn.Sequential(spx.nn.Linear(4, 8), spx.nn.GELU(), spx.nn.Linear(8, 2))
    copy_torch_weights(t, s)
    return t, s


def test_compiled_module_trains_like_torch_and_keeps_its_interface():
    t, s = _models()
    cm = spx.compile(s, mode="max-autotune", fullgraph=True, dynamic=False)
    assert isinstance(cm, spx.nn.Module) and cm._orig_mod is s
    # torch's OptimizedModule keys (not built here: importing torch.compile's machinery
    # switches torch.distributions' argument validation off for the whole process)
    assert list(cm.state_dict()) == ["_orig_mod." + k for k in t.state_dict()]
    assert cm.training and not cm.eval().training and not s.training
    cm.train()
    topt = torch.optim.Adam(t.parameters(), lr=1e-2)
    sopt = spx.optim.Adam(cm.parameters(), lr=1e-2)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal((5, 4)).astype(np.float32)
        topt.zero_grad()
        tl = t(torch.tensor(x)).pow(2).mean()
        tl.backward()
        topt.step()
        sopt.zero_grad()
        sl = cm(spx.tensor(x)).pow(2).mean()
        sl.backward()
        sopt.step()
        np.testing.assert_allclose(sl.item(), tl.item(), rtol=1e-5)
    for (name, p), q in zip(t.named_parameters(), s.parameters(), strict=True):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, err_msg=name)


def test_attributes_of_the_wrapped_module_are_reachable():
    class Net(spx.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = spx.nn.Linear(2, 2)
            self.config = {"width": 2}

        def forward(self, x):
            return self.fc(x)

    cm = spx.compile(Net())
    assert cm.config == {"width": 2} and cm.fc is cm._orig_mod.fc
    with pytest.raises(AttributeError):
        _ = cm.missing


def test_backward_through_a_compiled_forward_raises_instead_of_cutting_the_gradient():
    t, s = _models()
    forward = spx.compile(lambda m, x: m(x))
    y = forward(s, spx.ones(3, 4))  # an evaluation works, with torch's values
    np.testing.assert_allclose(y.detach().numpy(), t(torch.ones(3, 4)).detach().numpy(), rtol=1e-5)
    assert y.requires_grad
    extra = s[0].weight.sum()  # another path to the parameters would hide a cut gradient
    with pytest.raises(RuntimeError, match="carry no gradient"):
        (y.sum() + extra).backward()
    with spx.no_grad():  # no history at all
        assert not forward(s, spx.ones(3, 4)).requires_grad

    @spx.compile
    def pure(a, b):
        return spx.sin(a) + b * 2

    np.testing.assert_allclose(pure(spx.ones(2), spx.ones(2)).numpy(), np.sin(1.0) + 2.0, rtol=1e-6)
    assert spx.compile(pure, disable=True) is pure
