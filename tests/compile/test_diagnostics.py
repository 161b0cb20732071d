"""spx.compile's messages for what a trace cannot keep: data-dependent Python (named at the
user's line, with the fix), values collected in a list, and recompiles on new shapes."""

import inspect
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn import functional as F

X = jnp.ones((4, 3))


def _line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _model_and_opt():
    model = nn.Linear(3, 1)
    return model, spx.optim.SGD(model.parameters(), lr=0.1)


def test_branch_on_a_traced_loss_names_the_users_line_and_the_fix():
    model, opt = _model_and_opt()

    def step(model, opt, x):
        opt.zero_grad()
        loss = spx.backward(lambda m: (m(x) ** 2).mean(), model)
        if loss > 1:
            loss = loss * 2
        opt.step()
        return loss

    line = _line_of(step, "if loss > 1:")
    # Before: "Attempted boolean conversion ... pure at spx/_compile/compiled.py ...".
    with pytest.raises(TypeError) as info:
        spx.compile(step)(model, opt, X)
    message = str(info.value)
    assert f'"{__file__}", line {line}, in step' in message
    assert "if loss > 1:" in message
    assert "jnp.where" in message and "jax.lax.cond" in message
    assert "compiled.py" not in message


def test_float_of_a_traced_value_says_to_convert_after_the_call():
    model, _ = _model_and_opt()

    def step(model, x):
        loss = model(x).sum()
        print(float(loss))
        return loss

    with pytest.raises(TypeError, match=r"(?s)line \d+, in step\n    print\(float\(loss\)\).*"
                       r"convert it after the call"):  # fmt: skip
        spx.compile(step)(model, X)


def test_boolean_mask_indexing_names_the_line_and_fixed_shape_alternatives():
    model, _ = _model_and_opt()

    def step(model, x):
        y = model(x)
        return y[y > 0].sum()

    with pytest.raises(IndexError, match=r"(?s)return y\[y > 0\]\.sum\(\).*jnp\.where"):
        spx.compile(step)(model, X)


_history = []


def test_a_list_filled_inside_the_step_is_reported_on_the_first_call():
    model, opt = _model_and_opt()
    _history.clear()

    @spx.compile
    def step(model, opt, x):
        opt.zero_grad()
        loss = spx.backward(lambda m: (m(x) ** 2).mean(), model)
        opt.step()
        _history.append(loss)
        return loss

    with pytest.warns(UserWarning, match=r"(?s)'_history' \(a global.*append\(float\(loss\)\)"):
        step(model, opt, X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            step(model, opt, X)  # no new trace, no new warning
    # What the warning says: placeholders from the traces (tensors holding tracers), never a
    # value per call.
    assert _history and all(isinstance(v._data, jax.core.Tracer) for v in _history)


def test_a_closure_list_is_reported_too():
    model, _ = _model_and_opt()
    seen = []

    def step(model, x):
        out = model(x)
        seen.append({"out": out})
        return out.sum()

    with pytest.warns(UserWarning, match=r"'seen' \(a variable the step closes over\)"):
        spx.compile(step)(model, X)


def test_recompiles_past_the_limit_warn_once_naming_the_argument():
    model, opt = _model_and_opt()

    @spx.compile
    def step(model, opt, batch):
        opt.zero_grad()
        loss = spx.backward(lambda m: (m(batch) ** 2).mean(), model)
        opt.step()
        return loss

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in range(1, 8):  # a handful of shapes is fine
            step(model, opt, jnp.ones((n, 3)))
    with pytest.warns(RuntimeWarning, match=r"batch: float32\[8,3\] -> float32\[9,3\]") as w:
        step(model, opt, jnp.ones((8, 3)))
        step(model, opt, jnp.ones((9, 3)))
    assert "9 different argument signatures" in str(w[0].message)
    assert w[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        step(model, opt, jnp.ones((10, 3)))  # said once
    assert step.signatures.count == 10
    np.testing.assert_array_equal(np.asarray(model.weight.shape), (1, 3))


def test_a_python_int_that_changes_every_call_warns_like_a_new_shape():
    """A step counter passed as a Python int is compiled into the program: 12 calls were 12
    silent compilations before; now the recompile warning names the argument and the fix."""
    model, _ = _model_and_opt()

    @spx.compile
    def step(model, x, k):
        return (model(x) * k).sum()

    x = jnp.ones((2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(8):
            step(model, x, k)
    with pytest.warns(RuntimeWarning, match=r"k: the Python value 7 -> the Python value 8") as w:
        step(model, x, 8)
    assert "pass a number that changes every call" in str(w[0].message)
    assert "spx.tensor(k)" in str(w[0].message)
    assert step.trace_count == step.signatures.count == 9
    # As a tensor it compiles once, whatever its value.
    step_t = spx.compile(lambda model, x, k: (model(x) * k).sum())
    for k in range(12):
        step_t(model, x, spx.tensor(float(k)))
    assert step_t.trace_count == 1


def test_dropout_inside_a_nested_jax_transform_names_the_cause_and_the_fix():
    """Dropout inside jax.checkpoint inside spx.compile raised JAX's bare UnexpectedTracerError
    about a 'key<fry>' escaping; now the error says why and shows code that works."""
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    x = spx.ones(2, 4)

    @spx.compile
    def step(m, x):
        return jax.checkpoint(lambda x: m(x))(x).sum()

    with pytest.raises(RuntimeError, match=r"(?s)inside a JAX transform nested in it.*next_key"):
        step(model, x)
    spx.randn(2)  # the generator is still usable

    # The fix the message shows: a key drawn in the step, passed into the nested transform.
    lin = nn.Linear(4, 4)

    @spx.compile
    def fixed(lin, x):
        key = spx.random.next_key()
        dropped = jax.checkpoint(lambda x, k: F.dropout(lin(x), 0.5, training=True, key=k))
        return dropped(x, key)

    first, second = fixed(lin, x), fixed(lin, x)
    assert not np.array_equal(first.numpy(), second.numpy())  # a fresh mask per call
    kept = first.numpy() != 0
    np.testing.assert_allclose(first.numpy()[kept], 2 * lin(x).detach().numpy()[kept], rtol=1e-6)
