"""Checks of pending values (spx._tensor.checks): torch's errors, raised once the values exist.

Each case builds its index (or probabilities) with a computation, so spx records it as a pending
value; torch raises at the op itself, spx by the next read of a value at the latest. The
reference for every case is torch raising the same error type on the same values.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import spx
import spx.nn.functional as SF
from spx._tensor import graph


def _sync(out):
    """A read on the host: every deferred check of the values computed so far has run."""
    spx.ones(1).item()
    return out


def _lp(m):  # ctc_loss's log_probs (T=6, N=2, C=4), the same values in both
    return m.tensor(np.log(np.full((6, 2, 4), 0.25, np.float32)))


def _ctc_targets(m):  # padded ctc targets (N=2, S=2)
    return m.tensor([[1, 2], [3, 1]])


# (name, fn(module, functional) -> result); every index/probability is computed (`* 2`, `* 1.0`).
BAD = [
    ("embedding", lambda m, F: F.embedding(m.tensor([0, 3]) * 2, m.ones(5, 3)), IndexError),
    ("cross_entropy", lambda m, F: F.cross_entropy(m.ones(2, 5), m.tensor([1, 4]) * 2), IndexError),
    ("nll_loss", lambda m, F: F.nll_loss(m.ones(2, 5), m.tensor([1, 4]) * 2), IndexError),
    ("gather", lambda m, F: m.ones(2, 3).gather(1, m.tensor([[0], [2]]) * 2), RuntimeError),
    ("index_select", lambda m, F: m.ones(3, 2).index_select(0, m.tensor([1, 2]) * 2), IndexError),
    ("getitem", lambda m, F: m.ones(3, 2)[m.tensor([1, 2]) * 2], IndexError),
    ("setitem", lambda m, F: m.zeros(3).__setitem__(m.tensor([1, 2]) * 2, 1.0), IndexError),
    (
        "scatter_add",
        lambda m, F: m.zeros(3).scatter_add(0, m.tensor([1, 2]) * 2, m.ones(2)),
        RuntimeError,
    ),
    ("take", lambda m, F: m.ones(2, 2).take(m.tensor([1, 3]) * 2), IndexError),
    ("one_hot", lambda m, F: F.one_hot(m.tensor([1, 2]) * 2, 3), RuntimeError),
    (
        "binary_cross_entropy (logits passed)",
        lambda m, F: F.binary_cross_entropy(m.tensor([0.5, 2.0]) * 1.0, m.tensor([1.0, 0.0])),
        RuntimeError,
    ),
    (
        "binary_cross_entropy (nan)",
        lambda m, F: F.binary_cross_entropy(m.tensor([0.5, np.nan]) * 1.0, m.tensor([1.0, 0.0])),
        RuntimeError,
    ),
    ("multinomial", lambda m, F: m.multinomial(m.tensor([0.5, np.nan]) * 1.0, 1), RuntimeError),
    ("bernoulli", lambda m, F: m.bernoulli(m.tensor([0.5, 1.5]) * 1.0), RuntimeError),
    ("bernoulli (known)", lambda m, F: m.bernoulli(m.tensor([0.5, -0.5])), RuntimeError),
    (
        "index_add",
        lambda m, F: m.zeros(3).index_add(0, m.tensor([1, 2]) * 2, m.ones(2)),
        IndexError,  # torch: IndexError for a 1-d self, RuntimeError for 2-d
    ),
    (
        "index_add 2-d",
        lambda m, F: m.zeros(3, 2).index_add(0, m.tensor([1, 2]) * 2, m.ones(2, 2)),
        RuntimeError,
    ),
    (
        "index_add (known)",
        lambda m, F: m.zeros(3).index_add(0, m.tensor([5]), m.ones(1)),
        IndexError,
    ),
    ("take_along_dim", lambda m, F: m.zeros(3).take_along_dim(m.tensor([1, 2]) * 2), RuntimeError),
    (
        "gaussian_nll_loss",
        lambda m, F: F.gaussian_nll_loss(m.ones(2), m.ones(2), m.tensor([1.0, -1.0]) * 1.0),
        ValueError,
    ),
    (
        "embedding_bag",
        lambda m, F: F.embedding_bag(m.tensor([1, 2, 3]) * 3, m.ones(5, 2), m.tensor([0, 2])),
        (IndexError, RuntimeError),
    ),
    (
        "multi_margin_loss",
        lambda m, F: F.multi_margin_loss(m.ones(2, 3), m.tensor([1, 2]) * 2),
        RuntimeError,
    ),
    (
        "max_unpool2d",
        lambda m, F: F.max_unpool2d(m.ones(1, 1, 2, 2), m.tensor([[[[0, 1], [2, 9]]]]) * 2, 2),
        RuntimeError,
    ),
    (
        "ctc_loss input_lengths > T",
        lambda m, F: F.ctc_loss(_lp(m), _ctc_targets(m), m.tensor([7, 5]) * 1, m.tensor([2, 1])),
        RuntimeError,
    ),
    (
        "ctc_loss target_lengths > S",
        lambda m, F: F.ctc_loss(_lp(m), _ctc_targets(m), m.tensor([6, 5]), m.tensor([3, 1]) * 1),
        RuntimeError,
    ),
    (
        "ctc_loss target_lengths < 0",
        lambda m, F: F.ctc_loss(_lp(m), _ctc_targets(m), m.tensor([6, 5]), m.tensor([-1, 1]) * 1),
        RuntimeError,
    ),
    (
        "ctc_loss concatenated targets != sum(target_lengths)",
        lambda m, F: F.ctc_loss(
            _lp(m), m.tensor([1, 2, 3]), m.tensor([6, 5]), m.tensor([2, 2]) * 1
        ),
        RuntimeError,
    ),
]


@pytest.mark.parametrize(("name", "fn", "error"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_pending_value_raises_torchs_error_by_the_next_read(name, fn, error):
    with pytest.raises(error):
        fn(torch, TF)
    with pytest.raises(error):
        _sync(fn(spx, SF))
    assert not graph.STATE.checks  # the failed check is gone: the next step starts clean


GOOD = [
    lambda m, F: F.embedding(m.tensor([0, 2]) * 2, m.arange(15.0).reshape(5, 3)),
    lambda m, F: F.cross_entropy(m.arange(10.0).reshape(2, 5), m.tensor([1, 2]) * 2),
    lambda m, F: m.arange(6.0).reshape(2, 3).gather(1, m.tensor([[0], [1]]) * 2),
    lambda m, F: m.arange(6.0).reshape(3, 2)[m.tensor([1, 0]) * 2],
    lambda m, F: F.one_hot(m.tensor([1, 0]) * 2, 3),
    lambda m, F: F.binary_cross_entropy(m.tensor([0.25, 0.5]) * 1.0, m.tensor([1.0, 0.0])),
    lambda m, F: m.bernoulli(m.tensor([0.0, 1.0]) * 1.0),
    lambda m, F: m.arange(6.0).reshape(2, 3).take_along_dim(m.tensor([[1], [2]]) * 1, dim=1),
    lambda m, F: F.max_unpool2d(
        m.arange(4.0).reshape(1, 1, 2, 2), m.tensor([[[[0, 3], [9, 14]]]]) * 1, 2
    ),
    lambda m, F: F.ctc_loss(
        _lp(m), m.tensor([[0, 1, 2], [0, 3, 1]])[:, 1:], m.tensor([6, 5]) * 1, m.tensor([2, 1]) * 1
    ),
    lambda m, F: F.ctc_loss(
        _lp(m), m.tensor([1, 2, 3]) * 1, m.tensor([6, 5]), m.tensor([2, 1]) * 1
    ),
]


@pytest.mark.parametrize("fn", GOOD)
def test_good_pending_values_give_torchs_results_and_leave_no_check_behind(fn):
    expected = fn(torch, TF).numpy()
    got = _sync(fn(spx, SF))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
    assert not graph.STATE.checks


def test_the_error_names_the_line_that_recorded_the_op():
    targets = spx.tensor([[1, 2, 7]])[:, 1:]  # a slice: pending, as in a language model loop
    loss = SF.cross_entropy(spx.ones(2, 5), targets.reshape(-1))  # the line to name
    with pytest.raises(IndexError, match="target 7 is out of bounds for 5 classes") as info:
        loss.item()
    notes = "\n".join(info.value.__notes__)
    assert "loss = SF.cross_entropy(spx.ones(2, 5), targets.reshape(-1))" in notes


def test_the_check_reads_the_value_the_op_used_not_a_later_in_place_write():
    index = spx.tensor([0, 1]) * 3  # pending, holds 3: out of range for 3 rows
    rows = spx.ones(3, 2)[index]
    index.zero_()  # in range now, but the lookup above read 3 (torch had raised there)
    with pytest.raises(IndexError, match="index 3 is out of bounds"):
        _sync(rows)


def test_a_training_step_raises_when_its_program_runs():
    # The loop of a model whose vocabulary is too small: targets come from the batch (pending
    # slices). torch raises in cross_entropy; spx by the backward's program.
    spx.manual_seed(0)
    model = spx.nn.Sequential(spx.nn.Embedding(10, 4), spx.nn.Linear(4, 6))
    batch = spx.tensor([[1, 2, 8, 3]])
    inputs, targets = batch[:, :-1], batch[:, 1:]
    loss = SF.cross_entropy(model(inputs).reshape(-1, 6), targets.reshape(-1))
    with pytest.raises(IndexError, match="target 8 is out of bounds for 6 classes"):
        loss.backward()
        _sync(None)


def test_a_pending_ctc_label_out_of_range_raises_as_a_known_one_does():
    # torch reads a label outside [0, C) as garbage (no error on CPU); spx raises the IndexError
    # it raises for a known label, for a label computed in the same step (batch[:, 1:]) too.
    lp = _lp(spx)
    with pytest.raises(IndexError, match="target label 9 is out of range"):
        SF.ctc_loss(lp, spx.tensor([[1, 9], [3, 1]]), (6, 5), (2, 1))
    targets = spx.tensor([[0, 1, 9, 2], [0, 3, 1, 1]])[:, 1:]  # pending; 9 is a used label
    with pytest.raises(IndexError, match="target label 9 is out of range"):
        _sync(SF.ctc_loss(lp, targets, (6, 5), (2, 1)))
    # Past a sample's target length the padding is not a label: not checked (torch ignores it).
    targets = spx.tensor([[0, 1, 2, 9], [0, 3, 1, 1]])[:, 1:]
    expected = TF.ctc_loss(_lp(torch), torch.tensor([[1, 2, 0], [3, 0, 0]]), (6, 5), (2, 1))
    np.testing.assert_allclose(
        _sync(SF.ctc_loss(lp, targets, (6, 5), (2, 1))).item(), expected.item(), rtol=1e-5
    )
    assert not graph.STATE.checks


def test_traced_values_are_not_checked():
    # Inside spx.compile the index is a tracer: XLA's clamped result stands (documented).
    @spx.compile
    def lookup(x, i):
        return x[i * 2]

    out = lookup(spx.arange(3.0), spx.tensor([2]))
    assert out.tolist() == [2.0]
    assert not graph.STATE.checks


def _slow_bad_index():
    # An index behind a large matmul: not computed yet when the program's call returns.
    big = spx.ones(1500, 1500)
    return ((big @ big)[:2, 0] * 0).long() + 4  # 4: out of range for 3 rows


@pytest.mark.parametrize("read", [repr, lambda s: bool(s > 0), str])
def test_printing_and_branching_run_the_pending_checks_first(read):
    s = spx.arange(6.0).reshape(3, 2)[_slow_bad_index()].sum()
    with pytest.raises(IndexError, match="index 4 is out of bounds"):
        read(s)
    assert not graph.STATE.checks


def test_a_check_left_out_of_a_combined_program_still_runs():
    # Values on two devices cannot join one program: spx computes what is read and, on its
    # own, the checked value the combined program left out.
    import jax

    d0, d1 = jax.devices()[:2]
    rows = spx.ones(3, 2).to(d1)[spx.tensor([1, 2]).to(d1) * 2]
    with pytest.raises(IndexError, match="index 4 is out of bounds"):
        (spx.tensor([1.0]).to(d0) * 3).item()
        rows.tolist()
    assert not graph.STATE.checks


def test_checks_do_not_pile_up_over_a_loop_of_steps():
    from spx._tensor import program

    table = spx.ones(10, 4)
    sizes = []
    for step in range(30):
        index = spx.tensor([step % 10, 3]) * 1  # pending, in range
        (table[index].sum() * 2).item() if step % 10 == 9 else program.flush()
        sizes.append(len(graph.STATE.checks))
    assert max(sizes) <= 2, sizes
