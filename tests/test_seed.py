"""spx.seed (torch.seed): a non-deterministic 64-bit seed, set and returned."""

import pytest

import spx

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _restore_rng_state():
    """spx.seed reseeds the calling rank's generator: restore it after each test."""
    state = spx.get_rng_state()
    yield
    spx.set_rng_state(state)


def test_seed_is_set_returned_and_fresh():
    seeds = [spx.seed() for _ in range(4)]
    assert len(set(seeds)) == 4  # from the OS's entropy: collisions are ~4 in 2**64
    for s in seeds:
        assert isinstance(s, int) and 0 <= s < 2**64
    assert spx.initial_seed() == seeds[-1]
    # the same kind of number torch returns
    t = torch.seed()
    assert isinstance(t, int) and 0 <= t < 2**64 and torch.initial_seed() == t


def test_draws_after_seed_replay_with_manual_seed():
    s = spx.seed()
    first = spx.rand(4).tolist()
    spx.manual_seed(s)
    assert spx.rand(4).tolist() == first


def test_seed_is_exported_like_torch():
    assert spx.seed is spx.random.seed
    assert torch.seed is torch.random.seed
