"""Containers against torch.nn: the same operations applied to both, keys/order/types compared."""

from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from tests.nn._parity import check_module

torch = pytest.importorskip("torch")

ACTS = ("ReLU", "Tanh", "Sigmoid", "Identity", "SiLU", "GELU")


def _mods(lib_nn, names):
    return [getattr(lib_nn, n)() for n in names]


def _layout(container):
    return [(k, type(m).__name__) for k, m in container._modules.items()]


def _both(cls_name, names=ACTS[:4]):
    return (
        getattr(torch.nn, cls_name)(_mods(torch.nn, names))
        if cls_name != "Sequential"
        else torch.nn.Sequential(*_mods(torch.nn, names)),
        getattr(nn, cls_name)(_mods(nn, names))
        if cls_name != "Sequential"
        else nn.Sequential(*_mods(nn, names)),
    )


def _copy(t, s):
    result = s.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    assert result == ([], [])


# -- Sequential ---------------------------------------------------------------------------------
def test_sequential_forward_and_grads_match_torch():
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    s = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    _copy(t, s)
    assert list(s.state_dict()) == list(t.state_dict()) == [
        "0.weight", "0.bias", "2.weight", "2.bias",
    ]  # fmt: skip
    x_np = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    # Output, input grad and every parameter's .grad: loss.backward() and under jax.vjp.
    check_module(t, s, [x_np], rtol=1e-5, atol=1e-6, param_atol=1e-6)


def test_sequential_from_ordered_dict_keeps_names():
    t = torch.nn.Sequential(OrderedDict([("fc", torch.nn.Linear(2, 3)), ("act", torch.nn.ReLU())]))
    s = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.ReLU())]))
    assert list(s.state_dict()) == list(t.state_dict()) == ["fc.weight", "fc.bias"]
    assert _layout(s) == _layout(t)
    assert s.fc is s[0]
    assert repr(s) == repr(t)
    assert _layout(s[1:]) == _layout(t[1:]) == [("act", "ReLU")]


def test_sequential_indexing_slicing_len_iter():
    t, s = _both("Sequential")
    assert len(s) == len(t) == 4
    for i in range(-4, 4):
        assert type(s[i]).__name__ == type(t[i]).__name__
    for bad in (4, -5):
        with pytest.raises(IndexError):
            t[bad]
        with pytest.raises(IndexError):
            s[bad]
    for sl in (slice(1, None), slice(None, None, 2), slice(-2, None), slice(3, 1)):
        sub = s[sl]
        assert type(sub) is nn.Sequential
        assert _layout(sub) == _layout(t[sl])  # torch keeps the original keys
    assert s[1:3][0] is s[1]  # the same module objects, not copies
    assert [type(m).__name__ for m in s] == [type(m).__name__ for m in t]
    assert all(not k.isdigit() for k in dir(s))


def test_sequential_mutation_matches_torch():
    t, s = _both("Sequential")
    ops = [
        ("append", lambda c, lib: c.append(lib.SiLU())),
        ("insert0", lambda c, lib: c.insert(0, lib.GELU())),
        ("insert-1", lambda c, lib: c.insert(-1, lib.ELU())),
        ("insert_end", lambda c, lib: c.insert(len(c), lib.Mish())),
        ("extend", lambda c, lib: c.extend([lib.Softplus(), lib.Tanh()])),
        ("setitem", lambda c, lib: c.__setitem__(1, lib.LeakyReLU())),
        ("setitem_neg", lambda c, lib: c.__setitem__(-1, lib.Sigmoid())),
        ("delitem", lambda c, lib: c.__delitem__(2)),
        ("delslice", lambda c, lib: c.__delitem__(slice(0, 4, 2))),
        ("pop", lambda c, lib: c.pop(-1)),
    ]
    for name, op in ops:
        rt = op(t, torch.nn)
        rs = op(s, nn)
        assert _layout(s) == _layout(t), name
        if name in ("append", "insert0", "extend"):
            assert rs is s and rt is t
        if name == "pop":
            assert type(rs).__name__ == type(rt).__name__
    popped_t, popped_s = t.pop(slice(0, 2)), s.pop(slice(0, 2))
    assert _layout(popped_s) == _layout(popped_t) and _layout(s) == _layout(t)
    with pytest.raises(IndexError):
        s.insert(len(s) + 1, nn.ReLU())
    with pytest.raises(TypeError):
        s.append(lambda x: x)
    with pytest.raises(TypeError):
        nn.Sequential(nn.ReLU(), "relu")


def test_sequential_add_iadd_mul_match_torch():
    t, s = _both("Sequential", ACTS[:2])
    t2, s2 = _both("Sequential", ACTS[2:4])
    assert _layout(s + s2) == _layout(t + t2)
    assert (s + s2)[2] is s2[0]
    assert _layout(s * 2) == _layout(t * 2)
    assert _layout(3 * s) == _layout(3 * t)
    assert (s * 2)[2] is s[0]  # repeats share modules, as in torch
    s += s2
    t += t2
    assert _layout(s) == _layout(t)
    s *= 2
    t *= 2
    assert _layout(s) == _layout(t)
    with pytest.raises(ValueError):
        s + nn.ModuleList()
    with pytest.raises(ValueError):
        s * 0


def test_sequential_setitem_keeps_order_and_state_dict_keys():
    s = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))
    s[0] = nn.Linear(2, 2, bias=False)
    assert list(s._modules) == ["0", "1", "2"]
    assert list(s.state_dict()) == ["0.weight", "2.weight", "2.bias"]
    y = s(jnp.ones((1, 2)))
    assert y.shape == (1, 2)


# -- ModuleList ---------------------------------------------------------------------------------
def test_module_list_indexing_and_slicing_match_torch():
    t, s = _both("ModuleList", ACTS)
    assert len(s) == len(t) == 6
    for i in range(-6, 6):
        assert type(s[i]).__name__ == type(t[i]).__name__
    with pytest.raises(IndexError):
        s[6]
    for sl in (slice(1, None), slice(None, None, 2), slice(-3, -1), slice(4, 1)):
        sub = s[sl]
        assert type(sub) is nn.ModuleList
        assert _layout(sub) == _layout(t[sl])  # renumbered from 0
    assert s[2:][0] is s[2]
    rebuilt_t, rebuilt_s = torch.nn.ModuleList(t[1:3]), nn.ModuleList(s[1:3])
    assert _layout(rebuilt_s) == _layout(rebuilt_t)
    with pytest.raises(NotImplementedError):
        s(jnp.ones(2))


def test_module_list_mutation_matches_torch():
    t, s = _both("ModuleList")
    ops = [
        ("append", lambda c, lib: c.append(lib.SiLU())),
        ("extend", lambda c, lib: c.extend([lib.GELU(), lib.ELU()])),
        ("iadd", lambda c, lib: c.__iadd__([lib.Mish()])),
        ("insert", lambda c, lib: c.insert(1, lib.Softplus())),
        ("insert_end", lambda c, lib: c.insert(len(c), lib.Tanh())),
        ("setitem", lambda c, lib: c.__setitem__(-2, lib.LeakyReLU())),
        ("delitem", lambda c, lib: c.__delitem__(0)),
        ("delslice", lambda c, lib: c.__delitem__(slice(1, None, 3))),
        ("pop", lambda c, lib: c.pop(2)),
    ]
    for name, op in ops:
        op(t, torch.nn)
        op(s, nn)
        assert _layout(s) == _layout(t), name
    both = s + nn.ModuleList([nn.ReLU()])
    t_both = t + torch.nn.ModuleList([torch.nn.ReLU()])
    assert type(both) is nn.ModuleList and _layout(both) == _layout(t_both)
    with pytest.raises(TypeError, match="iterable"):
        s.extend(nn.ReLU())
    with pytest.raises(TypeError):
        s[0] = "relu"


def test_module_list_negative_insert_acts_like_a_list():
    # torch's ModuleList.insert fails with KeyError for negative indices; spx follows list.insert.
    s = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    s.insert(-1, nn.SiLU())
    assert [type(m).__name__ for m in s] == ["ReLU", "SiLU", "Tanh"]
    assert list(s._modules) == ["0", "1", "2"]


def test_module_list_state_dict_keys_and_repr_match_torch():
    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(3, 3) for _ in range(3)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    class SNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    t, s = TNet(), SNet()
    _copy(t, s)
    assert list(s.state_dict()) == list(t.state_dict())
    assert "layers.1.bias" in s.state_dict()
    assert repr(s).replace("SNet", "TNet") == repr(t)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    check_module(t, s, [x], rtol=1e-5, atol=1e-6, param_atol=1e-6)
    mixed_t = torch.nn.ModuleList(_mods(torch.nn, ["ReLU", "ReLU", "Tanh", "ReLU", "ReLU"]))
    mixed_s = nn.ModuleList(_mods(nn, ["ReLU", "ReLU", "Tanh", "ReLU", "ReLU"]))
    assert repr(mixed_s) == repr(mixed_t)
    assert repr(nn.ModuleList()) == repr(torch.nn.ModuleList()) == "ModuleList()"


# -- ModuleDict ---------------------------------------------------------------------------------
def test_module_dict_api_matches_torch():
    def build(lib):
        return lib.ModuleDict({"b": lib.ReLU(), "a": lib.Tanh()})

    t, s = build(torch.nn), build(nn)
    assert list(s) == list(t) == ["b", "a"]  # insertion order, not sorted
    assert list(s.keys()) == list(t.keys())
    assert [type(v).__name__ for v in s.values()] == [type(v).__name__ for v in t.values()]
    assert [(k, type(v).__name__) for k, v in s.items()] == [
        (k, type(v).__name__) for k, v in t.items()
    ]
    assert "a" in s and "z" not in s and len(s) == 2
    for c, lib in ((t, torch.nn), (s, nn)):
        c["c"] = lib.SiLU()
        c.update([("d", lib.GELU()), ("b", lib.Sigmoid())])
        c.update(OrderedDict([("e", lib.ELU())]))
        c.update(lib.ModuleDict({"f": lib.Mish()}))
    assert _layout(s) == _layout(t)
    assert type(s.pop("c")).__name__ == type(t.pop("c")).__name__
    del s["a"]
    del t["a"]
    assert _layout(s) == _layout(t)
    assert repr(s) == repr(t)
    with pytest.raises(KeyError):
        s["zz"]
    with pytest.raises(TypeError):
        s.update(3)
    with pytest.raises(ValueError, match="length 3"):
        s.update([("x", nn.ReLU(), 1)])
    with pytest.raises(TypeError):
        s["x"] = 5
    s.clear()
    assert len(s) == 0 and list(s.state_dict()) == []


def test_module_dict_state_dict_keys():
    t = torch.nn.ModuleDict({"head": torch.nn.Linear(2, 3), "proj": torch.nn.Linear(3, 1)})
    s = nn.ModuleDict({"head": nn.Linear(2, 3), "proj": nn.Linear(3, 1)})
    _copy(t, s)
    assert list(s.state_dict()) == list(t.state_dict())


# -- ParameterList -------------------------------------------------------------------------------
def test_parameter_list_wraps_arrays_and_matches_torch_keys():
    w = np.ones((2, 3), np.float32)
    p1 = nn.Parameter(jnp.zeros(4))
    s = nn.ParameterList([jnp.asarray(w), p1])
    t = torch.nn.ParameterList([torch.tensor(w), torch.nn.Parameter(torch.zeros(4))])
    assert all(isinstance(p, nn.Parameter) for p in s)
    assert s[1] is p1 and s[-1] is p1  # Parameters are kept as they are
    assert list(s.state_dict()) == list(t.state_dict()) == ["0", "1"]
    assert _names_shapes(s.named_parameters()) == _names_shapes(t.named_parameters())
    s.append(np.zeros(2, np.float32))
    t.append(torch.zeros(2))
    s.extend([jnp.ones(1)])
    t.extend([torch.ones(1)])
    s += [jnp.ones(5)]
    t += [torch.ones(5)]
    assert _names_shapes(s.named_parameters()) == _names_shapes(t.named_parameters())
    assert len(s) == len(t) == 5
    sub = s[1:4]
    assert type(sub) is nn.ParameterList and sub[0] is s[1]
    assert list(sub.state_dict()) == list(t[1:4].state_dict())
    s[0] = jnp.full((2, 3), 3.0)
    assert isinstance(s[0], nn.Parameter) and float(s[0][0, 0]) == 3.0
    assert list(s.state_dict()) == list(t.state_dict())  # position kept
    with pytest.raises(IndexError):
        s[5]
    with pytest.raises(TypeError, match="iterable"):
        s.extend(jnp.ones(3))
    with pytest.raises(RuntimeError, match="should not be called"):
        s()


def _names_shapes(pairs):
    return [(k, tuple(v.shape)) for k, v in pairs]


def test_parameter_list_repr_and_grads_in_a_model():
    t = torch.nn.ParameterList([torch.zeros(2, 3), torch.zeros(4)])
    s = nn.ParameterList([jnp.zeros((2, 3)), jnp.zeros(4)])
    # Deviation: dtypes print as jax names ("float32"), not "torch.float32".
    assert repr(s) == repr(t).replace("torch.", "")

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.params = nn.ParameterList([jnp.full((3,), 2.0), jnp.full((3,), 3.0)])

        def forward(self, x):
            for p in self.params:
                x = x * p
            return x

    m = Scale()
    assert list(m.state_dict()) == ["params.0", "params.1"]
    g = jax.grad(lambda m: jnp.asarray(m(jnp.ones(3)).sum()))(m)
    np.testing.assert_allclose(np.asarray(g.params[0].data), 3.0)
    np.testing.assert_allclose(np.asarray(g.params[1].data), 2.0)
    # torch flow: loss.backward() reaches the listed parameters' .grad.
    m(spx.ones(3)).sum().backward()
    np.testing.assert_allclose(m.params[0].grad.numpy(), 3.0)
    np.testing.assert_allclose(m.params[1].grad.numpy(), 2.0)
    # A plain (non-Parameter) Tensor is wrapped into a Parameter, as torch wraps tensors.
    wrapped = nn.ParameterList([spx.zeros(2)])
    assert type(wrapped[0]) is nn.Parameter and wrapped[0].requires_grad
    pd = nn.ParameterDict({"w": spx.ones(2)})
    assert type(pd["w"]) is nn.Parameter
    (pd["w"] * 3).sum().backward()
    np.testing.assert_allclose(pd["w"].grad.numpy(), 3.0)


# -- ParameterDict -------------------------------------------------------------------------------
def test_parameter_dict_api_matches_torch():
    def build(lib, arr):
        # A plain dict is added in sorted key order by torch; an OrderedDict keeps its order.
        return lib.ParameterDict({"b": arr((2,)), "a": arr((3,))})

    t = build(torch.nn, torch.zeros)
    s = build(nn, jnp.zeros)
    assert list(s) == list(t) == ["a", "b"]
    assert all(isinstance(v, nn.Parameter) for v in s.values())
    assert list(s.state_dict()) == list(t.state_dict())
    for c, lib, arr in ((t, torch.nn, torch.ones), (s, nn, jnp.ones)):
        c.update(OrderedDict([("z", arr(1)), ("c", arr(2))]))
        c.update([("y", arr(1))])
        c["b"] = lib.Parameter(arr(4))  # overwrite keeps the position
        c.setdefault("q", arr(5))
        c.setdefault("a", arr(9))
    assert _names_shapes(s.items()) == _names_shapes(t.items())
    assert list(s.state_dict()) == list(t.state_dict())
    assert list(reversed(s)) == list(reversed(t))
    assert "z" in s and "nope" not in s and len(s) == len(t)
    assert s.get("nope") is None and s.get("a") is s["a"]
    k_s, v_s = s.popitem()
    k_t, v_t = t.popitem()
    assert k_s == k_t and v_s.shape == tuple(v_t.shape)
    assert s.pop("z").shape == tuple(t.pop("z").shape)
    del s["c"]
    del t["c"]
    assert list(s) == list(t)
    c = s.copy()
    assert list(c) == list(s) and c["a"] is s["a"] and c is not s
    merged_s = s | nn.ParameterDict({"new": jnp.zeros(1)})
    merged_t = t | torch.nn.ParameterDict({"new": torch.zeros(1)})
    assert list(merged_s) == list(merged_t)
    s |= nn.ParameterDict({"new2": jnp.zeros(1)})
    assert "new2" in s
    assert list(s.fromkeys(["x", "y"], jnp.zeros(1))) == ["x", "y"]
    with pytest.raises(TypeError, match="not a string"):
        s[1] = jnp.zeros(1)
    with pytest.raises(KeyError):
        s["missing"]  # torch raises AttributeError here; a dict-like KeyError is clearer
    with pytest.raises(KeyError):
        del s["missing"]
    s.clear()
    assert len(s) == 0 and list(s.state_dict()) == []
    with pytest.raises(RuntimeError, match="should not be called"):
        s(1)


def test_parameter_dict_repr_and_pytree():
    t = torch.nn.ParameterDict({"w": torch.zeros(2, 3), "b": torch.zeros(3)})
    s = nn.ParameterDict({"w": jnp.zeros((2, 3)), "b": jnp.zeros(3)})
    assert repr(s) == repr(t).replace("torch.FloatTensor", "float32")
    doubled = jax.tree.map(lambda x: x + 1, s)
    assert list(doubled) == list(s)
    np.testing.assert_array_equal(doubled["w"].detach().numpy(), 1.0)
    # Key order is structure: two equal dicts have equal treedefs, a mutation changes it.
    other = nn.ParameterDict({"w": jnp.ones((2, 3)), "b": jnp.ones(3)})
    assert jax.tree.structure(s) == jax.tree.structure(other)
    other["c"] = jnp.ones(1)
    assert jax.tree.structure(s) != jax.tree.structure(other)
    s2 = nn.ParameterDict()
    s2.update(OrderedDict((k, v.numpy()) for k, v in t.state_dict().items()))  # order kept
    assert list(s2) == list(t)
