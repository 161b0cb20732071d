"""spx.Generator: a seeded stream of its own, accepted wherever torch takes generator=."""

import numpy as np
import pytest

import spx

torch = pytest.importorskip("torch")

DRAWS = {
    "randn": lambda g: spx.randn(5, generator=g),
    "rand": lambda g: spx.rand(5, generator=g),
    "randint": lambda g: spx.randint(0, 100, (5,), generator=g),
    "randperm": lambda g: spx.randperm(7, generator=g),
    "randn_like": lambda g: spx.randn_like(spx.zeros(5), generator=g),
    "rand_like": lambda g: spx.rand_like(spx.zeros(5), generator=g),
    "randint_like": lambda g: spx.randint_like(spx.zeros(5), 0, 100, generator=g),
    "normal_": lambda g: spx.empty(5).normal_(generator=g),
    "uniform_": lambda g: spx.empty(5).uniform_(generator=g),
    "multinomial": lambda g: spx.multinomial(spx.ones(6), 3, generator=g),
    "normal": lambda g: spx.normal(0.0, 1.0, (5,), generator=g),
    "init.normal_": lambda g: spx.nn.init.normal_(spx.empty(5), generator=g),
    "init.xavier_uniform_": lambda g: spx.nn.init.xavier_uniform_(spx.empty(3, 4), generator=g),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_a_seed_fixes_the_draws_apart_from_the_global_stream(name):
    draw = DRAWS[name]
    spx.manual_seed(0)
    first = draw(spx.Generator().manual_seed(7)).numpy()
    spx.manual_seed(123)  # the global seed does not matter
    again = draw(spx.Generator().manual_seed(7)).numpy()
    np.testing.assert_array_equal(first, again)
    g = spx.Generator().manual_seed(7)
    draw(g)
    assert not np.array_equal(draw(g).numpy(), first)  # the stream advances


def test_generator_draws_leave_the_global_stream_alone():
    spx.manual_seed(3)
    plain = [spx.randn(4).numpy() for _ in range(2)]
    spx.manual_seed(3)
    g = spx.Generator().manual_seed(1)
    mixed = []
    for _ in range(2):
        spx.randn(4, generator=g)
        mixed.append(spx.randn(4).numpy())
    np.testing.assert_array_equal(np.stack(plain), np.stack(mixed))


def test_torchs_generator_methods():
    g = spx.Generator()
    assert g.initial_seed() == torch.Generator().initial_seed()  # torch's default seed
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    new = g.seed()
    assert g.initial_seed() == new
    with pytest.raises(ValueError, match="seed"):
        g.manual_seed(2**64)
    assert g.manual_seed(-1).initial_seed() == torch.Generator().manual_seed(-1).initial_seed()


def test_a_wrong_generator_is_named():
    for wrong in (torch.Generator(), 0, "seed"):
        with pytest.raises(TypeError, match=r"generator must be an spx\.Generator"):
            spx.randn(2, generator=wrong)


def test_the_data_pipeline_shuffles_reproducibly_with_it():
    def split(seed):
        parts = spx.utils.data.random_split(
            range(10), [7, 3], generator=spx.Generator().manual_seed(seed)
        )
        return [list(p.indices) for p in parts]

    a, b = split(4), split(4)
    assert a == b and sorted(a[0] + a[1]) == list(range(10))

    def epochs(g):
        dl = spx.utils.data.DataLoader(range(8), batch_size=8, shuffle=True, generator=g)
        return [next(iter(dl)).tolist() for _ in range(2)]

    e1, e2 = epochs(spx.Generator().manual_seed(9)), epochs(spx.Generator().manual_seed(9))
    assert e1 == e2 and e1[0] != e1[1]  # reproducible, and the epochs differ


def test_inside_compiled_code_it_is_an_error_not_a_constant():
    g = spx.Generator().manual_seed(0)

    @spx.compile
    def step(x):
        return x + spx.randn(3, generator=g)

    with pytest.raises(RuntimeError, match="same numbers"):
        step(spx.zeros(3))


def test_a_torch_script_using_a_generator_runs_renamed():
    for lib in (torch, spx):
        g = lib.Generator().manual_seed(42)
        parts = lib.utils.data.random_split(range(10), [8, 2], generator=g)
        assert [len(p) for p in parts] == [8, 2]
        assert lib.randn(3, generator=g).shape == (3,)
