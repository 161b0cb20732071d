"""``spx.func.functional_call``: swapping state for one call, tying, strictness, torch's errors."""

import numpy as np
import pytest

import spx
from spx import nn
from spx.func import functional_call
from tests._torch_utils import copy_torch_weights

torch = pytest.importorskip("torch")


def _tied(lib):
    class Tied(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lib.nn.Linear(2, 2, bias=False)
            self.b = lib.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight  # one Parameter under two names

        def forward(self, x):
            return self.b(self.a(x))

    return Tied()


def _np(x):
    return np.asarray(x.detach()) if isinstance(x, spx.Tensor) else x.detach().numpy()


def test_call_uses_the_given_tensors_and_restores_the_module():
    torch.manual_seed(0)
    t_m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    copy_torch_weights(t_m, m)
    own = dict(m.named_parameters())
    x = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)
    new = {"0.weight": np.full((4, 3), 0.1, np.float32), "2.bias": np.ones(2, np.float32)}
    t_out = torch.func.functional_call(
        t_m, {k: torch.tensor(v) for k, v in new.items()}, torch.tensor(x)
    )
    out = functional_call(m, {k: spx.tensor(v) for k, v in new.items()}, spx.tensor(x))
    np.testing.assert_allclose(_np(out), _np(t_out), rtol=1e-5, atol=1e-6)
    # partial dicts keep the module's own tensors for the other names; afterwards it is as before
    assert all(p is own[k] for k, p in m.named_parameters())
    np.testing.assert_allclose(
        _np(m(spx.tensor(x))), _np(t_m(torch.tensor(x))), rtol=1e-5, atol=1e-6
    )
    # kwargs and a tuple of dicts
    out2 = functional_call(
        m,
        ({"0.weight": spx.tensor(new["0.weight"])}, {"2.bias": spx.tensor(new["2.bias"])}),
        (),
        {"input": spx.tensor(x)},
    )
    np.testing.assert_allclose(_np(out2), _np(out), rtol=1e-6)


def test_module_is_restored_when_forward_raises():
    class Boom(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.register_buffer("count", spx.zeros(()))

        def forward(self, x):
            self.lin(x)
            raise ValueError("boom")

    m = Boom()
    before = {**dict(m.named_parameters()), **dict(m.named_buffers())}
    with pytest.raises(ValueError, match="boom"):
        functional_call(
            m,
            {"lin.weight": spx.zeros(2, 2), "count": spx.ones(()), "extra": spx.ones(1)},
            spx.ones(1, 2),
        )
    after = {**dict(m.named_parameters()), **dict(m.named_buffers())}
    assert after.keys() == before.keys() and all(after[k] is before[k] for k in before)
    assert "extra" not in m.__dict__  # a name the module lacked is removed again


def test_buffer_updates_reach_the_callers_dict_as_in_torch():
    torch.manual_seed(0)
    t_bn, bn = torch.nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    x = np.linspace(-1, 2, 12, dtype=np.float32).reshape(4, 3)
    t_state = {k: v.clone() for k, v in t_bn.named_buffers()}
    state = {k: spx.tensor(_np(v)) for k, v in t_bn.named_buffers()}
    torch.func.functional_call(t_bn, t_state, torch.tensor(x))
    functional_call(bn, state, spx.tensor(x))
    for k in t_state:
        np.testing.assert_allclose(_np(state[k]), _np(t_state[k]), rtol=1e-5, atol=1e-6, err_msg=k)
    np.testing.assert_array_equal(_np(bn.running_mean), np.zeros(3))  # the module's own: untouched


def test_tie_weights():
    t_m, m = _tied(torch), _tied(spx)
    copy_torch_weights(t_m, m)
    x = np.ones((1, 2), np.float32)
    w = np.array([[2.0, 0.0], [0.0, 3.0]], np.float32)
    for tie in (True, False):
        t_out = torch.func.functional_call(
            t_m, {"a.weight": torch.tensor(w)}, torch.tensor(x), tie_weights=tie
        )
        out = functional_call(m, {"a.weight": spx.tensor(w)}, spx.tensor(x), tie_weights=tie)
        np.testing.assert_allclose(_np(out), _np(t_out), rtol=1e-6)
    for lib, mod in ((torch, t_m), (spx, m)):
        with pytest.raises(
            ValueError, match=r"multiple values for keys \['a.weight', 'b.weight'\], which are tied"
        ):
            lib.func.functional_call(
                mod, {"a.weight": lib.ones(2, 2), "b.weight": lib.zeros(2, 2)}, lib.ones(1, 2)
            )


def test_strict_and_argument_errors_match_torch():
    for lib in (torch, spx):
        m = lib.nn.Linear(2, 2)
        with pytest.raises(
            RuntimeError,
            match=(
                r"(?s)Error\(s\) in reparametrizing for Linear:.*Unexpected key\(s\): 'w'\."
                r".*Missing key\(s\): 'bias', 'weight'\."
            ),
        ):
            lib.func.functional_call(m, {"w": lib.ones(2, 2)}, lib.ones(1, 2), strict=True)
        with pytest.raises(ValueError, match=r"\['weight'\] appeared in multiple dictionaries"):
            lib.func.functional_call(
                m, ({"weight": lib.ones(2, 2)}, {"weight": lib.ones(2, 2)}), lib.ones(1, 2)
            )
        with pytest.raises(
            ValueError,
            match="Expected all elements of parameter_and_buffer_dicts to be dictionaries",
        ):
            lib.func.functional_call(m, ({"weight": lib.ones(2, 2)}, 3), lib.ones(1, 2))
        with pytest.raises(ValueError, match="Expected parameter_and_buffer_dicts to be a dict"):
            lib.func.functional_call(m, 3, lib.ones(1, 2))
