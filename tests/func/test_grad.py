"""``spx.func.grad`` / ``grad_and_value`` against torch.func: argnums, has_aux, pytrees, errors."""

import numpy as np
import pytest

import spx
from spx import nn
from spx.func import functional_call, grad
from tests._torch_utils import copy_torch_weights

torch = pytest.importorskip("torch")

X = np.linspace(-1.0, 1.5, 6, dtype=np.float32).reshape(2, 3)
Y = np.linspace(0.5, 2.0, 3, dtype=np.float32)


def _both(fn, *arrays):
    """``fn`` run on torch tensors and on spx tensors built from the same numpy arrays."""
    return fn(torch, *[torch.tensor(a) for a in arrays]), fn(spx, *[spx.tensor(a) for a in arrays])


def _close(actual, expected, rtol=1e-5, atol=1e-6):
    if isinstance(expected, tuple | list):
        assert isinstance(actual, type(expected)) and len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            _close(a, e, rtol, atol)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected)
        for k in expected:
            _close(actual[k], expected[k], rtol, atol)
    else:
        assert isinstance(actual, spx.Tensor)
        np.testing.assert_allclose(
            np.asarray(actual.detach()), expected.detach().numpy(), rtol, atol
        )


def test_grad_of_a_scalar_function():
    t, s = _both(lambda lib, x: lib.func.grad(lambda x: (x.sin() * x).sum())(x), X)
    _close(s, t)


@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1, 0), (1,)])
def test_argnums_int_and_tuple(argnums):
    def run(lib, x, y):
        return lib.func.grad(lambda x, y: (x @ y).tanh().sum(), argnums=argnums)(x, y)

    t, s = _both(run, X, Y)
    _close(s, t)


def test_has_aux_returns_grad_and_aux_untouched():
    def run(lib, x):
        def f(x):
            y = x.exp()
            return y.sum(), {"y": y, "pair": (y[0], x)}

        return lib.func.grad(f, has_aux=True)(x)

    (t_g, t_aux), (g, aux) = _both(run, X)
    _close(g, t_g)
    _close(aux, t_aux)


def test_grad_and_value_with_and_without_aux():
    def run(lib, x, y):
        f = lambda x, y: ((x * y).sum() ** 2, x.mean())  # noqa: E731
        return (
            lib.func.grad_and_value(lambda x, y: f(x, y)[0], argnums=(0, 1))(x, y),
            lib.func.grad_and_value(f, has_aux=True)(x, y),
        )

    t, s = _both(run, X, Y)
    _close(s[0][0], t[0][0])
    _close(s[0][1], t[0][1])
    _close(s[1][0], t[1][0])
    _close(s[1][1], t[1][1])


def test_dict_params_through_functional_call_keep_torchs_structure():
    torch.manual_seed(0)
    t_model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.GELU(), torch.nn.Linear(4, 2))
    model = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 2))
    copy_torch_weights(t_model, model)

    def run(lib, m, x):
        def loss(params, x):
            return lib.func.functional_call(m, params, (x,)).pow(2).mean()

        # Not detached, as torch's docs show: the parameters are differentiated as values.
        return lib.func.grad(loss)(dict(m.named_parameters()), x)

    t = run(torch, t_model, torch.tensor(X))
    s = run(spx, model, spx.tensor(X))
    _close(s, t)


def test_second_derivative_by_nesting():
    def run(lib, x):
        d1 = lib.func.grad(lambda x: x.sin().sum())
        return lib.func.grad(lambda x: d1(x).pow(3).sum())(x)

    t, s = _both(run, X)
    _close(s, t)


def test_detach_inside_stops_the_gradient_as_in_torch():
    t, s = _both(lambda lib, x: lib.func.grad(lambda x: (x * x.detach()).sum())(x), X)
    _close(s, t)


def test_non_differentiated_args_and_kwargs_pass_through():
    def run(lib, x):
        return lib.func.grad(lambda x, k, scale=1.0: (x * k).sum() * scale)(x, 3, scale=2.0)

    t, s = _both(run, X)
    _close(s, t)


def test_module_is_left_as_it_was_after_a_failing_forward():
    model = nn.Linear(3, 2)
    before = dict(model.named_parameters())
    params = {k: v.detach() for k, v in model.named_parameters()}

    def bad(p, x):
        functional_call(model, p, (x,))
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        grad(bad)(params, spx.ones(4, 3))
    assert dict(model.named_parameters()) == before
    assert all(p is before[k] for k, p in model.named_parameters())


@pytest.mark.parametrize(
    ("fn", "args", "kwargs", "exc", "match"),
    [
        (
            lambda x: x,
            (spx.ones(2),),
            {},
            RuntimeError,
            "to return a scalar Tensor, got tensor with 1 dims",
        ),
        (
            lambda x: 3.0,
            (spx.ones(2),),
            {},
            RuntimeError,
            "Expected f\\(\\*args\\) to return a Tensor, got",
        ),
        (
            lambda x: x.sum(),
            (spx.ones(2),),
            {"argnums": 1},
            RuntimeError,
            "Got argnum=1, but only 1 positional inputs",
        ),
        (
            lambda x: x.sum(),
            (spx.ones(2),),
            {"argnums": [0]},
            RuntimeError,
            "argnums must be int or Tuple",
        ),
        (
            lambda x, y: x.sum(),
            (spx.ones(2), spx.ones(2)),
            {"argnums": ()},
            RuntimeError,
            "argnums must be non-empty",
        ),
        (
            lambda x, y: x.sum(),
            (spx.ones(2), spx.ones(2)),
            {"argnums": (0, -2)},
            RuntimeError,
            "argnums elements must be unique",
        ),
        (
            lambda x: x.sum(),
            ((spx.ones(2), 3),),
            {},
            ValueError,
            "Thing passed to transform API must be Tensor",
        ),
        (
            lambda x: x.sum(),
            (spx.ones(2),),
            {"has_aux": True},
            RuntimeError,
            "should be a tuple: \\(output, aux\\)",
        ),
        (lambda x: x.sum(), (spx.tensor([1, 2]),), {}, RuntimeError, "floating point"),
    ],
)
def test_errors_match_torch(fn, args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        grad(fn, **kwargs)(*args)
    if "floating point" in match:
        return  # torch words this one differently (its requires_grad_ error)
    t_args = tuple(_to_torch(a) for a in args)
    with pytest.raises(exc, match=match):
        torch.func.grad(fn, **kwargs)(*t_args)


def _to_torch(x):
    if isinstance(x, spx.Tensor):
        return torch.tensor(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(_to_torch(v) for v in x)
    return x


def test_aux_must_hold_tensors_as_in_torch():
    for lib in (torch, spx):
        with pytest.raises(
            RuntimeError, match="Expected tensors, got unsupported type <class 'int'>"
        ):
            lib.func.grad(lambda x: (x.sum(), 3), has_aux=True)(lib.ones(2))


def test_maml_meta_gradient_through_an_inner_step_matches_torch():
    # Meta-learning: differentiate the query loss through one inner SGD step (second order).
    torch.manual_seed(0)
    t_model = torch.nn.Sequential(torch.nn.Linear(1, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    model = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1))
    copy_torch_weights(t_model, model)
    xs = np.linspace(-2, 2, 10, dtype=np.float32).reshape(10, 1)
    data = (xs, np.sin(xs), xs + 0.1, np.sin(xs + 0.1))

    def meta(lib, m, x, y, xq, yq):
        def loss(p, x, y):
            return lib.nn.functional.mse_loss(lib.func.functional_call(m, p, (x,)), y)

        def query_loss(p):
            g = lib.func.grad(loss)(p, x, y)
            return loss({k: p[k] - 0.1 * g[k] for k in p}, xq, yq)

        params = {k: v.detach() for k, v in m.named_parameters()}
        return lib.func.grad_and_value(query_loss)(params)

    t = meta(torch, t_model, *[torch.tensor(a) for a in data])
    s = meta(spx, model, *[spx.tensor(a) for a in data])
    _close(s[0], t[0], rtol=1e-4, atol=1e-5)
    _close(s[1], t[1])


@pytest.mark.parametrize("api", ["grad", "jacrev", "jacfwd", "vjp", "jvp", "vmap"])
def test_results_of_inputs_that_require_grad_refuse_a_backward_instead_of_dropping_it(api):
    # torch.func's results stay connected to such inputs; spx's cannot (JAX transforms them).
    # They require grad as torch's do, and a backward through them raises with the fix, so the
    # inputs are never silently left without a gradient.
    def run(lib):
        w = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)

        def f(x):
            return (x.sin() * x).sum()

        fn = lib.func
        if api in ("grad", "jacrev", "jacfwd"):
            return getattr(fn, api)(f)(w)
        if api == "vjp":
            return fn.vjp(f, w)[0]
        if api == "jvp":
            return fn.jvp(f, (w,), (lib.ones(3),))[1]
        return fn.vmap(lambda x: x * 2)(w)

    got, want = run(spx), run(torch)
    assert got.requires_grad and want.requires_grad
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5)
    with pytest.raises(RuntimeError, match=f"result of spx.func.{api}"):
        got.sum().backward()
    with spx.no_grad():  # no history is wanted here: plain results, as torch's
        assert not run(spx).requires_grad


def test_closed_over_parameters_are_caught_too_eager_and_compiled():
    # vmap(model)(x): the model's parameters are closed over, not arguments. torch's result is
    # connected to them; spx's requires grad and refuses a backward instead of silently giving
    # the parameters only the other terms' gradient.
    spx.manual_seed(0)
    m, x = spx.nn.Linear(3, 2), spx.randn(4, 3)
    y = spx.func.vmap(m)(x)
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="closes over"):
        (m(x).sum() + y.sum()).backward()
    w = spx.randn(3, requires_grad=True)
    assert spx.func.grad(lambda x: (x * w).sum())(spx.ones(3)).requires_grad

    def step(w, x):  # inside spx.compile the parameters hold traced values: still caught
        y = spx.func.vmap(lambda w, xi: (w * xi).sum(), in_dims=(None, 0))(w, x)
        loss = y.sum() + (w * w).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match=r"result of spx\.func\.vmap"):
        spx.compile(step)(w, spx.randn(4, 3))


def test_no_mark_when_nothing_from_outside_requires_grad():
    # The per-sample-gradient recipe (detached parameters as arguments) and nested transforms
    # give plain results, as in torch.
    spx.manual_seed(0)
    m, x = spx.nn.Linear(3, 2), spx.randn(4, 3)
    params = {k: v.detach() for k, v in m.named_parameters()}

    def loss(p, xi):
        return spx.func.functional_call(m, p, (xi,)).sum()

    per_sample = spx.func.vmap(spx.func.grad(loss), in_dims=(None, 0))(params, x)
    assert not per_sample["weight"].requires_grad
    assert not spx.func.hessian(lambda v: (v**3).sum())(spx.ones(2)).requires_grad
    out, vjp_fn = spx.func.vjp(lambda v: v.sin(), spx.ones(2))
    assert not out.requires_grad and not vjp_fn(spx.ones(2))[0].requires_grad


def _with_no_grad_inside(lib, x):
    with lib.no_grad():
        c = x.cos() * x  # a constant to reverse mode, as torch.func.grad respects no_grad
    return (x.sin() * c).sum()


@pytest.mark.parametrize("api", ["grad", "vjp", "jacrev", "jacfwd", "jvp"])
def test_no_grad_inside_stops_reverse_mode_not_forward_mode_as_in_torch(api):
    # torch.func.grad/vjp/jacrev treat results computed under no_grad as constants; forward
    # mode (jvp, jacfwd) ignores no_grad. Before, spx's gradient went through them silently.
    def run(lib, x):
        f = lambda x: _with_no_grad_inside(lib, x)  # noqa: E731
        if api == "vjp":
            return lib.func.vjp(f, x)[1](lib.tensor(1.0))[0]
        if api == "jvp":
            return lib.func.jvp(f, (x,), (lib.ones(6),))[1]
        return getattr(lib.func, api)(f)(x)

    t, s = _both(run, X.reshape(-1))
    _close(s, t)


def test_no_grad_inside_mixed_forward_and_reverse_transforms_raises_with_the_fix():
    # torch's hessian (jacfwd over jacrev) lets the forward derivative through no_grad but not
    # the reverse one; one JAX trace cannot, so spx refuses rather than differ silently.
    x = spx.tensor(X.reshape(-1))
    with pytest.raises(NotImplementedError, match=r"x.detach\(\) instead of no_grad"):
        spx.func.hessian(lambda x: _with_no_grad_inside(spx, x))(x)
    # detach() stops both modes in torch and in spx: the same hessian.
    t, s = _both(
        lambda lib, x: lib.func.hessian(lambda x: (x.sin() * x.cos().detach()).sum())(x),
        X.reshape(-1),
    )
    _close(s, t)


@pytest.mark.parametrize("api", ["jvp", "jacfwd", "grad"])
@pytest.mark.parametrize("view", [False, True])
def test_in_place_write_under_no_grad_inside_transforms(api, view):
    # Forward mode follows a write made under no_grad (torch's forward-mode AD ignores
    # no_grad); reverse mode keeps the tensor's history, as torch keeps its grad_fn.
    def f(lib, x):
        y = x * 3
        with lib.no_grad():
            (y[1:] if view else y).mul_(2)
        return (y * x).sum()

    def run(lib, x):
        g = lambda x: f(lib, x)  # noqa: E731
        if api == "jvp":
            return lib.func.jvp(g, (x,), (lib.ones(3),))[1]
        return getattr(lib.func, api)(g)(x)

    t, s = _both(run, np.array([1.0, 2.0, 3.0], np.float32))
    _close(s, t)


def test_no_grad_on_a_tensor_from_outside_is_fine_in_hessian():
    # Only tensors the transform traces are ambiguous between forward and reverse mode.
    def run(lib, x):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        c = w * 3

        def f(x):
            with lib.no_grad():
                k = c + 1
            return (x * x * k).sum()

        return lib.func.hessian(f)(x)

    t, s = _both(run, np.array([1.0, 1.0], np.float32))
    _close(s, t)
