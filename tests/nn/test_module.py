"""Module core against torch.nn.Module: the same tiny architectures built in both, compared.

Registration and traversal order, state_dict / load_state_dict reporting, modes, bulk updates,
repr, attribute errors, deepcopy and the pytree (jit / grad / tree.map, jit cache hits).
"""

import copy

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from tests.nn._parity import check_module

torch = pytest.importorskip("torch")


def _architecture(lib_nn, zeros):
    """Two Module classes written once, instantiated for torch or for spx."""

    class Leaf(lib_nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = lib_nn.Parameter(zeros((n, n)))
            self.register_buffer("stat", zeros((n,)))
            self.register_buffer("scratch", zeros((2,)), persistent=False)
            self.bias = lib_nn.Parameter(zeros((n,)))  # a parameter after a buffer

        def forward(self, x):
            return x @ self.weight.T + self.bias

    class Net(lib_nn.Module):
        def __init__(self, share=True):
            super().__init__()
            self.scale = lib_nn.Parameter(zeros((3,)))
            self.enc = Leaf(3)
            self.register_buffer("step", zeros(()))
            self.dec = Leaf(3)
            if share:
                self.shared = self.enc  # the same module under a second name
            self.offset = lib_nn.Parameter(zeros((1,)))  # parameter after children

        def forward(self, x):
            return self.dec(self.enc(x * self.scale)) + self.offset

    return Leaf, Net


_, _TorchNet = _architecture(torch.nn, torch.zeros)
_, _SpxNet = _architecture(nn, jnp.zeros)  # one class: a new class would be a new treedef


def _torch_net(share=True, seed=0):
    torch.manual_seed(seed)
    net = _TorchNet(share)
    with torch.no_grad():
        for t in list(net.parameters()) + list(net.buffers()):
            t.copy_(torch.randn(t.shape))
    return net


def _spx_net(share=True):
    return _SpxNet(share)


def _pair(share=True, seed=0):
    t, s = _torch_net(share, seed), _spx_net(share)
    s.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    return t, s


def _names(pairs):
    return [name for name, _ in pairs]


def _shapes(pairs):
    return [(name, tuple(v.shape)) for name, v in pairs]


# -- registration and traversal ---------------------------------------------------------------
def test_named_parameters_order_shapes_and_dedup_match_torch():
    t, s = _pair()
    assert _shapes(s.named_parameters()) == _shapes(t.named_parameters())
    assert _names(s.named_parameters()) == [
        "scale", "offset", "enc.weight", "enc.bias", "dec.weight", "dec.bias",
    ]  # fmt: skip
    assert _names(s.named_parameters(remove_duplicate=False)) == _names(
        t.named_parameters(remove_duplicate=False)
    )
    assert _names(s.named_parameters(prefix="m", recurse=False)) == _names(
        t.named_parameters(prefix="m", recurse=False)
    )
    assert len(list(s.parameters())) == len(list(t.parameters())) == 6


def test_named_buffers_include_non_persistent_ones():
    t, s = _pair()
    assert _shapes(s.named_buffers()) == _shapes(t.named_buffers())
    assert "enc.scratch" in _names(s.named_buffers())
    assert _names(s.named_buffers(recurse=False)) == _names(t.named_buffers(recurse=False))
    assert len(list(s.buffers())) == len(list(t.buffers()))


def test_named_modules_and_children_match_torch_with_shared_module():
    t, s = _pair()
    assert _names(s.named_modules()) == _names(t.named_modules()) == ["", "enc", "dec"]
    assert _names(s.named_modules(remove_duplicate=False)) == _names(
        t.named_modules(remove_duplicate=False)
    )
    assert _names(s.named_modules(prefix="root")) == _names(t.named_modules(prefix="root"))
    assert _names(s.named_children()) == _names(t.named_children()) == ["enc", "dec"]
    assert [type(m).__name__ for m in s.modules()] == [type(m).__name__ for m in t.modules()]
    assert next(iter(s.children())) is s.enc


def test_tied_parameter_is_listed_once_but_saved_under_both_names():
    t, s = _pair(share=False)
    t.dec.weight = t.enc.weight
    s.dec.weight = s.enc.weight
    assert _names(s.named_parameters()) == _names(t.named_parameters())
    assert list(s.state_dict()) == list(t.state_dict())
    assert s.state_dict(keep_vars=True)["dec.weight"] is s.enc.weight


def test_state_dict_order_is_params_then_persistent_buffers_then_children():
    t, s = _pair()
    assert list(s.state_dict()) == list(t.state_dict())
    assert list(s.state_dict())[:3] == ["scale", "offset", "step"]
    assert "enc.scratch" not in s.state_dict()
    for k, v in t.state_dict().items():
        got = s.state_dict()[k]
        # As torch: detached tensors sharing storage with the parameters and buffers.
        assert type(got) is spx.Tensor and not got.requires_grad
        np.testing.assert_array_equal(got.numpy(), v.numpy())
    kept = s.state_dict(keep_vars=True)
    assert kept["enc.weight"] is s.enc.weight
    assert list(s.state_dict(prefix="model.")) == [f"model.{k}" for k in t.state_dict()]


def test_reassigning_a_parameter_or_child_keeps_its_position():
    t, s = _pair(share=False)
    t.enc.weight = torch.nn.Parameter(torch.zeros(3, 3))
    s.enc.weight = nn.Parameter(jnp.zeros((3, 3)))
    t.enc = t.enc  # re-assign a child under its own name
    s.enc = s.enc
    t.register_buffer("step", torch.ones(()))
    s.register_buffer("step", jnp.ones(()))
    assert list(s.state_dict()) == list(t.state_dict())
    assert _names(s.named_parameters()) == _names(t.named_parameters())


def test_registration_errors_match_torch_kinds():
    for lib_nn, zeros in ((torch.nn, torch.zeros), (nn, jnp.zeros)):
        m = lib_nn.Module()
        m.plain = 1
        with pytest.raises(KeyError):
            m.register_buffer("a.b", zeros(1))
        with pytest.raises(KeyError):
            m.register_parameter("", None)
        with pytest.raises(KeyError, match="already exists"):
            m.register_buffer("plain", zeros(1))
        with pytest.raises(TypeError):
            m.register_parameter("p", zeros(1))
        with pytest.raises(TypeError):
            m.add_module("child", "not a module")
        with pytest.raises(KeyError):
            setattr(m, "x.y", lib_nn.Parameter(zeros(1)))


def test_assigning_a_plain_array_to_a_parameter_name_raises():
    t, s = _pair()
    with pytest.raises(TypeError):
        t.enc.weight = torch.zeros(3, 3)
    with pytest.raises(TypeError, match=r"nn\.Parameter\(value\)"):
        s.enc.weight = jnp.zeros((3, 3))
    with pytest.raises(TypeError):
        s.enc = "not a module"
    with pytest.raises(TypeError):
        s.enc.stat = [1.0, 2.0, 3.0]  # a buffer takes arrays or None


def _early_classes(lib_nn, zeros):
    class EarlyParam(lib_nn.Module):
        def __init__(self):
            self.w = lib_nn.Parameter(zeros(2))
            super().__init__()

    class EarlyChild(lib_nn.Module):
        def __init__(self):
            self.c = lib_nn.Module()
            super().__init__()

    return EarlyParam, EarlyChild


@pytest.mark.parametrize("lib", ["torch", "spx"])
def test_assigning_before_super_init_raises_attribute_error(lib):
    classes = (
        _early_classes(torch.nn, torch.zeros) if lib == "torch" else _early_classes(nn, jnp.zeros)
    )
    for cls in classes:
        with pytest.raises(AttributeError, match=r"before Module\.__init__"):
            cls()


def test_assigning_none_to_a_submodule_and_deleting_attributes():
    t, s = _pair(share=False)
    t.dec = None
    s.dec = None
    assert s.dec is None
    assert _names(s.named_children()) == _names(t.named_children()) == ["enc"]
    assert list(s.state_dict()) == list(t.state_dict())
    assert repr(s).count("(dec): None") == repr(t).count("(dec): None") == 1
    del t.offset
    del s.offset
    assert _names(s.named_parameters()) == _names(t.named_parameters())
    with pytest.raises(AttributeError):
        _ = s.offset


def test_get_submodule_parameter_buffer():
    t, s = _pair()
    assert s.get_submodule("enc") is s.enc and s.get_submodule("") is s
    assert s.get_parameter("dec.bias") is s.dec.bias
    np.testing.assert_array_equal(np.asarray(s.get_buffer("enc.stat")), t.enc.stat.numpy())
    with pytest.raises(AttributeError):
        s.get_submodule("nope")
    with pytest.raises(AttributeError):
        s.get_parameter("enc.nope")


# -- load_state_dict -----------------------------------------------------------------------------
def test_load_state_dict_numpy_and_jax_values():
    t, s = _pair()  # numpy values loaded by _pair
    for k, v in t.state_dict().items():
        np.testing.assert_array_equal(np.asarray(s.state_dict()[k]), v.numpy())
    other = _spx_net()
    result = other.load_state_dict({k: jnp.asarray(v) for k, v in s.state_dict().items()})
    assert result == ([], []) and result.missing_keys == [] and result.unexpected_keys == []
    for k, v in s.state_dict().items():
        np.testing.assert_array_equal(np.asarray(other.state_dict()[k]), np.asarray(v))
    # Parameter objects stay the same objects; only their data changes.
    before = s.enc.weight
    s.load_state_dict(other.state_dict())
    assert s.enc.weight is before


def test_loaded_values_do_not_alias_the_checkpoint_memory():
    # jnp.asarray(numpy, dtype=...) can be zero-copy on CPU; spx arrays must stay immutable
    # even when the torch tensors behind ``t.numpy()`` are later updated in place.
    t, s = _pair()
    before = {k: np.asarray(v).copy() for k, v in s.state_dict().items()}
    with torch.no_grad():
        for v in t.state_dict().values():
            v.add_(1.0)
    for k, v in s.state_dict().items():
        np.testing.assert_array_equal(np.asarray(v), before[k], err_msg=k)
    source = np.zeros(64, np.float32)
    s.register_buffer("from_numpy", source)
    s.enc.stat = source[:3]
    source += 1
    assert not np.asarray(s.from_numpy).any() and not np.asarray(s.enc.stat).any()


def test_load_state_dict_missing_and_unexpected_match_torch():
    t, s = _pair()
    sd = {k: v.numpy() for k, v in t.state_dict().items()}
    del sd["enc.bias"], sd["step"]
    # Unexpected keys at several depths: torch reports each module's own before its children's.
    sd["enc.extra"] = np.zeros(1, np.float32)
    sd["junk"] = np.zeros(1, np.float32)
    sd["nothing.here"] = np.zeros(1, np.float32)
    sd["enc.scratch"] = np.zeros(2, np.float32)  # non-persistent buffers are not loadable
    expected = t.load_state_dict({k: torch.tensor(v) for k, v in sd.items()}, strict=False)
    got = s.load_state_dict(sd, strict=False)
    assert got.missing_keys == expected.missing_keys
    assert got.unexpected_keys == expected.unexpected_keys
    assert tuple(got) == (expected.missing_keys, expected.unexpected_keys)
    assert repr(got) == repr(expected) and str(got) == str(expected)
    full = {k: v.numpy() for k, v in t.state_dict().items()}
    matched = (
        s.load_state_dict(full),
        t.load_state_dict({k: torch.tensor(v) for k, v in full.items()}),
    )
    assert repr(matched[0]) == repr(matched[1]) == "<All keys matched successfully>"
    with pytest.raises(RuntimeError) as t_err:
        t.load_state_dict({k: torch.tensor(v) for k, v in sd.items()})
    with pytest.raises(RuntimeError) as s_err:
        s.load_state_dict(sd)
    for text in ('Missing key(s) in state_dict: "', 'Unexpected key(s) in state_dict: "'):
        assert text in str(t_err.value) and text in str(s_err.value)
    assert '"enc.bias"' in str(s_err.value) and '"junk"' in str(s_err.value)
    assert str(s_err.value).startswith("Error(s) in loading state_dict for Net:")


def test_size_mismatch_raises_even_non_strict_and_leaves_module_unchanged():
    t, s = _pair()
    before = {k: np.asarray(v) for k, v in s.state_dict().items()}
    sd = {k: np.full(v.shape, 7.0, np.float32) for k, v in t.state_dict().items()}
    sd["dec.weight"] = np.zeros((2, 2), np.float32)
    with pytest.raises(RuntimeError, match="size mismatch"):
        t.load_state_dict({k: torch.tensor(v) for k, v in sd.items()}, strict=False)
    with pytest.raises(RuntimeError, match=r"size mismatch for dec\.weight.*\(2, 2\).*\(3, 3\)"):
        s.load_state_dict(sd, strict=False)
    for k, v in s.state_dict().items():  # nothing was written, not even the valid keys
        np.testing.assert_array_equal(np.asarray(v), before[k], err_msg=k)
    with pytest.raises(RuntimeError, match="expected an array"):
        s.load_state_dict({**sd, "dec.weight": [[1.0]]}, strict=False)
    with pytest.raises(TypeError, match="dict-like"):
        s.load_state_dict([("scale", np.zeros(3))])


def test_load_state_dict_casts_to_current_dtype_and_assign_keeps_checkpoint_dtype():
    _, s = _pair()
    sd = {k: np.asarray(v, np.float64) for k, v in s.state_dict().items()}
    s.load_state_dict(sd)
    assert all(v.dtype == jnp.float32 for v in s.state_dict().values())
    half = {k: np.asarray(v, np.float16) for k, v in sd.items()}
    s.load_state_dict(half, assign=True)
    assert s.enc.weight.dtype == jnp.float16 and s.enc.stat.dtype == jnp.float16


def test_int64_checkpoint_value_loads_into_int32_buffer():
    m = nn.Module()
    m.register_buffer("count", jnp.zeros((), jnp.int32))
    m.load_state_dict({"count": torch.tensor(5, dtype=torch.long).numpy()})
    assert m.count.dtype == jnp.int32 and int(m.count) == 5


# -- modes and bulk updates ----------------------------------------------------------------------
def test_train_eval_recurse_and_return_self():
    t, s = _pair()
    assert s.eval() is s and t.eval() is t
    assert [m.training for m in s.modules()] == [m.training for m in t.modules()] == [False] * 3
    assert s.train() is s
    assert all(m.training for m in s.modules())
    s.enc.train(False)
    t.train()
    t.enc.train(False)
    assert [m.training for m in s.modules()] == [m.training for m in t.modules()]
    with pytest.raises(ValueError, match="boolean"):
        s.train("yes")


def test_apply_is_post_order_and_returns_self():
    t, s = _pair()
    s_order, t_order = [], []
    assert s.apply(lambda m: s_order.append(type(m).__name__)) is s
    t.apply(lambda m: t_order.append(type(m).__name__))
    assert s_order == t_order == ["Leaf", "Leaf", "Net"]


def test_zero_grad_and_requires_grad():
    _, s = _pair()
    for p in s.parameters():
        p.grad = jnp.ones(p.shape)
    s.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not np.asarray(p.grad).any() for p in s.parameters())
    s.zero_grad()
    assert all(p.grad is None for p in s.parameters())
    assert s.requires_grad_(False) is s
    assert not any(p.requires_grad for p in s.parameters())
    s.requires_grad_()
    assert all(p.requires_grad for p in s.parameters())


def test_to_dtype_casts_floating_point_state_only():
    t, s = _pair()
    for m, i32 in ((t, torch.int32), (s, jnp.int32)):
        zeros = torch.zeros if m is t else jnp.zeros
        m.register_buffer("count", zeros((), dtype=i32))
    s.enc.weight.grad = jnp.ones((3, 3))
    assert s.to(jnp.bfloat16) is s
    t.to(torch.bfloat16)
    t_dtypes = {k: str(v.dtype).removeprefix("torch.") for k, v in t.state_dict().items()}
    assert {k: str(v.dtype) for k, v in s.state_dict().items()} == t_dtypes
    assert s.count.dtype == jnp.int32 and s.enc.scratch.dtype == jnp.bfloat16
    assert s.enc.weight.grad.dtype == jnp.bfloat16
    assert s.float().enc.weight.dtype == jnp.float32
    assert s.half().enc.weight.dtype == jnp.float16
    # double(): float64 under jax_enable_x64, else float32 (as Tensor.double()); ints stay.
    assert s.double() is s and s.enc.weight.dtype == spx.ones(1).double().dtype
    assert s.count.dtype == jnp.int32
    with pytest.raises(TypeError, match="floating point"):
        s.to(jnp.int32)
    assert s.to("cpu") is s


# -- repr ------------------------------------------------------------------------------------------
def _block_class(lib_nn):
    class Block(lib_nn.Module):  # the same class name in both, as the repr prints it
        def __init__(self):
            super().__init__()
            self.proj = lib_nn.Linear(8, 8)
            self.act = lib_nn.GELU()

        def extra_repr(self):
            return "dim=8,\nheads=2"

    return Block


def _repr_model(lib_nn):
    block = _block_class(lib_nn)
    return lib_nn.Sequential(
        lib_nn.Linear(4, 8),
        lib_nn.ReLU(),
        lib_nn.Sequential(lib_nn.Linear(8, 8, bias=False), lib_nn.Tanh()),
        lib_nn.ModuleList([block(), block(), lib_nn.Identity()]),
        lib_nn.ModuleDict({"norm": lib_nn.LayerNorm(8), "drop": lib_nn.Dropout(0.1)}),
        lib_nn.Module(),
    )


def test_repr_equals_torch_for_a_nested_model():
    assert repr(_repr_model(nn)) == repr(_repr_model(torch.nn))
    assert repr(nn.Module()) == repr(torch.nn.Module()) == "Module()"


# -- copying --------------------------------------------------------------------------------------
def test_deepcopy_is_independent_and_keeps_sharing():
    _, s = _pair()
    c = copy.deepcopy(s)
    assert c.shared is c.enc and c.enc is not s.enc
    assert c.enc.weight is not s.enc.weight
    np.testing.assert_array_equal(c.enc.weight.detach().numpy(), s.enc.weight.detach().numpy())
    c.enc.weight.data = jnp.zeros((3, 3))
    assert s.enc.weight.detach().numpy().any()
    with spx.no_grad():
        c.enc.weight.add_(1.0)  # in place on the copy: the original does not change
    assert not (c.enc.weight.detach().numpy() == s.enc.weight.detach().numpy()).any()


# -- pytree --------------------------------------------------------------------------------------
def test_tree_map_returns_a_module_of_the_same_structure():
    _, s = _pair(share=False)
    doubled = jax.tree.map(lambda x: x * 2, s)
    assert type(doubled) is type(s) and doubled is not s
    assert list(doubled.state_dict()) == list(s.state_dict())
    for k, v in s.state_dict().items():
        np.testing.assert_allclose(np.asarray(doubled.state_dict()[k]), 2 * np.asarray(v))
    assert isinstance(doubled.enc.weight, nn.Parameter)
    # leaves: parameters' data and buffers (non-persistent ones too), nothing else
    assert len(jax.tree.leaves(s)) == len(list(s.parameters())) + len(list(s.buffers()))


def test_jit_and_grad_of_a_module_match_torch():
    t, s = _pair(share=False)
    x_np = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    cot = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    xt = torch.tensor(x_np, requires_grad=True)
    yt = t(xt)
    (yt * torch.tensor(cot)).sum().backward()
    y = jax.jit(lambda m, x: m(x))(s, jnp.asarray(x_np))
    np.testing.assert_allclose(np.asarray(y), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    grad_fn = jax.jit(jax.grad(lambda m, x: (m(x) * cot).sum(), argnums=(0, 1)))
    g_m, g_x = grad_fn(s, jnp.asarray(x_np))
    np.testing.assert_allclose(np.asarray(g_x), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
    grads = dict(g_m.named_parameters())
    assert list(grads) == _names(t.named_parameters())
    for name, p in t.named_parameters():
        np.testing.assert_allclose(
            np.asarray(grads[name].data), p.grad.numpy(), rtol=1e-5, atol=1e-5, err_msg=name
        )
    # torch flow: a user Module written with operators and .T, loss.backward() into .grad.
    check_module(t, s, [x_np], rtol=1e-5, atol=1e-5, param_atol=1e-5)


def test_structurally_equal_modules_share_the_jit_cache():
    traces = []

    @jax.jit
    def f(m, x):
        traces.append(1)
        return m(x)

    x = jnp.ones((2, 3))
    a, b = _spx_net(), _spx_net()
    b.enc.weight.data = jnp.ones((3, 3))  # different values, same structure
    f(a, x)
    f(b, x)
    assert len(traces) == 1
    assert jax.tree.structure(a) == jax.tree.structure(b)
    assert hash(jax.tree.structure(a)) == hash(jax.tree.structure(b))
    b.eval()  # training flag is structure
    f(b, x)
    assert len(traces) == 2
    c = _spx_net()
    c.enc.tag = "other"  # plain attributes are structure, compared by value
    assert jax.tree.structure(c) != jax.tree.structure(a)
    d = _spx_net()
    d.enc.tag = "other"
    assert jax.tree.structure(c) == jax.tree.structure(d)
    f(c, x)
    f(d, x)
    assert len(traces) == 3


def test_load_state_dict_from_another_module_copies_as_torch():
    # DQN's target sync: torch copies the values, so stepping `net` (a compiled step donates
    # its arrays) leaves `target` holding the synced values, readable.
    net, target = nn.Linear(3, 2), nn.Linear(3, 2)
    target.load_state_dict(net.state_dict())
    synced = target.weight.detach().numpy().copy()
    opt = spx.optim.SGD(net.parameters(), lr=0.1)

    @spx.compile
    def step(x):
        opt.zero_grad()
        net(x).sum().backward()
        opt.step()

    step(spx.ones(4, 3))
    np.testing.assert_array_equal(target.weight.detach().numpy(), synced)
    assert not np.allclose(net.weight.detach().numpy(), synced)


def test_buffer_assignment_registers_as_torch():
    t_mod, s_mod = torch.nn.Module(), nn.Module()
    for lib, m in ((torch, t_mod), (spx, s_mod)):
        m.mask = lib.nn.Buffer(lib.ones(2, 2), persistent=False)
        m.count = lib.nn.Buffer(lib.zeros(()))
        m.count = lib.nn.Buffer(lib.ones(()), persistent=False)  # re-registered, flag changed
        m.plain = lib.ones(1)  # a plain tensor stays an attribute
    assert list(s_mod.state_dict()) == list(t_mod.state_dict()) == []
    assert [n for n, _ in s_mod.named_buffers()] == [n for n, _ in t_mod.named_buffers()]
    assert isinstance(s_mod.mask, nn.Buffer) and not isinstance(s_mod.plain, nn.Buffer)
    kept = nn.Buffer(spx.ones(2, requires_grad=True))
    assert kept.requires_grad == torch.nn.Buffer(torch.ones(2, requires_grad=True)).requires_grad
    assert tuple(nn.Buffer().shape) == tuple(torch.nn.Buffer().shape) == (0,)
    with pytest.raises(KeyError, match="already exists"):
        s_mod.plain = nn.Buffer(spx.ones(1))
    with pytest.raises(KeyError, match="already exists"):
        t_mod.plain = torch.nn.Buffer(torch.ones(1))
