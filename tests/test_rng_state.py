"""Saving and restoring random streams (torch's get_rng_state/set_rng_state and
Generator.get_state/set_state): draws after a restore repeat the draws after the save."""

import numpy as np
import pytest

import spx
from spx import nn

torch = pytest.importorskip("torch")


def _draws(generator=None):
    kw = {} if generator is None else {"generator": generator}
    out = [spx.rand(3, **kw), spx.randn(2, 2, **kw), spx.randint(0, 100, (4,), **kw)]
    w = spx.empty(3, 3)
    nn.init.normal_(w, **kw)
    out.append(w)
    if generator is None:  # dropout draws from the rank's stream
        out.append(nn.functional.dropout(spx.ones(8), 0.5, training=True))
    return [t.numpy(force=True) for t in out]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("draw_first", [False, True])
def test_global_state_restores_the_stream(draw_first):
    spx.manual_seed(7)
    if draw_first:
        spx.rand(1)  # the key exists (and advanced) before the save
    state = spx.get_rng_state()
    assert state.dtype == spx.uint8 and state.dim() == 1  # torch's ByteTensor shape
    first = _draws()
    spx.manual_seed(123)  # anything in between
    spx.rand(5)
    spx.set_rng_state(state)
    assert spx.initial_seed() == 7
    _same(_draws(), first)


def test_a_saved_state_survives_a_checkpoint_file(tmp_path):
    spx.manual_seed(3)
    spx.rand(2)
    spx.save({"rng": spx.get_rng_state()}, tmp_path / "ckpt.pt")
    first = _draws()
    spx.set_rng_state(spx.load(tmp_path / "ckpt.pt")["rng"])
    _same(_draws(), first)


def test_generator_state_restores_tensor_draws_and_the_sampler_stream():
    g = spx.Generator().manual_seed(11)
    data = spx.utils.data.TensorDataset(spx.arange(10))
    loader = spx.utils.data.DataLoader(data, batch_size=5, shuffle=True, generator=g)
    list(loader)  # the numpy stream exists and advanced
    spx.rand(1, generator=g)
    state = g.get_state()
    first = _draws(g) + [b[0].numpy() for b in loader]
    g.manual_seed(999)
    assert g.set_state(state) is g
    _same(_draws(g) + [b[0].numpy() for b in loader], first)
    assert g.initial_seed() == 11


def test_a_fresh_generator_state_restarts_from_its_seed():
    g = spx.Generator().manual_seed(5)
    state = g.get_state()
    first = _draws(g)
    _same(_draws(spx.Generator().set_state(state)), first)


def test_torchs_state_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="torch state can't restore spx's stream"):
        spx.set_rng_state(torch.get_rng_state().numpy())
    with pytest.raises(ValueError, match="does not come from spx"):
        spx.Generator().set_state(torch.Generator().get_state().numpy())


def test_a_state_of_the_wrong_type_names_what_was_given():
    with pytest.raises(TypeError, match=r"uint8 tensor.*float32 and shape \(3,\)"):
        spx.set_rng_state(spx.ones(3))
    with pytest.raises(TypeError, match="got str"):
        spx.Generator().set_state("state")


def test_reading_the_state_inside_compiled_code_raises():
    model = nn.Dropout(0.5)

    @spx.compile
    def step(m, x):
        spx.get_rng_state()
        return m(x)

    spx.manual_seed(0)
    with pytest.raises(RuntimeError, match="save the state outside the compiled function"):
        step(model, spx.ones(4))


def test_reseeding_a_generator_restarts_the_loader_that_shuffles_with_it():
    # torch: g.manual_seed(s) after DataLoader(generator=g) restarts the loader's order.
    orders = {}
    for lib in (torch, spx):
        g = lib.Generator().manual_seed(4)
        data = lib.utils.data.TensorDataset(lib.arange(10))
        loader = lib.utils.data.DataLoader(data, batch_size=10, shuffle=True, generator=g)
        first = next(iter(loader))[0].tolist()
        g.manual_seed(4)
        orders[lib.__name__] = (first, next(iter(loader))[0].tolist())
    for first, again in orders.values():
        assert again == first


def test_negative_seeds_read_back_as_torchs_unsigned_seed():
    for lib in (torch, spx):
        lib.manual_seed(-1)
        lib.get_rng_state()
        assert lib.initial_seed() == 2**64 - 1, lib.__name__


def test_restoring_the_state_inside_a_compiled_step_repeats_the_draws():
    spx.manual_seed(0)
    state = spx.get_rng_state()
    drop = nn.Dropout(0.5)

    def masked(d, x):
        spx.set_rng_state(state)  # the same mask every call
        return d(x)

    eager = masked(drop, spx.ones(16)).numpy()
    step = spx.compile(masked)
    first, second = (step(drop, spx.ones(16)).numpy() for _ in range(2))
    np.testing.assert_array_equal(first, eager)
    np.testing.assert_array_equal(second, eager)
    assert 0 < (eager == 0).sum() < 16
