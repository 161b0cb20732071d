"""spx._compile.sharing: entries shared between state dicts, found, stripped and restored."""

import jax.numpy as jnp

from spx._compile import sharing


def _states():
    step = jnp.zeros(())
    return step, [
        {"exp_avg": jnp.ones(2), "step": step},
        {"exp_avg": jnp.ones(2), "step": step},
        jnp.ones(3),  # not a dict: never part of a pattern
        {"exp_avg": jnp.ones(2), "step": step},
    ]


def test_find_shared_names_each_repeat_of_an_earlier_entry():
    _, values = _states()
    assert sharing.find_shared(values) == ((1, "step", 0, "step"), (3, "step", 0, "step"))


def test_python_numbers_are_never_shared_even_when_interned():
    assert sharing.find_shared([{"a": 1, "b": 1.0}, {"a": 1, "b": 1.0}]) == ()


def test_strip_copies_dicts_and_restore_puts_the_entries_back():
    step, values = _states()
    pattern = sharing.find_shared(values)
    stripped = sharing.strip(values, pattern)
    assert "step" in values[1] and "step" not in stripped[1]  # the caller's dicts unchanged
    assert stripped[0] is values[0] and stripped[2] is values[2]  # untouched slots not copied
    sharing.restore(stripped, pattern)
    assert stripped[1]["step"] is step and stripped[3]["step"] is step


def test_holds_detects_a_replaced_entry():
    _, values = _states()
    pattern = sharing.find_shared(values)
    assert sharing.holds(values, pattern)
    values[3] = {"exp_avg": jnp.ones(2), "step": jnp.zeros(())}
    assert not sharing.holds(values, pattern)
    values[3] = None
    assert not sharing.holds(values, pattern)


def test_arrays_of_lists_what_a_slot_holds():
    step, values = _states()
    assert [x is step for x in sharing.arrays_of(values[0])] == [False, True]
    assert len(sharing.arrays_of(values[2])) == 1
    assert sharing.arrays_of(None) == [] and sharing.arrays_of({"lr": 0.1}) == []


def test_slot_aliases_names_each_slot_repeating_an_earlier_array():
    w, b = jnp.ones(2), jnp.zeros(2)
    assert sharing.slot_aliases([w, b, {"m": w}, b, jnp.ones(2)]) == ((2, 0), (3, 1))


def test_a_step_runs_after_two_parameters_were_given_one_array():
    # `target.weight.data = net.weight.data`: the cached program donated net's arrays, which
    # XLA refuses with target reading the same ones; the call retraces for the aliasing.
    import numpy as np

    import spx

    net, target = spx.nn.Linear(3, 1), spx.nn.Linear(3, 1)
    opt = spx.optim.SGD(net.parameters(), lr=0.1)

    @spx.compile
    def step(x):
        opt.zero_grad()
        loss = ((net(x) - target(x).detach()) ** 2).mean() + net(x).sum() * 0.1
        loss.backward()
        opt.step()
        return loss

    x = spx.ones(2, 3)
    step(x), step(x)
    target.weight.data, target.bias.data = net.weight.data, net.bias.data
    before = net.weight.detach().numpy().copy()
    with spx.no_grad():
        want = (net(x).sum() * 0.1).item()  # the two models agree: only the second term
    np.testing.assert_allclose(float(step(x)), want, rtol=1e-6)
    np.testing.assert_allclose(net.weight.detach().numpy(), before - 0.1 * 0.1 * 2 * 1.0)
    assert np.isfinite(target(x).detach().numpy()).all()  # still readable: not donated
