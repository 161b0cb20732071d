"""spx.nn.utils.weight_norm / remove_weight_norm against torch.nn.utils (the old API)."""

from __future__ import annotations

import numpy as np
import pytest

import spx
from spx import nn

torch = pytest.importorskip("torch")


def _pair(make_t, make_s, dim):
    torch.manual_seed(0)
    t = torch.nn.utils.weight_norm(make_t(), dim=dim)
    s = nn.utils.weight_norm(make_s(), dim=dim)
    s.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    return t, s


CASES = {
    "linear": (lambda: torch.nn.Linear(5, 3), lambda: nn.Linear(5, 3), (4, 5)),
    "conv": (lambda: torch.nn.Conv1d(2, 4, 3), lambda: nn.Conv1d(2, 4, 3), (2, 2, 7)),
}


@pytest.mark.parametrize("dim", [0, 1, None])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_keys_forward_backward_and_training_match_torch(case, dim):
    make_t, make_s, shape = CASES[case]
    t, s = _pair(make_t, make_s, dim)
    assert list(s.state_dict()) == list(t.state_dict())
    for key, value in t.state_dict().items():
        assert tuple(s.state_dict()[key].shape) == tuple(value.shape), key
    topt = torch.optim.SGD(t.parameters(), lr=0.1)
    sopt = spx.optim.SGD(s.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal(shape).astype(np.float32)
        topt.zero_grad()
        sopt.zero_grad()
        tout = t(torch.from_numpy(x))
        sout = s(spx.from_numpy(x))
        np.testing.assert_allclose(sout.detach().numpy(), tout.detach().numpy(), atol=1e-5)
        (tout**2).sum().backward()
        (sout**2).sum().backward()
        for name, p in t.named_parameters():
            sp = s.get_parameter(name)
            np.testing.assert_allclose(sp.grad.numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-5)
        topt.step()
        sopt.step()
    for key, value in t.state_dict().items():
        np.testing.assert_allclose(s.state_dict()[key].numpy(), value.numpy(), atol=1e-5)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_remove_weight_norm_restores_one_parameter():
    t, s = _pair(lambda: torch.nn.Linear(3, 2), lambda: nn.Linear(3, 2), 0)
    torch.nn.utils.remove_weight_norm(t)
    nn.utils.remove_weight_norm(s)
    assert list(s.state_dict()) == list(t.state_dict()) == ["bias", "weight"]
    assert isinstance(s.weight, nn.Parameter)
    np.testing.assert_allclose(s.weight.detach().numpy(), t.weight.detach().numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(s)


def test_errors():
    m = nn.utils.weight_norm(nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="two weight_norm hooks"):
        nn.utils.weight_norm(m)
    with pytest.raises(AttributeError, match="no parameter 'kernel'"):
        nn.utils.weight_norm(nn.Linear(2, 2), name="kernel")
