"""RNN / LSTM / GRU and their cells against torch.nn: outputs, final states, every gradient.

Each case loads torch's state_dict into the spx layer, runs both on the same input (and initial
state, when given) and compares every output, the input's and the state's gradients, and every
parameter's ``.grad`` after ``loss.backward()`` with ``loss = sum(out_i * cot_i)`` over all the
outputs; then the same through ``jax.vjp`` under ``jax.jit``.
"""

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn
from spx.nn import functional as F
from spx.nn.functional import rnn as rnn_F
from tests.nn._parity import assert_close, copy_weights, host

torch = pytest.importorskip("torch")

# A recurrence feeds every step's rounding into the next: over these 6 steps of float32 the
# two libraries' tanh/sigmoid and GEMM orders drift apart by a few ulps, and parameter grads
# sum over time and batch, so they get a little more absolute room.
RTOL, ATOL, PARAM_ATOL = 1e-5, 2e-6, 1e-5
T, N, H_IN = 6, 3, 4


def _flat(out):
    """An RNN's outputs as a flat list: ``(out, h)`` and ``(out, (h, c))`` alike."""
    if isinstance(out, tuple | list):
        return [leaf for o in out for leaf in _flat(o)]
    return [out]


def _pack(states, lstm):
    """The layer's state argument from a list of arrays: ``(h, c)`` for LSTMs, else ``h``."""
    if not states:
        return None
    return tuple(states) if lstm else states[0]


@jax.jit
def _jax_out_and_grads(m, x, states, cots, lstm):
    def f(m, x, states):
        args = (x,) if not states else (x, _pack(states, lstm))
        return [jnp.asarray(o) for o in _flat(m(*args))]

    ys, vjp = jax.vjp(f, m, x, states)
    return ys, vjp(cots)


_jax_out_and_grads = jax.jit(_jax_out_and_grads.__wrapped__, static_argnums=4)


def check_rnn(t_layer, s_layer, x, states=(), lstm=False, rtol=RTOL, atol=ATOL):
    """Outputs, input/state gradients and parameter grads of ``s_layer`` equal torch's."""
    copy_weights(t_layer, s_layer)
    states = list(states)

    # torch.
    t_layer.zero_grad()
    xt = torch.tensor(x, requires_grad=True)
    st = [torch.tensor(s, requires_grad=True) for s in states]
    yt = _flat(t_layer(xt, _pack(st, lstm)) if st else t_layer(xt))
    rng = np.random.default_rng(1)
    cots = [rng.standard_normal(tuple(y.shape)).astype(np.float32) for y in yt]
    sum((y * torch.tensor(c)).sum() for y, c in zip(yt, cots, strict=True)).backward()

    # spx, torch style.
    s_layer.zero_grad()
    xs = spx.tensor(x, requires_grad=True)
    ss = [spx.tensor(s, requires_grad=True) for s in states]
    ys = _flat(s_layer(xs, _pack(ss, lstm)) if ss else s_layer(xs))
    assert len(ys) == len(yt)
    for i, (y, y_t) in enumerate(zip(ys, yt, strict=True)):
        assert isinstance(y, spx.Tensor), type(y)
        assert tuple(y.shape) == tuple(y_t.shape), (i, y.shape, y_t.shape)
        assert_close(y, y_t, rtol, atol, f"output {i}")
    loss = ys[0].mul(spx.tensor(cots[0])).sum()
    for y, c in zip(ys[1:], cots[1:], strict=True):
        loss = loss + (y * spx.tensor(c)).sum()
    loss.backward()
    assert_close(xs.grad, xt.grad, rtol, atol, "input gradient")
    for i, (s, s_t) in enumerate(zip(ss, st, strict=True)):
        assert_close(s.grad, s_t.grad, rtol, atol, f"gradient of initial state {i}")
    params = dict(s_layer.named_parameters())
    assert list(params) == [name for name, _ in t_layer.named_parameters()]
    for name, p in t_layer.named_parameters():
        assert params[name].grad is not None, f"no .grad for {name}"
        assert_close(params[name].grad, p.grad, rtol, PARAM_ATOL, f".grad of {name}")

    # spx under jax.jit + jax.vjp (as spx.compile and spx.value_and_grad trace it).
    y_j, (g_layer, g_x, g_states) = _jax_out_and_grads(
        s_layer, jnp.asarray(x), [jnp.asarray(s) for s in states], [jnp.asarray(c) for c in cots],
        lstm,
    )  # fmt: skip
    for i, (y, y_t) in enumerate(zip(y_j, yt, strict=True)):
        assert_close(y, y_t, rtol, atol, f"output {i} under jax.jit")
    assert_close(g_x, xt.grad, rtol, atol, "jax.vjp input gradient")
    for g, s_t in zip(g_states, st, strict=True):
        assert_close(g, s_t.grad, rtol, atol, "jax.vjp state gradient")
    grads = dict(g_layer.named_parameters())
    for name, p in t_layer.named_parameters():
        assert_close(grads[name], p.grad, rtol, PARAM_ATOL, f"jax.vjp gradient of {name}")
    return ys


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _input_shape(kwargs, unbatched=False):
    if unbatched:
        return (T, H_IN)
    return (N, T, H_IN) if kwargs.get("batch_first") else (T, N, H_IN)


def _state_shapes(kwargs, hidden, lstm, unbatched=False):
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    batch = () if unbatched else (N,)
    h = (layers, *batch, kwargs.get("proj_size") or hidden)
    return [h, (layers, *batch, hidden)] if lstm else [h]


# Each case compiles its own programs (about a second per scan on CPU), so the cases combine
# features; the given-state test adds two layers of both directions with batch_first.
LAYER_CASES = [
    dict(),
    dict(bidirectional=True, dropout=0.0),
    dict(num_layers=2, bias=False, batch_first=True),
]


def _make(kind, kwargs, hidden=5):
    extra = {}
    if kind == "RNN_relu":
        kind, extra = "RNN", dict(nonlinearity="relu")
    t = getattr(torch.nn, kind)(H_IN, hidden, **extra, **kwargs)
    s = getattr(nn, kind)(H_IN, hidden, **extra, **kwargs)
    return t, s, kind == "LSTM"


KINDS = ["RNN", "RNN_relu", "LSTM", "GRU"]


@pytest.mark.parametrize("kwargs", LAYER_CASES, ids=str)
@pytest.mark.parametrize("kind", KINDS)
def test_layer_matches_torch(kind, kwargs):
    t, s, lstm = _make(kind, kwargs)
    check_rnn(t, s, _x(_input_shape(kwargs)), lstm=lstm)


@pytest.mark.parametrize(
    "kwargs", [dict(), dict(num_layers=2, bidirectional=True, batch_first=True)], ids=str
)
@pytest.mark.parametrize("kind", KINDS)
def test_given_initial_state_matches_torch(kind, kwargs):
    t, s, lstm = _make(kind, kwargs)
    states = [_x(shape, seed=i + 1) for i, shape in enumerate(_state_shapes(kwargs, 5, lstm))]
    check_rnn(t, s, _x(_input_shape(kwargs)), states, lstm=lstm)


@pytest.mark.parametrize("with_state", [False, True], ids=["zeros", "given"])
@pytest.mark.parametrize("kind", KINDS)
def test_unbatched_input_matches_torch(kind, with_state):
    kwargs = dict(bidirectional=True, batch_first=True)  # batch_first is moot unbatched
    t, s, lstm = _make(kind, kwargs)
    states = []
    if with_state:
        shapes = _state_shapes(kwargs, 5, lstm, unbatched=True)
        states = [_x(shape, seed=i + 1) for i, shape in enumerate(shapes)]
    ys = check_rnn(t, s, _x(_input_shape(kwargs, unbatched=True)), states, lstm=lstm)
    assert tuple(ys[0].shape) == (T, 10)  # both directions' features


# torch warns that oneDNN has no projected LSTM and it uses its own kernels: not our concern.
@pytest.mark.filterwarnings("ignore:LSTM with projections")
@pytest.mark.parametrize(
    ("kwargs", "given"),
    [
        (dict(proj_size=3), False),
        (dict(proj_size=2, num_layers=2, bidirectional=True, bias=False), True),
    ],
    ids=str,
)
def test_lstm_projection_matches_torch(kwargs, given):
    t, s, _ = _make("LSTM", kwargs)
    assert s.weight_hr_l0.shape == (kwargs["proj_size"], 5)
    states = []
    if given:
        shapes = _state_shapes(kwargs, 5, True)
        states = [_x(shape, seed=i + 1) for i, shape in enumerate(shapes)]
    check_rnn(t, s, _x(_input_shape(kwargs)), states, lstm=True)


@pytest.mark.parametrize("kind", KINDS)
def test_dropout_is_off_in_eval_and_draws_fresh_masks_in_training(kind):
    t, s, _ = _make(kind, dict(num_layers=2, dropout=0.5))
    copy_weights(t, s)
    x = _x(_input_shape({}))
    s.eval()
    t.eval()
    ref = _flat(s(spx.tensor(x)))  # eval: no dropout, as torch's eval
    for y, y_t in zip(ref, _flat(t(torch.tensor(x))), strict=True):
        assert_close(y, y_t, RTOL, ATOL)
    s.train()
    spx.manual_seed(0)
    a, b = _flat(s(spx.tensor(x))), _flat(s(spx.tensor(x)))
    assert not np.allclose(host(a[0]), host(ref[0]))  # layer 0's output was dropped out
    assert not np.allclose(host(a[0]), host(b[0]))  # a fresh mask per call
    spx.manual_seed(0)
    np.testing.assert_array_equal(host(_flat(s(spx.tensor(x)))[0]), host(a[0]))


def test_dropout_with_one_layer_warns_as_torch():
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.GRU(4, 3, dropout=0.2)


CELL_CASES = [
    ("RNNCell", dict()),
    ("RNNCell", dict(nonlinearity="relu", bias=False)),
    ("LSTMCell", dict()),
    ("LSTMCell", dict(bias=False)),
    ("GRUCell", dict()),
    ("GRUCell", dict(bias=False)),
]


@pytest.mark.parametrize("batch", [(N,), ()], ids=["batched", "unbatched"])
@pytest.mark.parametrize("with_state", [False, True], ids=["zeros", "given"])
@pytest.mark.parametrize(("kind", "kwargs"), CELL_CASES, ids=str)
def test_cell_matches_torch(kind, kwargs, with_state, batch):
    t = getattr(torch.nn, kind)(H_IN, 5, **kwargs)
    s = getattr(nn, kind)(H_IN, 5, **kwargs)
    lstm = kind == "LSTMCell"
    states = []
    if with_state:
        states = [_x((*batch, 5), seed=i + 1) for i in range(2 if lstm else 1)]
    ys = check_rnn(t, s, _x((*batch, H_IN)), states, lstm=lstm)
    assert all(tuple(y.shape) == (*batch, 5) for y in ys)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.RNN(4, 3, num_layers=2, bidirectional=True),
        lambda m: m.LSTM(4, 3, num_layers=2, bidirectional=True, proj_size=2, bias=False),
        lambda m: m.GRU(4, 3, num_layers=2),
        lambda m: m.RNNCell(4, 3, bias=False),
        lambda m: m.LSTMCell(4, 3),
        lambda m: m.GRUCell(4, 3),
    ],
)
def test_state_dict_names_shapes_and_loading_match_torch(make):
    t, s = make(torch.nn), make(nn)
    ts, ss = t.state_dict(), s.state_dict()
    assert list(ss) == list(ts)
    for k, v in ts.items():
        assert tuple(ss[k].shape) == tuple(v.shape), k
    copy_weights(t, s)  # strict: no missing or unexpected keys
    for k, v in t.state_dict().items():
        np.testing.assert_array_equal(np.asarray(s.state_dict()[k]), v.numpy())
    # and back: torch loads spx's state_dict unchanged.
    t2 = make(torch.nn)
    t2.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in s.state_dict().items()})


def test_all_weights_and_flatten_parameters_as_torch():
    t = torch.nn.LSTM(4, 3, num_layers=2, bidirectional=True)
    s = nn.LSTM(4, 3, num_layers=2, bidirectional=True)
    t_ids = {id(p): n for n, p in t.named_parameters()}
    s_ids = {id(p): n for n, p in s.named_parameters()}
    assert [[s_ids[id(p)] for p in ws] for ws in s.all_weights] == [
        [t_ids[id(p)] for p in ws] for ws in t.all_weights
    ]
    assert s._flat_weights_names == t._flat_weights_names
    s.flatten_parameters()  # a no-op, kept so torch scripts that call it run


def test_numpy_integer_sizes_are_accepted_like_torch():
    layer = nn.LSTM(np.int64(4), np.int64(3), num_layers=np.int64(2), proj_size=np.int64(2))
    assert type(layer.hidden_size) is int and layer.weight_hr_l1.shape == (2, 3)
    assert type(nn.GRUCell(np.int64(4), np.int64(3)).input_size) is int


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"])
def test_default_init_is_torchs(cls):
    layer = getattr(nn, cls)(6, 16)
    bound = 1 / math.sqrt(16)
    for name, p in layer.named_parameters():
        w = np.asarray(p.data)
        assert np.abs(w).max() <= bound, name
        assert np.abs(w).max() > 0.8 * bound, name  # uniform over the whole range, not smaller


def test_dtype_and_device_arguments():
    layer = nn.GRU(4, 3, dtype=jnp.bfloat16, device="cpu")
    assert all(p.dtype == jnp.bfloat16 for p in layer.parameters())
    out, h = layer(jnp.ones((5, 2, 4), jnp.bfloat16))
    assert out.dtype == h.dtype == jnp.bfloat16


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(),
        dict(num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True),
        dict(proj_size=2),
    ],
    ids=str,
)
def test_repr_matches_torch(kwargs):
    assert repr(nn.LSTM(4, 3, **kwargs)) == repr(torch.nn.LSTM(4, 3, **kwargs))
    if "proj_size" not in kwargs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert repr(nn.RNN(4, 3, nonlinearity="relu", **kwargs)) == repr(
                torch.nn.RNN(4, 3, nonlinearity="relu", **kwargs)
            )
    assert repr(nn.RNNCell(4, 3, bias=False, nonlinearity="relu")) == repr(
        torch.nn.RNNCell(4, 3, bias=False, nonlinearity="relu")
    )
    assert repr(nn.GRUCell(4, 3)) == repr(torch.nn.GRUCell(4, 3))


# --- Errors. ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: nn.RNN(4, 3, nonlinearity="sigmoid"), ValueError, "Select from 'tanh' or 'relu'"),
        (lambda: nn.RNNCell(4, 3, nonlinearity="gelu"), ValueError, "Unknown nonlinearity"),
        (lambda: nn.LSTM(4, 3, proj_size=3), ValueError, r"proj_size \(3\) has to be smaller"),
        (lambda: nn.LSTM(4, 3, proj_size=-1), ValueError, "proj_size must be a non-negative"),
        (lambda: nn.GRU(4, 3, proj_size=2), TypeError, "proj_size"),
        (lambda: nn.GRU(4, 3, dropout=1.5), ValueError, r"dropout must be a number in \[0, 1\]"),
        (lambda: nn.RNN(0, 3), ValueError, "input_size must be a positive int, got 0"),
        (lambda: nn.LSTM(4, 2.5), TypeError, "hidden_size must be an int"),
        (lambda: nn.GRU(4, 3, num_layers=0), ValueError, "num_layers must be a positive int"),
        (lambda: nn.RNN(4, 3, batch_first=1), TypeError, "batch_first should be of type bool"),
    ],
)
def test_bad_constructor_arguments(make, error, match):
    with pytest.raises(error, match=match):
        make()


@pytest.mark.parametrize(
    ("layer", "args", "error", "match"),
    [
        (nn.GRU(4, 3), (np.ones((2, 5, 3, 4), np.float32),), ValueError, "2D or 3D, got 4D"),
        (nn.GRU(4, 3), (np.ones((5, 2, 6), np.float32),), RuntimeError, "Expected 4, got 6"),
        (
            nn.RNN(4, 3, num_layers=2),
            (np.ones((5, 2, 4), np.float32), np.ones((1, 2, 3), np.float32)),
            RuntimeError,
            r"Expected hidden size \(2, 2, 3\), got \[1, 2, 3\]",
        ),
        (
            nn.RNN(4, 3),
            (np.ones((5, 2, 4), np.float32), np.ones((2, 3), np.float32)),
            RuntimeError,
            "For batched 3-D input, hx should also be 3-D but got 2-D",
        ),
        (
            nn.GRU(4, 3),
            (np.ones((5, 4), np.float32), np.ones((1, 2, 3), np.float32)),
            RuntimeError,
            "For unbatched 2-D input, hx should also be 2-D but got 3-D",
        ),
        (
            nn.LSTM(4, 3, proj_size=2),
            (np.ones((5, 2, 4), np.float32), (np.ones((1, 2, 3)), np.ones((1, 2, 3)))),
            RuntimeError,
            r"Expected hidden\[0\] size \(1, 2, 2\), got \[1, 2, 3\]",
        ),
        (
            nn.LSTM(4, 3),
            (np.ones((5, 2, 4), np.float32), (np.ones((1, 2, 3)), np.ones((2, 3)))),
            RuntimeError,
            r"hx and cx should also be 3-D but got \(3-D, 2-D\)",
        ),
        (
            nn.LSTM(4, 3),
            (np.ones((5, 2, 4), np.float32), np.ones((1, 2, 3))),
            TypeError,
            r"pair \(h_0, c_0\)",
        ),
        (nn.LSTM(4, 3), (spx.ones(5, 2, 4).bfloat16(),), ValueError, "does not match weight"),
        (nn.LSTMCell(4, 3), (np.ones((2, 5), np.float32),), RuntimeError, "got 5 expected 4"),
        (
            nn.LSTMCell(4, 3),
            (np.ones((2, 4), np.float32), (np.ones((3, 3), np.float32),) * 2),
            RuntimeError,
            "Input batch size 2 doesn't match hidden0 batch size 3",
        ),
        (
            nn.LSTMCell(4, 3),
            (np.ones((2, 4), np.float32), (np.ones((2, 3)), np.ones((2, 4), np.float32))),
            RuntimeError,
            "hidden1 has inconsistent hidden_size: got 4, expected 3",
        ),
        (
            nn.GRUCell(4, 3),
            (np.ones(4, np.float32), np.ones((2, 3), np.float32)),
            ValueError,
            "Expected hidden0 to be 1D like the input",
        ),
        (nn.RNNCell(4, 3), (np.ones((1, 2, 4), np.float32),), ValueError, "1D or 2D, got 3D"),
    ],
)
def test_bad_inputs_are_clear_errors(layer, args, error, match):
    with pytest.raises(error, match=match):
        layer(*args)


# --- One recorded scan per layer and direction. ----------------------------------------------


@pytest.mark.parametrize(
    ("fn", "weights"),
    [
        (rnn_F.rnn_tanh_layer, [(3, 4), (3, 3)]),
        (rnn_F.gru_layer, [(9, 4), (9, 3)]),
        (lambda x, h, *w: rnn_F.lstm_layer(x, h, None, *w), [(12, 4), (12, 3)]),
    ],
)
def test_a_layer_is_one_scan_whatever_the_length(fn, weights):
    ws = [jnp.ones(s) for s in weights]

    def jaxpr(steps):
        return jax.make_jaxpr(lambda x: fn(x, None, *ws))(jnp.ones((steps, 2, 4))).jaxpr

    short, long = jaxpr(2), jaxpr(500)
    assert [e.primitive.name for e in short.eqns] == [e.primitive.name for e in long.eqns]
    assert sum(e.primitive.name == "scan" for e in long.eqns) == 1


# --- Autocast and spx.compile. ----------------------------------------------------------------


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"])
def test_cpu_autocast_output_dtypes_are_torchs(cls):
    t, s = getattr(torch.nn, cls)(4, 3), getattr(nn, cls)(4, 3)
    x = _x((5, 2, 4) if "Cell" not in cls else (2, 4))
    with torch.autocast("cpu"):
        t_dtypes = [str(y.dtype).removeprefix("torch.") for y in _flat(t(torch.tensor(x)))]
    with spx.autocast("cpu"):
        s_dtypes = [str(y.dtype) for y in _flat(s(spx.tensor(x)))]
    assert s_dtypes == t_dtypes


class _TorchTagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(4, 8, num_layers=2, batch_first=True, bidirectional=True)
        self.head = torch.nn.Linear(16, 3)

    def forward(self, x):
        out, (h_n, _) = self.lstm(x)
        # The final states feed the loss too, so gradients flow into the scans through them.
        return self.head(out[:, -1] + torch.cat([h_n[-2], h_n[-1]], -1))


class _Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 8, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        out, (h_n, _) = self.lstm(x)
        return self.head(out[:, -1] + spx.cat([h_n[-2], h_n[-1]], -1))


def _train_step(model, opt, x, y):
    # torch's training step with the import renamed.
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def test_lstm_model_trains_under_spx_compile_like_torch():
    t, s = _TorchTagger(), _Tagger()
    copy_weights(t, s)
    topt = torch.optim.Adam(t.parameters(), lr=1e-2)
    sopt = spx.optim.Adam(s.parameters(), lr=1e-2)
    step = spx.compile(_train_step)
    rng = np.random.default_rng(0)
    for i in range(4):
        x = rng.standard_normal((5, 7, 4)).astype(np.float32)
        y = rng.integers(0, 3, 5)
        topt.zero_grad()
        tl = torch.nn.functional.cross_entropy(t(torch.tensor(x)), torch.tensor(y))
        tl.backward()
        topt.step()
        sl = step(s, sopt, spx.from_numpy(x), spx.from_numpy(y).long())
        np.testing.assert_allclose(sl.item(), tl.item(), rtol=1e-5, err_msg=f"step {i}")
    params = dict(s.named_parameters())
    for name, p in t.named_parameters():
        # Adam divides by sqrt(v): an entry whose gradient is near zero moves by up to lr on
        # float32 noise in it (one run differed by 1.2e-5 after 4 steps of lr 1e-2).
        assert_close(params[name], p, 1e-5, 3e-5, name)
    assert step.trace_count == 2  # no optimizer state yet, then the steady state


@pytest.mark.parametrize(
    "build,state",
    [
        (lambda m: m.nn.LSTM(3, 4), lambda m: (m.zeros(1, 2, 4).bfloat16(), m.zeros(1, 2, 4))),
        (lambda m: m.nn.LSTM(3, 4), lambda m: (m.zeros(1, 2, 4), m.zeros(1, 2, 4).bfloat16())),
        (lambda m: m.nn.GRU(3, 4), lambda m: m.zeros(1, 2, 4, dtype=m.bfloat16)),
        (lambda m: m.nn.GRUCell(3, 4), lambda m: m.zeros(2, 4, dtype=m.bfloat16)),
    ],
)  # fmt: skip
def test_a_state_of_another_dtype_is_refused_as_in_torch(build, state):
    # It used to fail inside lax.scan (carry types differ) or silently return float32.
    for lib in (torch, spx):
        layer = build(lib)
        x = lib.ones(5, 2, 3) if not isinstance(layer, lib.nn.GRUCell) else lib.ones(2, 3)
        with pytest.raises(RuntimeError):
            layer(x, state(lib))


@pytest.mark.parametrize("output", [0, 1, 2], ids=["output", "h_n", "c_n"])
def test_a_loss_on_one_lstm_output_gives_torchs_grads_and_nones(output):
    # A parameter reaching c_n only through the recurrence (weight_hr of a projected LSTM)
    # has a gradient; a loop's body must not be read as a one-pass call (it was None).
    torch.manual_seed(0)
    t = torch.nn.LSTM(3, 4, proj_size=2, num_layers=2)
    s = nn.LSTM(3, 4, proj_size=2, num_layers=2)
    s.load_state_dict({k: spx.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((3, 2, 3)).astype(np.float32)

    def pick(out):
        return out[0] if output == 0 else out[1][output - 1]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "LSTM with projections is not supported ..."
        pick(t(torch.tensor(x))).pow(2).sum().backward()
    pick(s(spx.tensor(x))).pow(2).sum().backward()
    for (name, tp), sp in zip(t.named_parameters(), s.parameters(), strict=True):
        assert (sp.grad is None) == (tp.grad is None), name
        if tp.grad is not None:
            assert_close(sp.grad, tp.grad, 1e-5, 1e-6, name)
