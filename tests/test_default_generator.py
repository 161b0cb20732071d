"""spx.default_generator (torch.default_generator) and spx.random.fork_rng (torch's).

``torch.manual_seed`` returns the default generator, and scripts pass it where a generator is
expected; ``fork_rng`` runs draws that leave the global stream as it was. Each behaviour is
checked on torch first, then on spx.
"""

import numpy as np
import pytest

import spx
from spx.data import DataLoader, TensorDataset, random_split

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _restore_rng_state():
    state = spx.get_rng_state()
    yield
    spx.set_rng_state(state)


def test_manual_seed_returns_the_default_generator_as_torch():
    assert torch.manual_seed(3) is torch.default_generator
    assert torch.random.default_generator is torch.default_generator
    g = spx.manual_seed(3)
    assert g is spx.default_generator and spx.random.default_generator is g
    assert g.initial_seed() == torch.default_generator.initial_seed() == 3
    assert isinstance(g, spx.Generator)


def test_the_default_generator_is_the_global_stream():
    # Seeding through it, drawing with it and drawing without a generator are one stream.
    spx.default_generator.manual_seed(7)
    a = spx.rand(3, generator=spx.default_generator).tolist()
    b = spx.randn(2).tolist()
    spx.manual_seed(7)
    assert spx.rand(3).tolist() == a
    assert spx.randn(2, generator=spx.default_generator).tolist() == b
    w = spx.empty(4)
    spx.manual_seed(7)
    spx.nn.init.normal_(w, generator=spx.default_generator)
    spx.manual_seed(7)
    assert spx.nn.init.normal_(spx.empty(4)).tolist() == w.tolist()


def test_its_state_is_the_global_state():
    spx.manual_seed(1)
    state = spx.default_generator.get_state()
    assert state.tolist() == spx.get_rng_state().tolist()
    a = spx.rand(2).tolist()
    assert spx.default_generator.set_state(state) is spx.default_generator
    assert spx.rand(2).tolist() == a
    s = spx.default_generator.seed()
    assert spx.initial_seed() == s


def test_the_data_pipeline_takes_it_as_the_global_stream():
    ds = TensorDataset(spx.arange(10))

    def order(**kwargs):
        spx.manual_seed(5)
        return [int(x) for (b,) in DataLoader(ds, batch_size=10, shuffle=True, **kwargs) for x in b]

    assert order(generator=spx.default_generator) == order()
    spx.manual_seed(5)
    first = [list(s.indices) for s in random_split(ds, [4, 6], generator=spx.default_generator)]
    spx.manual_seed(5)
    assert [list(s.indices) for s in random_split(ds, [4, 6])] == first


def test_fork_rng_restores_the_stream_as_torch():
    torch.manual_seed(0)
    with torch.random.fork_rng():
        t_inside = torch.rand(2)
    assert torch.equal(torch.rand(2), t_inside)  # the block's draws did not advance it

    spx.manual_seed(0)
    with spx.random.fork_rng():
        inside = spx.rand(2).tolist()
        spx.manual_seed(99)  # even reseeding inside is undone
    assert spx.rand(2).tolist() == inside
    assert spx.initial_seed() == 0


def test_fork_rng_restores_after_an_exception_and_can_be_disabled():
    spx.manual_seed(0)
    expected = spx.rand(2).tolist()
    spx.manual_seed(0)
    with pytest.raises(ValueError), spx.random.fork_rng():
        spx.rand(5)
        raise ValueError
    assert spx.rand(2).tolist() == expected
    # enabled=False: an ordinary block, as torch's
    spx.manual_seed(0)
    with spx.random.fork_rng(enabled=False):
        first = spx.rand(2).tolist()
    assert first == expected and spx.rand(2).tolist() != expected
    torch.manual_seed(0)
    with torch.random.fork_rng(enabled=False):
        t_first = torch.rand(2)
    assert not torch.equal(torch.rand(2), t_first)


def test_fork_rng_accepts_torchs_arguments():
    spx.manual_seed(0)
    with spx.random.fork_rng(devices=[0], device_type="cuda"):
        a = np.asarray(spx.rand(2))
    assert np.array_equal(np.asarray(spx.rand(2)), a)


def test_a_copy_is_an_independent_generator_in_its_state_as_torch():
    import copy
    import pickle

    torch.manual_seed(0)
    t_copy = copy.deepcopy(torch.default_generator)
    t_a = torch.rand(2, generator=t_copy)
    assert torch.equal(torch.rand(2), t_a)  # drawing from the copy left the global stream
    for clone in (copy.deepcopy, lambda g: pickle.loads(pickle.dumps(g))):
        spx.manual_seed(0)
        g = clone(spx.default_generator)
        assert type(g) is spx.Generator and g is not spx.default_generator
        a = spx.rand(2, generator=g).tolist()
        assert spx.rand(2).tolist() == a


def test_fork_rng_inside_compiled_code():
    @spx.compile
    def step(x):
        with spx.random.fork_rng():
            inside = spx.rand(2)
        return x + inside, spx.rand(2)

    spx.manual_seed(0)
    inside, after = step(spx.zeros(2))
    assert inside.tolist() == after.tolist()  # the block's draw did not advance the stream
    inside2, _ = step(spx.zeros(2))
    assert inside2.tolist() != inside.tolist()  # and the stream still advances per call
