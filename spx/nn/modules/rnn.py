"""Recurrent layers ``RNN``, ``LSTM``, ``GRU`` and their cells (mirroring ``torch.nn``).

Parameters have torch's names, shapes, gate order and init (``weight_ih_l0``, ``bias_hh_l1``,
``weight_ih_l0_reverse``, ``weight_hr_l0`` for an LSTM projection; every one drawn from
``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``), so a torch ``state_dict`` loads as it is.

Each direction of each layer is one recorded operation whose implementation runs
``jax.lax.scan`` over time (``spx.nn.functional.rnn``): a 1000-step sequence is one node in the
graph and one loop in the compiled program, differentiated by ``jax.vjp``. Between layers the
outputs of the two directions are concatenated and, while training, dropped out with
``F.dropout`` (a fresh key per call, as for ``nn.Dropout``).

A ``PackedSequence`` input (``spx.nn.utils.rnn``) runs as torch's does: its data is gathered
into a zero-padded ``(T, B, *)`` batch in sorted order, each scan steps sequence ``b`` only while
``t < lengths[b]`` (so the final state is the one at the sequence's own last step, and the
reverse direction starts at that step), and the outputs are gathered back into a packed
``data``. Initial states are given, and final states returned, in the batch's own order: they
are permuted by ``sorted_indices`` / ``unsorted_indices`` as torch's ``permute_hidden`` does.
"""

from __future__ import annotations

import math
from typing import Any

import jax

from spx import _user_code, _validate
from spx._host import device_array
from spx._tensor import graph
from spx._tensor.recorded import recorded
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn import init
from spx.nn.functional import rnn as rnn_F
from spx.nn.module import Module
from spx.nn.modules.linear import _empty
from spx.nn.parameter import Parameter
from spx.nn.utils.rnn import PackedSequence, _packed_from_sorted, _padded_sorted
from spx.ops.indexing import index_select
from spx.ops.shape import cat, stack

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
_LAYERS = {
    "RNN_TANH": recorded(rnn_F.rnn_tanh_layer),
    "RNN_RELU": recorded(rnn_F.rnn_relu_layer),
    "LSTM": recorded(rnn_F.lstm_layer),
    "GRU": recorded(rnn_F.gru_layer),
}
_NONLINEARITY = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
_rnn_tanh_cell = recorded(rnn_F.rnn_tanh_cell)
_rnn_relu_cell = recorded(rnn_F.rnn_relu_cell)
_lstm_cell = recorded(rnn_F.lstm_cell)
_gru_cell = recorded(rnn_F.gru_cell)


def _check_sizes(cls: str, input_size: Any, hidden_size: Any) -> tuple[int, int]:
    return (
        _validate.as_int(input_size, "input_size", cls, minimum=1),
        _validate.as_int(hidden_size, "hidden_size", cls, minimum=1),
    )


def _check_dtype(cls: str, input: Any, weight: Parameter, what: str = "input") -> None:
    # Under autocast the recorded op casts both sides, as torch's check also allows.
    # numpy float64 becomes float32 on the way in (without x64), as every array input does.
    dtype = jax.dtypes.canonicalize_dtype(input.dtype)
    if dtype != weight.dtype and graph.STATE.autocast is None:
        error = ValueError if what == "input" else RuntimeError  # torch raises for states too
        raise error(
            f"{cls}: {what} dtype ({dtype}) does not match weight dtype ({weight.dtype}). "
            f"Convert it: {what}.to({weight.dtype}), or convert the model: model.to({dtype})"
        )


def _shape(x: Any) -> list[int]:
    return [int(d) for d in x.shape]


class RNNBase(Module):
    """Shared constructor, parameters, validation and layer loop of ``RNN``/``LSTM``/``GRU``.

    ``mode`` is torch's: ``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``.
    """

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        cls = type(self).__name__
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode!r}; expected one of {list(_GATES)}")
        input_size, hidden_size = _check_sizes(cls, input_size, hidden_size)
        num_layers = _validate.as_int(num_layers, "num_layers", cls, minimum=1)
        proj_size = _validate.as_int(proj_size, "proj_size", cls, minimum=0)
        for name, flag in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(flag, bool):
                raise TypeError(f"{cls}: {name} should be of type bool, got: {type(flag).__name__}")
        dropout = _validate.as_float(
            dropout, "dropout", cls, minimum=0, maximum=1,
            hint="it is the probability of zeroing an element between layers",
        )  # fmt: skip
        if dropout > 0 and num_layers == 1:
            _user_code.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}"
            )
        if proj_size >= hidden_size:
            raise ValueError(
                f"{cls}: proj_size ({proj_size}) has to be smaller than hidden_size "
                f"({hidden_size}); use proj_size=0 for no projection"
            )
        self.mode = mode
        self.input_size, self.hidden_size = input_size, hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = dropout
        self.bidirectional = bool(bidirectional)
        self.proj_size = proj_size
        gate_size = _GATES[mode] * hidden_size
        real_hidden_size = proj_size or hidden_size
        num_directions = 2 if self.bidirectional else 1
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
            for direction in range(num_directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = {
                    "weight_ih": (gate_size, layer_input_size),
                    "weight_hh": (gate_size, real_hidden_size),
                }
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                names = []
                for stem, shape in shapes.items():
                    setattr(self, stem + suffix, Parameter(_empty(shape, dtype, device)))
                    names.append(stem + suffix)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch's init: every weight and bias from ``U(-1/sqrt(hidden), 1/sqrt(hidden))``."""
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """No-op: torch packs weights for cuDNN here; XLA needs no packed buffer."""

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters per layer and direction, as torch's ``all_weights``."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def _weights(self, k: int) -> tuple[Any, Any, Any, Any, Any]:
        """``(w_ih, w_hh, b_ih, b_hh, w_hr)`` of layer/direction ``k`` (None where absent)."""
        suffix = self._all_weights[k][0][len("weight_ih") :]

        def get(stem: str) -> Any:
            return self._parameters.get(stem + suffix)

        w_ih = self._required_parameter("weight_ih" + suffix)
        w_hh = self._required_parameter("weight_hh" + suffix)
        return w_ih, w_hh, get("bias_ih"), get("bias_hh"), get("weight_hr")

    def _check_input(self, input: Any) -> None:
        """torch's checks on the input (a Tensor or a PackedSequence)."""
        cls = type(self).__name__
        if isinstance(input, PackedSequence):
            data = input.data
            if data.ndim != 2:
                raise RuntimeError(
                    f"input must have 2 dimensions, got {data.ndim}: a PackedSequence's data "
                    f"is (sum(lengths), input_size), got shape {_shape(data)}"
                )
            input = data
        elif not hasattr(input, "ndim"):
            raise TypeError(f"{cls}: input must be a Tensor, got {type(input).__name__}")
        if input.ndim not in (2, 3):
            raise ValueError(
                f"{cls}: Expected input to be 2D or 3D, got {input.ndim}D instead (shape "
                f"{_shape(input)}); pass (L, N, H_in), (N, L, H_in) with batch_first=True, or "
                "an unbatched (L, H_in)"
            )
        _check_dtype(cls, input, self._required_parameter("weight_ih_l0"))
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                f"{input.shape[-1]} (input shape {_shape(input)}); reshape the input or build "
                f"the layer with input_size={input.shape[-1]}"
            )

    def _batch(self, input: Any) -> tuple[int | None, str]:
        """The batch size the states must have (None unbatched) and the input's kind, for
        messages."""
        if isinstance(input, PackedSequence):
            return int(input._batch_sizes_host()[0]), "PackedSequence"
        if input.ndim == 2:
            return None, "unbatched 2-D"
        return int(input.shape[0 if self.batch_first else 1]), "batched 3-D"

    def _check_state(self, state: Any, input: Any, size: str, what: str) -> None:
        """An initial state's rank, shape and dtype against the input (torch's messages)."""
        _check_dtype(type(self).__name__, state, self._required_parameter("weight_ih_l0"), what)
        batch, kind = self._batch(input)
        want = 2 if batch is None else 3
        if state.ndim != want:
            raise RuntimeError(
                f"For {kind} input, hx should also be {want}-D but got {state.ndim}-D "
                f"tensor (shape {_shape(state)})"
            )
        layers = self.num_layers * (2 if self.bidirectional else 1)
        expected = (layers, *(() if batch is None else (batch,)), getattr(self, size))
        if tuple(state.shape) != expected:
            batch_text = "" if batch is None else "batch, "
            raise RuntimeError(
                f"Expected {what} size {expected}, got {_shape(state)}: it is (num_layers * "
                f"num_directions, {batch_text}{size})"
            )

    def _forward(self, input: Any, hx: Any, cx: Any) -> tuple[Any, Tensor, Tensor | None]:
        """``(output, h_n, c_n)`` for a checked Tensor or PackedSequence input."""
        if not isinstance(input, PackedSequence):
            return self._run(input, hx, cx)
        sorted_indices, unsorted_indices = input.sorted_indices, input.unsorted_indices
        if sorted_indices is not None:  # torch's permute_hidden: states in the batch's order
            hx = None if hx is None else index_select(hx, 1, sorted_indices)
            cx = None if cx is None else index_select(cx, 1, sorted_indices)
        padded, lengths = _padded_sorted(input)
        # On the device once for every layer and direction (a numpy input is sent per op).
        output, h_n, c_n = self._run(padded, hx, cx, device_array(lengths))
        output = PackedSequence._build(
            _packed_from_sorted(output, lengths), input._batch_sizes_host(), sorted_indices,
            unsorted_indices, input.batch_sizes,
        )  # fmt: skip
        if unsorted_indices is not None:
            h_n = h_n.index_select(1, unsorted_indices)
            c_n = None if c_n is None else c_n.index_select(1, unsorted_indices)
        return output, h_n, c_n

    def _run(
        self, input: Any, hx: Any, cx: Any, lengths: Any = None
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """Every layer and direction; ``(output, h_n, c_n)`` with ``c_n`` None but for LSTM.

        ``lengths`` (``(B,)`` integers) marks ``input`` as a time-major padded batch of
        sequences of those lengths (a PackedSequence's sorted batch).
        """
        op = _LAYERS[self.mode]
        batch_first = self.batch_first if lengths is None else False
        num_directions = 2 if self.bidirectional else 1
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(num_directions):
                k = layer * num_directions + direction
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(k)
                h0 = None if hx is None else hx[k]
                reverse = direction == 1
                if self.mode == "LSTM":
                    c0 = None if cx is None else cx[k]
                    out, h, c = op(
                        input, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, reverse, batch_first, lengths
                    )
                    c_n.append(c)
                else:
                    out, h = op(input, h0, w_ih, w_hh, b_ih, b_hh, reverse, batch_first, lengths)
                outputs.append(out)
                h_n.append(h)
            input = outputs[0] if num_directions == 1 else cat(outputs, dim=-1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                input = F.dropout(input, self.dropout, True)
        return input, stack(h_n), (stack(c_n) if c_n else None)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    r"""Elman RNN, ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (``relu`` if asked).

    Mirrors ``torch.nn.RNN`` (https://pytorch.org/docs/stable/generated/torch.nn.RNN.html).

    Args:
        input_size: features per time step of the input.
        hidden_size: features of the hidden state.
        num_layers: stacked layers; each takes the previous one's output sequence.
        nonlinearity: ``"tanh"`` or ``"relu"``.
        bias: whether the layers have ``bias_ih``/``bias_hh``.
        batch_first: input and output are ``(N, L, *)`` instead of ``(L, N, *)`` (not ``h_n``).
        dropout: probability of zeroing each output of all but the last layer while training.
        bidirectional: add a ``_reverse`` direction that runs from the last step to the first.
        device: optional device spec for the parameters.
        dtype: parameter dtype (default float32).

    Shapes (``D`` = 2 if bidirectional else 1):
        input ``(L, N, H_in)``, ``(N, L, H_in)`` if batch_first, or unbatched ``(L, H_in)``;
        hx ``(D * num_layers, N, H_out)`` (``(D * num_layers, H_out)`` unbatched), default zeros
        -> output ``(L, N, D * H_out)`` (batch_first: ``(N, L, D * H_out)``) and h_n shaped as hx.
        The input may be a ``PackedSequence`` of ``N`` sequences (``spx.nn.utils.rnn``;
        batch_first does not apply to it): the output is then a PackedSequence with the same
        ``batch_sizes`` and indices and ``D * H_out`` features, h_n holds each sequence's state
        at its own last step, and hx and h_n are in the order the batch was packed from.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> from spx.nn.utils.rnn import pack_padded_sequence
        >>> out, h_n = nn.RNN(4, 3, num_layers=2)(spx.ones(5, 2, 4))
        >>> out.shape, h_n.shape
        (spx.Size([5, 2, 3]), spx.Size([2, 2, 3]))
        >>> packed = pack_padded_sequence(spx.ones(5, 2, 4), [2, 5], enforce_sorted=False)
        >>> out, h_n = nn.RNN(4, 3)(packed)
        >>> out.data.shape, out.batch_sizes.tolist(), h_n.shape
        (spx.Size([7, 3]), [2, 2, 1, 1, 1], spx.Size([1, 2, 3]))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if nonlinearity not in _NONLINEARITY:
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        self.nonlinearity = nonlinearity
        super().__init__(
            _NONLINEARITY[nonlinearity], input_size, hidden_size, num_layers, bias,
            batch_first, dropout, bidirectional, device=device, dtype=dtype,
        )  # fmt: skip

    def forward(
        self, input: Tensor | PackedSequence, hx: Tensor | None = None
    ) -> tuple[Tensor | PackedSequence, Tensor]:
        self._check_input(input)
        if hx is not None:
            self._check_state(hx, input, "hidden_size", "hidden")
        output, h_n, _ = self._forward(input, hx, None)
        return output, h_n


class GRU(RNNBase):
    r"""Gated recurrent unit, gates ``r, z, n`` as torch computes them (mirrors ``torch.nn.GRU``).

    ``n_t = tanh(W_in x_t + b_in + r_t * (W_hn h_{t-1} + b_hn))``,
    ``h_t = (1 - z_t) * n_t + z_t * h_{t-1}``. Arguments and shapes as :class:`RNN` (without
    ``nonlinearity``); the weights hold ``3 * hidden_size`` rows.
    See https://pytorch.org/docs/stable/generated/torch.nn.GRU.html.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> out, h_n = nn.GRU(4, 3, batch_first=True, bidirectional=True)(spx.ones(2, 5, 4))
        >>> out.shape, h_n.shape
        (spx.Size([2, 5, 6]), spx.Size([2, 2, 3]))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            "GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
            bidirectional, device=device, dtype=dtype,
        )  # fmt: skip

    def forward(
        self, input: Tensor | PackedSequence, hx: Tensor | None = None
    ) -> tuple[Tensor | PackedSequence, Tensor]:
        self._check_input(input)
        if hx is not None:
            self._check_state(hx, input, "hidden_size", "hidden")
        output, h_n, _ = self._forward(input, hx, None)
        return output, h_n


class LSTM(RNNBase):
    r"""Long short-term memory, gates ``i, f, g, o`` (mirrors ``torch.nn.LSTM``).

    ``c_t = f_t * c_{t-1} + i_t * g_t``, ``h_t = o_t * tanh(c_t)``; with ``proj_size > 0`` the
    hidden state is projected, ``h_t = W_hr (o_t * tanh(c_t))``, and ``H_out = proj_size``.
    See https://pytorch.org/docs/stable/generated/torch.nn.LSTM.html.

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
            device, dtype: as for :class:`RNN`.
        proj_size: size of the projected hidden state; 0 for none (must be < hidden_size).

    Shapes (``D`` = 2 if bidirectional else 1, ``H_out`` = proj_size or hidden_size):
        input as :class:`RNN`; ``(h_0, c_0)`` with h_0 ``(D * num_layers, N, H_out)`` and c_0
        ``(D * num_layers, N, hidden_size)`` (no N dim unbatched), default zeros ->
        output ``(L, N, D * H_out)`` and ``(h_n, c_n)`` shaped as ``(h_0, c_0)``; a
        ``PackedSequence`` input gives a PackedSequence output, as for :class:`RNN`.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> out, (h_n, c_n) = nn.LSTM(4, 3, proj_size=2)(spx.ones(5, 2, 4))
        >>> out.shape, h_n.shape, c_n.shape
        (spx.Size([5, 2, 2]), spx.Size([1, 2, 2]), spx.Size([1, 2, 3]))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            "LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
            bidirectional, proj_size, device=device, dtype=dtype,
        )  # fmt: skip

    def forward(
        self, input: Tensor | PackedSequence, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor | PackedSequence, tuple[Tensor, Tensor]]:
        self._check_input(input)
        h0 = c0 = None
        if hx is not None:
            if not isinstance(hx, tuple | list) or len(hx) != 2:
                raise TypeError(
                    f"LSTM: hx must be a pair (h_0, c_0), got {type(hx).__name__}; pass "
                    "lstm(x, (h_0, c_0)) or leave it out for zeros"
                )
            h0, c0 = hx
            want = 2 if self._batch(input)[0] is None else 3
            if h0.ndim != want or c0.ndim != want:
                raise RuntimeError(
                    f"For {self._batch(input)[1]} input, hx and cx should also be {want}-D but "
                    f"got ({h0.ndim}-D, {c0.ndim}-D) tensors"
                )
            h_size = "proj_size" if self.proj_size else "hidden_size"
            self._check_state(h0, input, h_size, "hidden[0]")
            self._check_state(c0, input, "hidden_size", "hidden[1]")
        output, h_n, c_n = self._forward(input, h0, c0)
        return output, (h_n, c_n)


class RNNCellBase(Module):
    """Shared parameters, init, validation and repr of the cells."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.input_size, self.hidden_size = _check_sizes(
            type(self).__name__, input_size, hidden_size
        )
        self.bias = bias
        gate_size = num_chunks * self.hidden_size
        self.weight_ih = Parameter(_empty((gate_size, self.input_size), dtype, device))
        self.weight_hh = Parameter(_empty((gate_size, self.hidden_size), dtype, device))
        if bias:
            self.bias_ih = Parameter(_empty((gate_size,), dtype, device))
            self.bias_hh = Parameter(_empty((gate_size,), dtype, device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch's init: every weight and bias from ``U(-1/sqrt(hidden), 1/sqrt(hidden))``."""
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _check(self, input: Any, states: tuple[Any, ...]) -> None:
        """torch's cell checks: ranks, input_size, and each state's batch and hidden_size."""
        cls = type(self).__name__
        if not hasattr(input, "ndim"):
            raise TypeError(f"{cls}: input must be a Tensor, got {type(input).__name__}")
        if input.ndim not in (1, 2):
            raise ValueError(
                f"{cls}: Expected input to be 1D or 2D, got {input.ndim}D instead (shape "
                f"{_shape(input)}); pass (N, input_size) or an unbatched (input_size,)"
            )
        _check_dtype(cls, input, self._required_parameter("weight_ih"))
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {input.shape[-1]} expected "
                f"{self.input_size} (input shape {_shape(input)})"
            )
        for i, state in enumerate(states):
            if state is None:
                continue
            _check_dtype(cls, state, self._required_parameter("weight_ih"), f"hidden{i}")
            if state.ndim != input.ndim:
                raise ValueError(
                    f"{cls}: Expected hidden{i} to be {input.ndim}D like the input (shape "
                    f"{_shape(input)}), got {state.ndim}D (shape {_shape(state)})"
                )
            if input.ndim == 2 and state.shape[0] != input.shape[0]:
                raise RuntimeError(
                    f"Input batch size {input.shape[0]} doesn't match hidden{i} batch size "
                    f"{state.shape[0]}"
                )
            if state.shape[-1] != self.hidden_size:
                raise RuntimeError(
                    f"hidden{i} has inconsistent hidden_size: got {state.shape[-1]}, expected "
                    f"{self.hidden_size}"
                )

    def _weights(self) -> tuple[Any, Any, Any, Any]:
        w_ih = self._required_parameter("weight_ih")
        return w_ih, self._required_parameter("weight_hh"), self.bias_ih, self.bias_hh

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    r"""One Elman RNN step, ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ``relu``).

    Mirrors ``torch.nn.RNNCell``; an unknown ``nonlinearity`` is refused here rather than at
    the first call, where torch refuses it.

    Args:
        input_size: features of the input.
        hidden_size: features of the hidden state.
        bias: whether to learn ``bias_ih`` and ``bias_hh``.
        nonlinearity: ``"tanh"`` or ``"relu"``.
        device: optional device spec for the parameters.
        dtype: parameter dtype (default float32).

    Shapes:
        input ``(N, input_size)`` or ``(input_size,)``; hx ``(N, hidden_size)`` or
        ``(hidden_size,)``, default zeros -> h' shaped as hx.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> nn.RNNCell(4, 3)(spx.ones(2, 4)).shape
        spx.Size([2, 3])
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if nonlinearity not in _NONLINEARITY:
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(input_size, hidden_size, bias, 1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        self._check(input, (hx,))
        cell = _rnn_tanh_cell if self.nonlinearity == "tanh" else _rnn_relu_cell
        return cell(input, hx, *self._weights())


class LSTMCell(RNNCellBase):
    r"""One LSTM step, gates ``i, f, g, o`` (mirrors ``torch.nn.LSTMCell``).

    Args:
        input_size, hidden_size, bias, device, dtype: as for :class:`RNNCell`.

    Shapes:
        input ``(N, input_size)`` or ``(input_size,)``; ``(h, c)`` each ``(N, hidden_size)``
        or ``(hidden_size,)``, default zeros -> ``(h', c')`` shaped as ``(h, c)``.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> h, c = nn.LSTMCell(4, 3)(spx.ones(2, 4))
        >>> h.shape, c.shape
        (spx.Size([2, 3]), spx.Size([2, 3]))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device=device, dtype=dtype)

    def forward(
        self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor]:
        h0 = c0 = None
        if hx is not None:
            if not isinstance(hx, tuple | list) or len(hx) != 2:
                raise TypeError(
                    f"LSTMCell: hx must be a pair (h, c), got {type(hx).__name__}; pass "
                    "cell(x, (h, c)) or leave it out for zeros"
                )
            h0, c0 = hx
        self._check(input, (h0, c0))
        return _lstm_cell(input, h0, c0, *self._weights())


class GRUCell(RNNCellBase):
    r"""One GRU step, gates ``r, z, n`` (mirrors ``torch.nn.GRUCell``).

    Args:
        input_size, hidden_size, bias, device, dtype: as for :class:`RNNCell`.

    Shapes:
        input ``(N, input_size)`` or ``(input_size,)``; hx ``(N, hidden_size)`` or
        ``(hidden_size,)``, default zeros -> h' shaped as hx.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> nn.GRUCell(4, 3)(spx.ones(4), spx.zeros(3)).shape
        spx.Size([3])
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        self._check(input, (hx,))
        return _gru_cell(input, hx, *self._weights())
