"""spx.nn.utils.parametrize against torch.nn.utils.parametrize: custom parametrizations written
once for both libraries (the port is the rename), keys, values, gradients, training, errors."""

from __future__ import annotations

import contextlib
import copy
import pickle

import numpy as np
import pytest

import spx
from spx import nn
from spx.nn.utils import parametrize as P
from tests.nn.utils._parity import assert_state_matches, host, load_from_torch, train_and_compare

torch = pytest.importorskip("torch")
TP = torch.nn.utils.parametrize


def _classes(lib):
    """The same parametrization classes, on ``torch`` or ``spx``."""

    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

        def right_inverse(self, A):
            return A.triu()

    class Scale(lib.nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c = c

        def forward(self, X):
            return self.c * X

        def right_inverse(self, A):
            return A / self.c

    class Double(lib.nn.Module):  # no right_inverse: assigning is an error
        def forward(self, X):
            return 2 * X

    class RankOne(lib.nn.Module):  # two originals
        def forward(self, x, y):
            return x.unsqueeze(-1) @ y.unsqueeze(-2)

        def right_inverse(self, Z):
            U, S, Vh = lib.linalg.svd(Z, full_matrices=False)
            s0 = S[0].sqrt().unsqueeze(-1)
            return U[..., :, 0] * s0, Vh[..., 0, :] * s0

    class Slice(lib.nn.Module):  # changes the shape (needs unsafe=True)
        def forward(self, X):
            return X[:, :2]

    return {c.__name__: c for c in (Symmetric, Scale, Double, RankOne, Slice)}


T, S = _classes(torch), _classes(spx)


def _linear_pair(n_in=4, n_out=4):
    torch.manual_seed(0)
    t = torch.nn.Linear(n_in, n_out)
    s = nn.Linear(n_in, n_out)
    load_from_torch(t, s)
    return t, s


def _register(t, s, name, *args, tensor="weight", unsafe=False):
    TP.register_parametrization(t, tensor, T[name](*args), unsafe=unsafe)
    P.register_parametrization(s, tensor, S[name](*args), unsafe=unsafe)


# -- registration, reading, state dict -----------------------------------------------------------
def test_register_keys_class_repr_and_value_match_torch():
    t, s = _linear_pair()
    weight = s.weight
    _register(t, s, "Symmetric")
    assert (
        list(s.state_dict()) == list(t.state_dict()) == ["bias", "parametrizations.weight.original"]
    )
    assert type(s).__name__ == type(t).__name__ == "ParametrizedLinear"
    assert isinstance(s, nn.Linear)
    assert P.type_before_parametrizations(s) is nn.Linear
    assert repr(s) == repr(t)
    assert s.parametrizations.weight.original is weight  # the same Parameter object
    assert P.is_parametrized(s) and P.is_parametrized(s, "weight")
    assert not P.is_parametrized(s, "bias") and not P.is_parametrized(nn.Linear(2, 2))
    assert_state_matches(t, s)
    np.testing.assert_allclose(host(s.weight), host(t.weight), atol=1e-6)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(
        host(s(spx.from_numpy(x))), host(t(torch.from_numpy(x))), rtol=1e-5, atol=1e-6
    )


def test_list_access_and_stacking_match_torch():
    t, s = _linear_pair()
    _register(t, s, "Symmetric")
    _register(t, s, "Scale", 3.0)
    plist = s.parametrizations["weight"]
    assert isinstance(plist, P.ParametrizationList) and isinstance(plist, nn.ModuleList)
    assert len(plist) == 2 and type(plist[1]).__name__ == "Scale"
    assert plist is s.parametrizations.weight
    assert [type(m).__name__ for m in plist] == ["Symmetric", "Scale"]
    assert repr(s) == repr(t)
    assert_state_matches(t, s)
    np.testing.assert_allclose(host(s.weight), host(t.weight), rtol=1e-6, atol=1e-6)
    # Assignment goes through both right_inverses, last first.
    A = np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32)
    A = A + A.T
    t.weight = torch.from_numpy(A)
    s.weight = spx.from_numpy(A)
    np.testing.assert_allclose(host(s.weight), A, rtol=1e-6, atol=1e-6)
    assert_state_matches(t, s)


def test_several_originals_keys_and_assignment_match_torch():
    t, s = _linear_pair()
    _register(t, s, "RankOne")
    keys = ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    assert list(s.state_dict()) == list(t.state_dict()) == keys
    load_from_torch(t, s)  # SVD signs may differ between LAPACKs: start from torch's
    np.testing.assert_allclose(host(s.weight), host(t.weight), rtol=1e-5, atol=1e-6)
    rng = np.random.default_rng(2)
    Z = np.outer(rng.standard_normal(4), rng.standard_normal(4)).astype(np.float32)
    s.weight = spx.from_numpy(Z)
    np.testing.assert_allclose(host(s.weight), Z, rtol=1e-4, atol=1e-5)
    assert np.linalg.matrix_rank(host(s.weight)) == 1


def test_parametrized_buffer_keys_match_torch():
    tm, sm = torch.nn.Module(), nn.Module()
    tm.register_buffer("scale", torch.ones(3, 3))
    sm.register_buffer("scale", spx.ones(3, 3))
    TP.register_parametrization(tm, "scale", T["Scale"](2.0))
    P.register_parametrization(sm, "scale", S["Scale"](2.0))
    assert list(sm.state_dict()) == list(tm.state_dict()) == ["parametrizations.scale.original"]
    assert list(sm.buffers()) == [sm.parametrizations.scale.original]
    assert_state_matches(tm, sm)
    np.testing.assert_allclose(host(sm.scale), host(tm.scale))


def test_loads_a_torch_state_dict_and_unsafe_shape_change():
    t, s = _linear_pair()
    _register(t, s, "Slice", unsafe=True)
    with torch.no_grad():
        t.parametrizations.weight.original.mul_(3.0)
    load_from_torch(t, s)
    assert tuple(s.weight.shape) == tuple(t.weight.shape) == (4, 2)
    np.testing.assert_allclose(host(s.weight), host(t.weight))
    assert s.parametrizations.weight.unsafe


# -- gradients and training ----------------------------------------------------------------------
def test_gradients_reach_the_original_like_torch():
    t, s = _linear_pair()
    _register(t, s, "Symmetric")
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    (t(torch.from_numpy(x)) ** 2).sum().backward()
    (s(spx.from_numpy(x)) ** 2).sum().backward()
    assert t.parametrizations.weight.original.grad is not None
    np.testing.assert_allclose(
        host(s.parametrizations.weight.original.grad),
        host(t.parametrizations.weight.original.grad),
        rtol=1e-5,
        atol=1e-5,
    )
    np.testing.assert_allclose(host(s.bias.grad), host(t.bias.grad), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize(
    "names", [("Symmetric",), ("Symmetric", "Scale"), ("RankOne",)], ids=lambda n: "+".join(n)
)
def test_sgd_training_matches_torch_step_by_step(names, compiled):
    t, s = _linear_pair()
    for name in names:
        args = (0.5,) if name == "Scale" else ()
        _register(t, s, name, *args)
    load_from_torch(t, s)
    train_and_compare(t, s, (6, 4), steps=3, compiled=compiled)


def test_an_optimizer_built_before_registration_keeps_training_the_original():
    t, s = _linear_pair()
    topt = torch.optim.SGD(t.parameters(), lr=0.1)
    sopt = spx.optim.SGD(s.parameters(), lr=0.1)
    _register(t, s, "Symmetric")
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    for _ in range(2):
        topt.zero_grad()
        sopt.zero_grad()
        t(torch.from_numpy(x)).sum().backward()
        s(spx.from_numpy(x)).sum().backward()
        topt.step()
        sopt.step()
    assert_state_matches(t, s)


# -- cached --------------------------------------------------------------------------------------
def test_cached_computes_once_per_block():
    _, s = _linear_pair()
    P.register_parametrization(s, "weight", S["Symmetric"]())
    assert s.weight is not s.weight
    with P.cached():
        w = s.weight
        assert s.weight is w
        with P.cached():  # nested blocks share the outer one's values
            assert s.weight is w
        assert s.weight is w
    assert s.weight is not w
    np.testing.assert_allclose(host(s.weight), host(w))


def test_cached_value_carries_gradients():
    t, s = _linear_pair()
    _register(t, s, "Symmetric")
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    with TP.cached():
        (t(torch.from_numpy(x)).sum() + t.weight.sum()).backward()
    with P.cached():
        (s(spx.from_numpy(x)).sum() + s.weight.sum()).backward()
    np.testing.assert_allclose(
        host(s.parametrizations.weight.original.grad),
        host(t.parametrizations.weight.original.grad),
        rtol=1e-5,
        atol=1e-6,
    )


def test_cached_inside_a_compiled_step_and_not_across_its_boundary():
    _, s = _linear_pair()
    P.register_parametrization(s, "weight", S["Symmetric"]())
    runs = []

    class Counted(nn.Module):
        def forward(self, X):
            runs.append(1)  # at tracing time: one entry per evaluation in the program
            return X

    P.register_parametrization(s, "weight", Counted())

    @spx.compile
    def read_twice(m, cache):
        with P.cached() if cache else contextlib.nullcontext():
            return (m.weight - m.weight).abs().sum()

    counts = {}
    for cache in (True, False):
        runs.clear()
        assert float(read_twice(s, cache)) == 0.0
        counts[cache] = len(runs)
    # Twice as many evaluations without the cache (however many traces spx.compile makes).
    assert counts[True] > 0 and counts[False] == 2 * counts[True]

    @spx.compile
    def same_inside(m, x):
        with P.cached():
            return (m(x) - x @ m.weight.T).abs().sum()

    x = spx.ones(2, 4)
    np.testing.assert_allclose(host(same_inside(s, x)), host(s.bias.abs().sum() * 2), rtol=1e-6)
    # A block around a compiled call: the traced values stay inside the trace.
    step = spx.compile(lambda m, x: m(x).sum())
    with P.cached():
        eager = s.weight
        out = step(s, x)
        assert s.weight is eager
    np.testing.assert_allclose(host(out), host(s(x).sum()), rtol=1e-6)


# -- removal -------------------------------------------------------------------------------------
@pytest.mark.parametrize("leave_parametrized", [True, False])
def test_remove_parametrizations_matches_torch(leave_parametrized):
    t, s = _linear_pair()
    _register(t, s, "Symmetric")
    _register(t, s, "Scale", 2.0)
    original = s.parametrizations.weight.original
    TP.remove_parametrizations(t, "weight", leave_parametrized=leave_parametrized)
    P.remove_parametrizations(s, "weight", leave_parametrized=leave_parametrized)
    assert type(s) is nn.Linear and not P.is_parametrized(s)
    assert not hasattr(s, "parametrizations")
    assert s.weight is original  # the same object, so an optimizer holding it goes on
    assert list(s.state_dict()) == list(t.state_dict()) == ["bias", "weight"]
    assert_state_matches(t, s)
    s.weight = nn.Parameter(spx.zeros(4, 4))  # a plain Linear again
    assert float(s.weight.abs().sum()) == 0.0


def test_remove_one_of_two_and_several_originals():
    t, s = _linear_pair()
    _register(t, s, "RankOne")
    _register(t, s, "Scale", 2.0, tensor="bias")
    load_from_torch(t, s)
    TP.remove_parametrizations(t, "weight")
    P.remove_parametrizations(s, "weight")
    assert type(s).__name__ == "ParametrizedLinear"
    assert list(s.state_dict()) == list(t.state_dict())
    assert isinstance(s.weight, nn.Parameter)
    assert_state_matches(t, s)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(s, "weight")


# -- transfer, copies ----------------------------------------------------------------------------
def test_transfer_parametrizations_and_params_matches_torch():
    t, s = _linear_pair()
    _register(t, s, "Symmetric")
    torch.manual_seed(1)
    t2, s2 = torch.nn.Linear(4, 4), nn.Linear(4, 4)
    load_from_torch(t2, s2)
    TP.transfer_parametrizations_and_params(t, t2)
    P.transfer_parametrizations_and_params(s, s2)
    assert list(s2.state_dict()) == list(t2.state_dict())
    assert s2.parametrizations.weight.original is s.parametrizations.weight.original
    assert_state_matches(t2, s2)
    assert P.transfer_parametrizations_and_params(nn.Linear(2, 2), s2) is s2


def test_deepcopy_works_and_pickling_is_refused_like_torch():
    _, s = _linear_pair()
    P.register_parametrization(s, "weight", S["Symmetric"]())
    c = copy.deepcopy(s)
    assert type(c) is type(s)
    assert c.parametrizations.weight.original is not s.parametrizations.weight.original
    np.testing.assert_allclose(host(c.weight), host(s.weight))
    c.weight = spx.zeros(4, 4)
    assert float(s.weight.abs().sum()) > 0
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(s)


# -- errors --------------------------------------------------------------------------------------
def _both_raise(exc, match, fn):
    """``fn(lib_namespace)`` raises ``exc`` for torch and for spx."""
    with pytest.raises(exc):
        fn(torch, TP, T)
    with pytest.raises(exc, match=match):
        fn(spx, P, S)


def test_errors_match_torch():
    def missing(lib, PP, C):
        PP.register_parametrization(lib.nn.Linear(2, 2), "kernel", C["Symmetric"]())

    _both_raise(ValueError, "does not have a parameter, a buffer, or a parametrized", missing)

    def shape_change(lib, PP, C):
        PP.register_parametrization(lib.nn.Linear(4, 4), "weight", C["Slice"]())

    _both_raise(ValueError, "may not change the shape", shape_change)

    def appended_shape_change(lib, PP, C):
        m = PP.register_parametrization(lib.nn.Linear(4, 4), "weight", C["Symmetric"]())
        PP.register_parametrization(m, "weight", C["Slice"]())

    _both_raise(ValueError, "may not change the shape", appended_shape_change)

    def no_right_inverse(lib, PP, C):
        m = PP.register_parametrization(lib.nn.Linear(2, 2), "weight", C["Double"]())
        m.weight = lib.zeros(2, 2)

    _both_raise(RuntimeError, "Double does not implement right_inverse", no_right_inverse)

    def assign_parameter(lib, PP, C):
        m = PP.register_parametrization(lib.nn.Linear(2, 2), "weight", C["Symmetric"]())
        m.weight = lib.nn.Parameter(lib.zeros(2, 2))

    _both_raise(KeyError, "already exists", assign_parameter)

    def leave_unparametrized(lib, PP, C):
        m = PP.register_parametrization(lib.nn.Linear(2, 2), "weight", C["RankOne"]())
        PP.remove_parametrizations(m, "weight", leave_parametrized=False)

    _both_raise(ValueError, "sequence of tensors", leave_unparametrized)

    def not_parametrized(lib, PP, C):
        PP.remove_parametrizations(lib.nn.Linear(2, 2), "weight")

    _both_raise(ValueError, "does not have a parametrization", not_parametrized)


def test_dtype_change_and_non_tensor_right_inverse_are_refused():
    class ToHalf(nn.Module):
        def forward(self, X):
            return X.half()

    class Bad(nn.Module):
        def forward(self, X):
            return X

        def right_inverse(self, X):
            return 3

    with pytest.raises(ValueError, match="may not change the dtype"):
        P.register_parametrization(nn.Linear(2, 2), "weight", ToHalf())
    with pytest.raises(ValueError, match="must return a Tensor or a Sequence"):
        P.register_parametrization(nn.Linear(2, 2), "weight", Bad())
    with pytest.raises(TypeError, match=r"must be an nn\.Module"):
        P.register_parametrization(nn.Linear(2, 2), "weight", lambda X: X)
    m = nn.Linear(2, 2)
    before = list(m.state_dict())
    with pytest.raises(ValueError):
        P.register_parametrization(m, "weight", ToHalf())
    assert list(m.state_dict()) == before and type(m) is nn.Linear  # left unchanged
