"""nn.DataParallel against torch's on CPU (where torch's also calls the module directly)."""

import warnings

import numpy as np
import pytest

import spx
from spx import nn

torch = pytest.importorskip("torch")


def test_outputs_grads_and_state_dict_are_torchs():
    torch.manual_seed(0)
    t = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh()))
    s = nn.DataParallel(nn.Sequential(nn.Linear(4, 3), nn.Tanh()))
    assert list(s.state_dict()) == list(t.state_dict())
    s.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    t(torch.from_numpy(x)).pow(2).sum().backward()
    s(spx.from_numpy(x)).pow(2).sum().backward()
    assert isinstance(s.module, nn.Sequential)
    for (name, tp), sp in zip(t.named_parameters(), s.parameters(), strict=True):
        np.testing.assert_allclose(np.asarray(sp.grad), tp.grad.numpy(), rtol=1e-5, err_msg=name)


def test_several_device_ids_warn_that_one_device_is_used():
    with pytest.warns(UserWarning, match="one device"):
        nn.DataParallel(nn.Linear(2, 2), device_ids=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.DataParallel(nn.Linear(2, 2), device_ids=[0])
    with pytest.raises(TypeError, match=r"nn\.Module"):
        nn.DataParallel(lambda x: x)
