"""Module forward hooks against torch's: call order, arguments, replacements, errors, removal,
gradients through replaced values, and compiled steps that see hooks come and go."""

import copy
import warnings

import jax
import numpy as np
import pytest

import spx
from spx import nn
from tests._torch_utils import copy_torch_weights

torch = pytest.importorskip("torch")


def _pair(seed=0):
    torch.manual_seed(seed)
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    s = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    copy_torch_weights(t, s)
    return t, s


X = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)


def _both(fn):
    """Run ``fn(lib, t_or_s_model, x)`` for torch and spx; return both results."""
    t, s = _pair()
    out_t = fn(torch, t, torch.from_numpy(X))
    out_s = fn(spx, s, spx.from_numpy(X))
    return out_t, out_s


def _np(v):
    return v.detach().numpy() if hasattr(v, "detach") else np.asarray(v)


def test_hooks_run_in_torchs_order_with_torchs_arguments():
    def run(lib, model, x):
        log = []
        first = model[0]
        first.register_forward_pre_hook(lambda m, args: log.append(("pre", len(args))))
        first.register_forward_pre_hook(
            lambda m, args, kwargs: log.append(("pre_kw", sorted(kwargs))), with_kwargs=True
        )
        first.register_forward_pre_hook(lambda m, args: log.append(("pre_first",)), prepend=True)
        first.register_forward_hook(lambda m, args, out: log.append(("post", tuple(out.shape))))
        first.register_forward_hook(
            lambda m, args, kwargs, out: log.append(("post_kw", len(args))), with_kwargs=True
        )
        first.register_forward_hook(lambda m, args, out: log.append(("post_first",)), prepend=True)
        model(x)
        return log

    log_t, log_s = _both(run)
    assert log_s == log_t


def test_pre_hooks_replace_arguments_and_forward_hooks_replace_outputs():
    def run(lib, model, x):
        model[0].register_forward_pre_hook(lambda m, args: args[0] * 2)  # one value: a 1-tuple
        model[0].register_forward_pre_hook(lambda m, args: (args[0] + 1,))
        model[2].register_forward_pre_hook(
            lambda m, args, kwargs: ((args[0] - 0.5,), kwargs), with_kwargs=True
        )
        model[1].register_forward_hook(lambda m, args, out: out * args[0])
        model.register_forward_hook(lambda m, args, out: out.sum(1))
        model.register_forward_hook(lambda m, args, out: None)  # None keeps the output
        return _np(model(x))

    out_t, out_s = _both(run)
    np.testing.assert_allclose(out_s, out_t, rtol=1e-5, atol=1e-6)


def test_gradients_flow_through_replaced_values_as_in_torch():
    def run(lib, model, x):
        x.requires_grad_(True)
        model[0].register_forward_pre_hook(lambda m, args: (args[0].pow(2),))
        model[1].register_forward_hook(lambda m, args, out: out * args[0].sigmoid())
        model(x).pow(2).sum().backward()
        return [_np(x.grad)] + [_np(p.grad) for p in model.parameters()]

    grads_t, grads_s = _both(run)
    for gs, gt in zip(grads_s, grads_t, strict=True):
        np.testing.assert_allclose(gs, gt, rtol=1e-5, atol=1e-6)


def test_feature_extraction_hooks_see_torchs_activations():
    def run(lib, model, x):
        seen = {}
        for name, m in model.named_children():
            m.register_forward_hook(lambda m, args, out, name=name: seen.update({name: _np(out)}))
        model(x)
        return seen

    seen_t, seen_s = _both(run)
    assert sorted(seen_s) == sorted(seen_t)
    for k in seen_t:
        np.testing.assert_allclose(seen_s[k], seen_t[k], rtol=1e-5, atol=1e-6)


def test_a_bad_pre_hook_return_raises_torchs_error():
    def run(lib, model, x):
        model.register_forward_pre_hook(lambda m, args, kwargs: 3, with_kwargs=True)
        with pytest.raises(RuntimeError) as info:
            model(x)
        return str(info.value)

    msg_t, msg_s = _both(run)
    assert msg_s == msg_t


def test_always_call_hooks_run_when_forward_raises_as_in_torch():
    def failing(lib):
        class M(lib.nn.Module):
            def forward(self, x):
                raise ValueError("forward failed")

        return M()

    for lib in (torch, spx):
        m = failing(lib)
        log = []
        m.register_forward_hook(lambda m, args, out, log=log: log.append(("plain", out)))
        m.register_forward_hook(
            lambda m, args, out, log=log: log.append(("always", out)), always_call=True
        )

        def broken(m, args, out):
            raise KeyError("hook failed")

        m.register_forward_hook(broken, always_call=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(ValueError, match="forward failed"):
                m(lib.ones(1))
        assert log == [("always", None)], lib.__name__
        assert any("silenced" in str(w.message) for w in caught), lib.__name__


def test_remove_and_context_manager_unregister():
    _, s = _pair()
    x = spx.from_numpy(X)
    clean = s(x).numpy(force=True)
    handle = s.register_forward_hook(lambda m, args, out: out * 0)
    assert not s(x).numpy(force=True).any()
    handle.remove()
    handle.remove()  # twice is fine, as in torch
    np.testing.assert_array_equal(s(x).numpy(force=True), clean)
    with s[0].register_forward_pre_hook(lambda m, args: (args[0] * 0,)) as h2:
        assert h2.id > handle.id
        zeroed = s(x).numpy(force=True)
    assert not np.allclose(zeroed, clean)
    np.testing.assert_array_equal(s(x).numpy(force=True), clean)


def test_hooks_survive_deepcopy_and_leave_state_dict_alone():
    _, s = _pair()
    s.register_forward_hook(lambda m, args, out: out + 1)
    keys = list(s.state_dict())
    twin = copy.deepcopy(s)
    x = spx.from_numpy(X)
    np.testing.assert_allclose(twin(x).numpy(force=True), s(x).numpy(force=True))
    assert list(twin.state_dict()) == keys == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_a_non_callable_hook_is_rejected_with_the_fix():
    with pytest.raises(TypeError, match=r"must be callable.*def hook"):
        nn.Linear(2, 2).register_forward_hook("not a function")


def test_compiled_steps_see_hooks_added_and_removed():
    _, s = _pair()
    opt = spx.optim.SGD(s.parameters(), lr=0.0)  # lr 0: the outputs compare across calls

    @spx.compile
    def step(model, opt, x):
        opt.zero_grad()
        out = model(x)
        out.sum().backward()
        opt.step()
        return out

    x = spx.from_numpy(X)
    plain = step(s, opt, x).numpy(force=True)
    handle = s[1].register_forward_hook(lambda m, args, out: out * 0)
    hooked = step(s, opt, x).numpy(force=True)
    np.testing.assert_allclose(hooked, np.broadcast_to(s[2].bias.numpy(force=True), hooked.shape))
    handle.remove()
    np.testing.assert_allclose(step(s, opt, x).numpy(force=True), plain, rtol=1e-6)


def test_jax_jit_of_a_model_retraces_when_its_hooks_change():
    _, s = _pair()
    f = jax.jit(lambda m, x: m(x))
    x = spx.from_numpy(X)
    plain = np.asarray(f(s, x))
    handle = s.register_forward_hook(lambda m, args, out: out * 0)
    assert not np.asarray(f(s, x)).any()
    handle.remove()
    np.testing.assert_allclose(np.asarray(f(s, x)), plain, rtol=1e-6)


def test_hook_tables_exist_and_compiled_steps_follow_changes_made_through_them():
    results = {}
    for lib in (torch, spx):
        m = lib.nn.Linear(2, 1)
        assert len(m._forward_hooks) == 0 and len(m._forward_pre_hooks) == 0  # always there
        with lib.no_grad():
            m.weight.fill_(1.0)
            m.bias.fill_(0.0)
        # torch eager is the reference
        f = spx.compile(lambda m, x: m(x)) if lib is spx else (lambda m, x: m(x))
        x = lib.ones(1, 2)
        handles = []

        def once(mod, args, out, handles=handles):
            handles[0].remove()  # one-shot: spx.compile's extra probe trace must not eat it
            return out + 100

        handles.append(m.register_forward_hook(once))
        out = [f(m, x).item(), f(m, x).item()]
        m.register_forward_hook(lambda mod, a, o: o * 0)
        out.append(f(m, x).item())
        m._forward_hooks.clear()  # changing the table directly
        out.append(f(m, x).item())
        results[lib.__name__] = out
    assert results["spx"] == results["torch"] == [102.0, 2.0, 0.0, 2.0]
