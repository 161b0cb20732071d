"""``spx.func.vmap`` against torch.func.vmap: in_dims/out_dims, chunks, randomness, errors."""

import numpy as np
import pytest

import spx
from spx import nn
from spx.func import vmap

torch = pytest.importorskip("torch")

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10
B = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)


def _close(actual, expected):
    if isinstance(expected, tuple | list | dict):
        assert type(actual) is type(expected)
        pairs = (
            [(actual[k], expected[k]) for k in expected]
            if isinstance(expected, dict)
            else list(zip(actual, expected, strict=True))
        )
        if isinstance(expected, dict):
            assert list(actual) == list(expected)
        for a, e in pairs:
            _close(a, e)
        return
    if not isinstance(expected, torch.Tensor):
        assert actual == expected
        return
    assert isinstance(actual, spx.Tensor)
    assert tuple(actual.shape) == tuple(expected.shape)
    np.testing.assert_allclose(np.asarray(actual), expected.numpy(), rtol=1e-5, atol=1e-6)


def _both(f, args, **kw):
    t_args = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    s_args = [spx.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    return vmap(f, **kw)(*s_args), torch.func.vmap(f, **kw)(*t_args)


@pytest.mark.parametrize(
    ("in_dims", "args"),
    [
        (0, (A, A)),
        (1, (A, A)),
        (-1, (A, A)),
        ((0, None), (A, B)),
        ((2, 1), (A, np.swapaxes(A, 1, 2).copy())),
    ],
)
def test_in_dims(in_dims, args):
    _close(*_both(lambda x, y: (x * y).sum(0) + y.mean(), args, in_dims=in_dims))


@pytest.mark.parametrize("out_dims", [0, 1, -1, (1, 0), (0, None)])
def test_out_dims(out_dims):
    shared = isinstance(out_dims, tuple) and out_dims[1] is None

    def f(x, y):
        # an output that is the same for every slice may have out_dim None
        return x @ y.T, (y * 2 if shared else y * x.mean())

    _close(*_both(f, (A, B), in_dims=(0, None), out_dims=out_dims))


def test_nested_in_dims_over_dicts_and_lists():
    def f(p, xs):
        return p["w"] * xs[0] + p["b"], xs[1]

    s_args = ({"w": spx.tensor(B), "b": spx.tensor(A)}, [spx.tensor(A), spx.tensor(B)])
    t_args = ({"w": torch.tensor(B), "b": torch.tensor(A)}, [torch.tensor(A), torch.tensor(B)])
    in_dims = ({"w": None, "b": 0}, [0, None])
    _close(vmap(f, in_dims=in_dims)(*s_args), torch.func.vmap(f, in_dims=in_dims)(*t_args))


def test_non_tensor_outputs_and_kwargs_pass_through():
    def f(x, scale=1.0):
        return x * scale, "tag"

    s = vmap(f, out_dims=(0, None))(spx.tensor(A), scale=3.0)
    t = torch.func.vmap(f, out_dims=(0, None))(torch.tensor(A), scale=3.0)
    _close(s, t)


@pytest.mark.parametrize("chunk_size", [1, 2, 5])
def test_chunk_size_gives_the_same_numbers(chunk_size):
    x = np.linspace(0, 1, 5 * 3, dtype=np.float32).reshape(5, 3)

    def f(a, b):
        return a.exp() * b, b.sum()

    kw = {"in_dims": (0, None), "out_dims": (1, None)}
    s = vmap(f, **kw, chunk_size=chunk_size)(spx.tensor(x), spx.tensor(B[:, :3]))
    # torch's own chunking cannot concatenate an out_dims=None output: compare unchunked.
    _close(s, torch.func.vmap(f, **kw)(torch.tensor(x), torch.tensor(B[:, :3])))


def test_nested_vmap_and_modules():
    torch.manual_seed(0)
    t_lin = torch.nn.Linear(4, 2)
    lin = nn.Linear(4, 2)
    lin.load_state_dict({k: v.detach().numpy() for k, v in t_lin.state_dict().items()})
    s = vmap(vmap(lin))(spx.tensor(A))
    t = torch.func.vmap(torch.func.vmap(t_lin))(torch.tensor(A))
    np.testing.assert_allclose(np.asarray(s.detach()), t.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_randomness_error_same_different():
    x = spx.ones(4, 1000)
    spx.manual_seed(0)
    key = spx.random.get_key()
    with pytest.raises(
        RuntimeError, match="called random operation while in randomness error mode"
    ):
        vmap(lambda v: v * spx.rand_like(v))(x)
    assert spx.random.get_key() is key  # the refused draw left the generator as it was
    same = vmap(lambda v: v * spx.rand_like(v), randomness="same")(x)
    np.testing.assert_array_equal(np.asarray(same[0]), np.asarray(same[3]))
    different = vmap(lambda v: v * spx.rand_like(v), randomness="different")(x)
    assert not np.array_equal(np.asarray(different[0]), np.asarray(different[3]))
    assert 0.4 < float(different.mean()) < 0.6
    assert not isinstance(spx.random.get_key(), spx.Tensor)
    spx.rand(2)  # the generator still works eagerly afterwards
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vmap(lambda v: v, randomness="sometimes")


def _err(fn, args, kw, match):
    for lib in (torch, spx):
        conv = [lib.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
        with pytest.raises(ValueError, match=match):
            lib.func.vmap(fn, **kw)(*conv)


def test_errors_match_torch():
    _err(lambda x: x, (A,), {"in_dims": [0]}, "expected `in_dims` to be int or a")
    _err(lambda: 1, (), {}, "got no inputs")
    _err(lambda x, y: x, (A, B), {"in_dims": (0,)}, "in_dims is not compatible with the structure")
    _err(
        lambda x: x, (A,), {"in_dims": (1.5,)}, "in_dim must be either an integer dimension or None"
    )
    _err(lambda x, n: x, (A, 3), {"in_dims": (0, 0)}, "We cannot vmap over non-Tensor arguments")
    _err(lambda x: x, (A,), {"in_dims": 3}, "expected in_dim to satisfy -3 <= in_dim < 3")
    _err(lambda x: x, (A,), {"in_dims": None}, "expected `in_dims` to be int or a")
    _err(
        lambda x, y: x,
        (A, B),
        {"in_dims": (None, None)},
        "Expected at least one Tensor to vmap over",
    )
    _err(lambda x, y: x, (A, B), {}, "Expected all tensors to have the same size")
    _err(lambda x: (x, 3), (A,), {}, "must only return Tensors, got type <class 'int'>")
    _err(
        lambda x: x, (A,), {"out_dims": None}, "can not return a BatchedTensor when out_dim is None"
    )
    _err(lambda x: (x, x), (A,), {"out_dims": (0, 0, 0)}, "out_dims is not compatible")
    _err(lambda x: x, (A,), {"out_dims": 1.5}, "`out_dims` must be an int, None or")
    for lib in (torch, spx):
        with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
            lib.func.vmap(lambda x: x, chunk_size=0)(lib.ones(2))


@pytest.mark.parametrize("chunk_size", [None, 2])
def test_empty_batch(chunk_size):
    s = vmap(lambda x: x * 2, chunk_size=chunk_size)(spx.ones(0, 3))
    t = torch.func.vmap(lambda x: x * 2)(torch.ones(0, 3))
    _close(s, t)


def test_top_level_vmap_as_torch_vmap():
    # torch.vmap is torch.func.vmap under its top-level name; so is spx's.
    f = lambda x, y: (x * y).sum(0)  # noqa: E731
    out = spx.vmap(f, in_dims=(0, None))(spx.tensor(A), spx.tensor(B))
    _close(out, torch.vmap(f, in_dims=(0, None))(torch.tensor(A), torch.tensor(B)))
