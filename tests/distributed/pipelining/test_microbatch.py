"""Splitting batches into microbatches and merging outputs, against hand-computed values."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from spx.distributed.pipelining import TensorChunkSpec
from spx.distributed.pipelining.microbatch import (
    _Replicate,
    merge_chunks,
    split_args_kwargs_into_chunks,
    split_target,
)

X = jnp.arange(24, dtype=jnp.float32).reshape(4, 6)  # row r = 6r .. 6r+5


def test_split_on_dim_zero_by_default():
    args, kwargs = split_args_kwargs_into_chunks((X,), {"m": X + 100}, 2)
    assert len(args) == len(kwargs) == 2
    np.testing.assert_array_equal(args[1][0], [[12, 13, 14, 15, 16, 17], [18, 19, 20, 21, 22, 23]])
    np.testing.assert_array_equal(
        kwargs[0]["m"], [[100, 101, 102, 103, 104, 105], [106, 107, 108, 109, 110, 111]]
    )


def test_tensor_chunk_spec_chooses_the_dimension():
    args, kwargs = split_args_kwargs_into_chunks(
        (X, X),
        {"m": X},
        3,
        args_chunk_spec=(TensorChunkSpec(1), _Replicate),
        kwargs_chunk_spec={"m": TensorChunkSpec(1)},
    )
    # Columns 2 and 3 of every row, for the second of three microbatches.
    np.testing.assert_array_equal(args[1][0], [[2, 3], [8, 9], [14, 15], [20, 21]])
    np.testing.assert_array_equal(kwargs[2]["m"], [[4, 5], [10, 11], [16, 17], [22, 23]])
    for a in args:  # _Replicate passes the whole array to every microbatch
        np.testing.assert_array_equal(a[1], X)
    assert TensorChunkSpec.from_tuple((0, 1)) == (TensorChunkSpec(0), TensorChunkSpec(1))
    assert TensorChunkSpec.from_dict({"a": 2}) == {"a": TensorChunkSpec(2)}
    assert repr(TensorChunkSpec(1)) == "TensorChunkSpec(1)"


def test_non_arrays_are_replicated_and_pytrees_split_leafwise():
    tree = {"x": np.arange(8).reshape(4, 2), "scale": 0.5, "name": "q"}
    args, kwargs = split_args_kwargs_into_chunks((tree, 3), {"flag": True, "none": None}, 2)
    assert [a[1] for a in args] == [3, 3]
    assert [a[0]["scale"] for a in args] == [0.5, 0.5]
    assert [a[0]["name"] for a in args] == ["q", "q"]
    np.testing.assert_array_equal(args[0][0]["x"], [[0, 1], [2, 3]])
    np.testing.assert_array_equal(args[1][0]["x"], [[4, 5], [6, 7]])
    assert kwargs == [{"flag": True, "none": None}] * 2


def test_uneven_split_raises_naming_the_sizes():
    with pytest.raises(ValueError, match=r"dimension 0 has size 4.*n_microbatches=3"):
        split_args_kwargs_into_chunks((X,), {}, 3)
    with pytest.raises(ValueError, match=r"keyword argument 'm'.*dimension 1 has size 6"):
        split_args_kwargs_into_chunks((), {"m": X}, 4, kwargs_chunk_spec={"m": TensorChunkSpec(1)})
    with pytest.raises(ValueError, match="target"):
        split_target(X, 3)
    with pytest.raises(ValueError, match="scalar"):
        split_args_kwargs_into_chunks((jnp.float32(1.0) + jnp.zeros(()),), {}, 2)
    with pytest.raises(ValueError, match="one spec per argument"):
        split_args_kwargs_into_chunks((X, X), {}, 2, args_chunk_spec=(TensorChunkSpec(0),))


def test_split_target_and_merge_back():
    target = {"y": X, "w": X[:, :1]}
    parts = split_target(target, 4)
    np.testing.assert_array_equal(parts[3]["y"], [[18, 19, 20, 21, 22, 23]])
    np.testing.assert_array_equal(parts[2]["w"], [[12]])
    assert split_target(None, 2) == [None, None]
    merged = merge_chunks(parts)
    np.testing.assert_array_equal(merged["y"], X)
    np.testing.assert_array_equal(merged["w"], X[:, :1])


def test_merge_of_pytree_outputs():
    chunks = [(jnp.full((1, 2), i), {"h": jnp.full((2, 1), 10 * i), "n": "tag"}) for i in range(3)]
    out, extra = merge_chunks(chunks)
    np.testing.assert_array_equal(out, [[0, 0], [1, 1], [2, 2]])
    np.testing.assert_array_equal(extra["h"], [[0], [0], [10], [10], [20], [20]])
    assert extra["n"] == "tag"  # a non-array output is taken from the first microbatch
    spec = (TensorChunkSpec(1), {"h": TensorChunkSpec(0), "n": None})
    out, extra = merge_chunks(chunks, spec)
    np.testing.assert_array_equal(out, [[0, 0, 1, 1, 2, 2]])
    with pytest.raises(ValueError, match="output_merge_spec has 1 entries for 2 outputs"):
        merge_chunks([(jnp.ones(1), jnp.ones(1))], (TensorChunkSpec(0),))
    with pytest.raises(ValueError, match="no microbatch outputs"):
        merge_chunks([])


def test_merge_spec_none_keeps_the_first_microbatch_value():
    chunks = [(jnp.full((1, 2), i), jnp.full((1,), 7)) for i in range(2)]
    out, same = merge_chunks(chunks, (TensorChunkSpec(0), None))
    np.testing.assert_array_equal(out, [[0, 0], [1, 1]])
    np.testing.assert_array_equal(same, [7])  # torch: not concatenated
