"""torch's ``out=`` keyword on spx's top-level functions, against torch 2.13.

Before, ``spx.zeros``/``spx.arange``/``spx.randn`` (whose ``**kwargs`` take torch's layout and
pin_memory arguments) accepted ``out=`` and ignored it: the result did not reach ``out``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import spx

torch = pytest.importorskip("torch")

A = np.array([[1.0, -2.0, 3.5], [0.5, 4.0, -1.0]], np.float32)
B = np.array([[2.0, 1.0, -1.0], [3.0, -0.5, 2.0]], np.float32)


def _both(lib, x):
    return lib.tensor(x) if lib is torch else spx.tensor(x)


CALLS = {
    "add": lambda lib, out: lib.add(_both(lib, A), _both(lib, B), alpha=2, out=out),
    "mul": lambda lib, out: lib.mul(_both(lib, A), 3, out=out),
    "exp": lambda lib, out: lib.exp(_both(lib, A), out=out),
    "clamp": lambda lib, out: lib.clamp(_both(lib, A), -1, 2, out=out),
    "where": lambda lib, out: lib.where(_both(lib, A) > 0, _both(lib, A), _both(lib, B), out=out),
    "matmul": lambda lib, out: lib.matmul(_both(lib, A), _both(lib, B).T, out=out),
    "sum": lambda lib, out: lib.sum(_both(lib, A), 1, out=out),
    "cumsum": lambda lib, out: lib.cumsum(_both(lib, A), 1, out=out),
    "cat": lambda lib, out: lib.cat([_both(lib, A), _both(lib, B)], 0, out=out),
    "stack": lambda lib, out: lib.stack([_both(lib, A), _both(lib, B)], out=out),
    "zeros": lambda lib, out: lib.zeros(2, 3, out=out),
    "ones": lambda lib, out: lib.ones(2, 3, out=out),
    "full": lambda lib, out: lib.full((2, 3), 4.0, out=out),
    "arange": lambda lib, out: lib.arange(6, out=out),
    "linspace": lambda lib, out: lib.linspace(0, 1, 5, out=out),
    "eye": lambda lib, out: lib.eye(3, out=out),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_result_is_written_into_out_and_out_is_returned(name):
    call = CALLS[name]
    want = call(torch, None)
    for t_out, s_out in [
        (torch.empty(want.shape), spx.zeros(*want.shape)),  # the result's shape
        (torch.empty(0), spx.zeros(0)),  # empty: resized without a warning
    ]:
        got = call(spx, s_out)
        assert got is s_out
        call(torch, t_out)
        np.testing.assert_allclose(s_out.numpy(), t_out.numpy(), rtol=1e-6)
        assert tuple(s_out.shape) == tuple(t_out.shape)


def test_creation_functions_take_outs_dtype_as_torch_does():
    for name in ("zeros", "ones", "full", "arange"):
        t_out, s_out = torch.empty(0, dtype=torch.int32), spx.zeros(0, dtype=spx.int32)
        CALLS[name](torch, t_out)
        CALLS[name](spx, s_out)
        assert t_out.dtype == torch.int32 and s_out.dtype == spx.int32, name
        np.testing.assert_array_equal(s_out.numpy(), t_out.numpy())


def test_a_random_draw_reaches_out():
    out = spx.full((4,), 7.0)
    spx.randn(4, out=out)
    assert not np.allclose(out.numpy(), 7.0)


def test_resizing_a_non_empty_out_warns_as_torch_does():
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        torch.add(torch.ones(2), 1, out=torch.zeros(3))
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        out = spx.zeros(3)
        spx.add(spx.ones(2), 1, out=out)
    assert out.tolist() == [2.0, 2.0]
    assert len(theirs) == len(ours) == 1
    head = "This behavior is deprecated"  # torch's text after it names torch and its source
    assert str(ours[0].message).split(head)[0] == str(theirs[0].message).split(head)[0]
    assert ours[0].filename == __file__


def test_several_results_go_into_a_tuple_of_outs():
    x = np.array([[1.0, 3.0], [4.0, 2.0]], np.float32)
    tv, ti = torch.empty(2), torch.empty(2, dtype=torch.long)
    torch.max(torch.tensor(x), 0, out=(tv, ti))
    sv, si = spx.zeros(2), spx.zeros(2, dtype=spx.int32)
    got = spx.max(spx.tensor(x), 0, out=(sv, si))
    assert got.values is sv and got.indices is si
    np.testing.assert_array_equal(sv.numpy(), tv.numpy())
    np.testing.assert_array_equal(si.numpy(), ti.numpy())
    with pytest.raises(TypeError, match="tuple of 2 Tensors"):
        spx.max(spx.tensor(x), 0, out=sv)


def test_a_view_as_out_writes_through_to_its_base():
    base = spx.zeros(4)
    spx.add(spx.ones(2), 1, out=base[:2])
    t_base = torch.zeros(4)
    torch.add(torch.ones(2), 1, out=t_base[:2])
    np.testing.assert_array_equal(base.numpy(), t_base.numpy())
    with pytest.raises(RuntimeError, match="view of shape \\[2\\] and cannot be resized"):
        spx.add(spx.ones(3), 1, out=base[:2])


def test_torchs_errors():
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.add(torch.ones(2), 1.5, out=torch.zeros(2, dtype=torch.long))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        spx.add(spx.ones(2), 1.5, out=spx.zeros(2, dtype=spx.int32))
    match = "out=... arguments don't support automatic differentiation"
    with pytest.raises(RuntimeError, match=match):
        torch.mul(torch.ones(2, requires_grad=True), 2, out=torch.zeros(2))
    with pytest.raises(RuntimeError, match=match):
        spx.mul(spx.ones(2, requires_grad=True), 2, out=spx.zeros(2))
    with spx.no_grad():  # no history to lose: allowed, as in torch
        out = spx.zeros(2)
        spx.mul(spx.ones(2, requires_grad=True), 2, out=out)
        assert out.tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        spx.numel(spx.ones(2), out=spx.zeros(1))  # returns an int: torch has no out= either
    with pytest.raises(TypeError, match="argument 'out' must be a Tensor"):
        spx.add(spx.ones(2), 1, out=np.zeros(2))


def test_torchs_memory_keywords_are_accepted_and_other_keywords_refused():
    torch.zeros(2, layout=torch.strided, pin_memory=False)
    assert spx.zeros(2, layout=None, pin_memory=False).tolist() == [0.0, 0.0]
    assert spx.empty_like(spx.ones(2), memory_format=None).shape == (2,)
    with pytest.raises(TypeError, match="unexpected keyword argument 'dtpye'"):
        torch.zeros(2, dtpye=torch.int32)
    match = r"unexpected keyword argument 'dtpye'.*takes device, dtype"
    with pytest.raises(TypeError, match=match):
        spx.zeros(2, dtpye=spx.int32)  # was ignored: a float32 tensor came back
    with pytest.raises(TypeError, match="unexpected keyword argument 'requires_grads'"):
        spx.randn_like(spx.ones(2), requires_grads=True)


def test_creation_functions_resize_silently_and_refuse_a_dtype_other_than_outs():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.zeros(3, out=torch.ones(2))  # torch: no warning from a creation function
        out = spx.ones(2)
        spx.zeros(3, out=out)
    assert out.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="does not match dtype of out parameter"):
        torch.arange(3, dtype=torch.int32, out=torch.zeros(3))
    with pytest.raises(RuntimeError, match="does not match dtype of out parameter"):
        spx.arange(3, dtype=spx.int32, out=spx.zeros(3))


def _arange(lib, args, dtype_name, how):
    """``lib.arange(*args)`` made in ``dtype_name`` through ``dtype=`` or an empty ``out=``."""
    dtype = getattr(lib, dtype_name)
    if how == "dtype":
        return lib.arange(*args, dtype=dtype)
    return lib.arange(*args, out=lib.empty(0, dtype=dtype))


def _outcome(lib, args, dtype_name, how):
    try:
        return _arange(lib, args, dtype_name, how).tolist()
    except Exception as e:  # the error is the outcome, compared with torch's
        return type(e), str(e)


# torch casts arange's arguments to an integer result's dtype (truncating) before it counts
# and fills: int64 counts the truncated range; the narrower integer dtypes count with the
# arguments as given and wrap their values. spx holds int64 as int32 (no x64): spx.long
# tensors follow torch's int64 rule.
ARANGE_CASES = [
    ((0, 2, 0.5), "long"),  # step 0.5 is 0 in int64: "step must be nonzero"
    ((0, 3, 1.5), "long"),
    ((0.5, 3, 1), "long"),
    ((3,), "float32"),
    ((2.9,), "long"),
    ((0, 3.5, 1), "long"),
    ((3, 0.5, -1.5), "long"),
    ((-3.7, 2.2, 1.9), "long"),
    ((0, 1e-300, 1e-310), "long"),
    ((0, 1e19, 1e18), "long"),  # 1e19 does not fit int64
    ((0, -0.5, -1), "long"),
    ((0, 2, 0.5), "int16"),  # zeros: the length comes from the doubles, the step is 0
    ((0, 3, 1.5), "int16"),
    ((-3.7, 2.2, 1.9), "int8"),
    ((0, 2.9, 0.9), "uint8"),
    ((300,), "uint8"),  # wraps, as torch's
    ((0, 1e9, 1e8), "int16"),
    ((0, 1, 0.1), "float16"),
    ((0, 1, 0.1), "bfloat16"),
    ((0, 2, 0.5), "bool"),  # torch has no kernel for these
    ((3,), "complex64"),
    ((0, 5, -1), "long"),  # a step against the bounds
    ((5, 0, 1), "float32"),
    ((0, float("inf"), 1), "long"),
    ((0, float("nan"), 1), "float32"),
    ((0, 5, float("nan")), "float32"),
    ((0, 5, 0), "long"),
    ((0, 5, 1e-300), "float32"),  # too many elements
]


@pytest.mark.parametrize("how", ["out", "dtype"])
@pytest.mark.parametrize(("args", "dtype_name"), ARANGE_CASES)
def test_arange_computes_in_the_results_dtype_as_torch_does(args, dtype_name, how):
    theirs = _outcome(torch, args, dtype_name, how)
    ours = _outcome(spx, args, dtype_name, how)
    if isinstance(theirs, list):
        assert ours == theirs
    else:  # the same exception, its message torch's followed by spx's hint
        assert ours[0] is theirs[0] and ours[1].startswith(theirs[1]), (ours, theirs)


def test_arange_of_int32_is_torchs_long_without_x64():
    # spx holds torch's int64 as int32, so an int32 result counts as torch's int64 does.
    want = torch.arange(0, 3, 1.5, dtype=torch.long).tolist()
    assert spx.arange(0, 3, 1.5, dtype=spx.int32).tolist() == want == [0, 1, 2]


def test_arange_reads_tensor_arguments_as_numbers():
    for t_arg, s_arg in [(torch.tensor(3), spx.tensor(3)), (torch.tensor(2.5), spx.tensor(2.5))]:
        theirs, ours = torch.arange(t_arg), spx.arange(s_arg)
        assert ours.tolist() == theirs.tolist()
        assert ours.is_floating_point() == theirs.is_floating_point()
