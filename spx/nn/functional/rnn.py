"""Recurrent cells and whole recurrent layers over JAX arrays (torch's ``_VF`` RNN kernels).

Weights have torch's layout and gate order: ``w_ih`` is ``(gates * hidden_size, input_size)``
and ``w_hh`` ``(gates * hidden_size, hidden_size)``, with the gates stacked ``i, f, g, o`` for
an LSTM and ``r, z, n`` for a GRU, so a torch ``state_dict`` needs no reshuffling.

A layer is one direction of one layer over the whole sequence: the input projection for every
time step is a single GEMM, then ``jax.lax.scan`` runs the recurrence (``reverse=True`` for the
backward direction of a bidirectional RNN). Recorded as one operation, it is differentiated by
``jax.vjp`` of the scan, which XLA compiles to one loop forward and one backward, instead of a
graph node per time step.

A layer given ``lengths`` runs a padded batch of variable-length sequences (a
``PackedSequence``'s sorted batch): each sequence steps only within its own length (see
:func:`_scan`), which gives torch's packed final states for both directions.

Every function takes batched ``(B, *)`` or unbatched ``(*)`` states alike: the matrix products
contract the last dim and the gate arithmetic is elementwise, so no batch dim is added.

These are not in ``torch.nn.functional`` (torch keeps them in ``torch._VF``); ``spx.nn.RNN``,
``LSTM``, ``GRU`` and the ``*Cell`` modules record them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array


def _affine(x: Array, w: Array, b: Array | None) -> Array:
    """``x @ w.T + b`` with torch's ``(out, in)`` weight, as ``F.linear`` computes it."""
    y = jax.lax.dot_general(x, w, (((x.ndim - 1,), (1,)), ((), ())))
    return y if b is None else y + b


def _zeros_state(x: Array, size: int, batch_dim: bool) -> Array:
    """torch's default initial state: zeros of the input's dtype, ``(B, size)`` or ``(size,)``."""
    batch = x.shape[1:-1] if batch_dim else ()
    return jnp.zeros((*batch, size), x.dtype)


# --- One time step, from the input's projection ``xp = x @ w_ih.T + b_ih``. --------------------


def _tanh_step(xp: Array, h: Array, w_hh: Array, b_hh: Array | None) -> Array:
    return jnp.tanh(xp + _affine(h, w_hh, b_hh))


def _relu_step(xp: Array, h: Array, w_hh: Array, b_hh: Array | None) -> Array:
    return jax.nn.relu(xp + _affine(h, w_hh, b_hh))


def _lstm_step(
    xp: Array, h: Array, c: Array, w_hh: Array, b_hh: Array | None, w_hr: Array | None
) -> tuple[Array, Array]:
    i, f, g, o = jnp.split(xp + _affine(h, w_hh, b_hh), 4, axis=-1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    if w_hr is not None:  # proj_size > 0: the hidden state is projected down to proj_size
        h = _affine(h, w_hr, None)
    return h, c


def _gru_step(xp: Array, h: Array, w_hh: Array, b_hh: Array | None) -> Array:
    x_r, x_z, x_n = jnp.split(xp, 3, axis=-1)
    h_r, h_z, h_n = jnp.split(_affine(h, w_hh, b_hh), 3, axis=-1)
    r = jax.nn.sigmoid(x_r + h_r)
    z = jax.nn.sigmoid(x_z + h_z)
    # b_hh's n-part sits inside r * (...): the GRU of Cho et al. as cuDNN and torch compute it.
    n = jnp.tanh(x_n + r * h_n)
    return n + z * (h - n)  # torch's form of (1 - z) * n + z * h


# --- Cells: one step from the raw input. -------------------------------------------------------


def rnn_tanh_cell(
    input: Array,
    hx: Array | None,
    w_ih: Array,
    w_hh: Array,
    b_ih: Array | None = None,
    b_hh: Array | None = None,
) -> Array:
    """``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (torch's ``rnn_tanh_cell``).

    Args:
        input: ``(B, input_size)`` or ``(input_size,)``.
        hx: ``(B, hidden_size)`` or ``(hidden_size,)``; None for zeros.
        w_ih: ``(hidden_size, input_size)``.
        w_hh: ``(hidden_size, hidden_size)``.
        b_ih: ``(hidden_size,)`` or None.
        b_hh: ``(hidden_size,)`` or None.

    Returns:
        ``h'``, shaped like ``hx``.

    Example:
        >>> rnn_tanh_cell(jnp.ones((2, 4)), None, jnp.ones((3, 4)), jnp.ones((3, 3))).shape
        (2, 3)
    """
    if hx is None:
        hx = _zeros_state(input, w_hh.shape[1], input.ndim == 2)
    return _tanh_step(_affine(input, w_ih, b_ih), hx, w_hh, b_hh)


def rnn_relu_cell(
    input: Array,
    hx: Array | None,
    w_ih: Array,
    w_hh: Array,
    b_ih: Array | None = None,
    b_hh: Array | None = None,
) -> Array:
    """``h' = relu(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (torch's ``rnn_relu_cell``).

    Shapes as :func:`rnn_tanh_cell`.

    Example:
        >>> rnn_relu_cell(jnp.ones(4), jnp.zeros(3), jnp.ones((3, 4)), jnp.ones((3, 3))).shape
        (3,)
    """
    if hx is None:
        hx = _zeros_state(input, w_hh.shape[1], input.ndim == 2)
    return _relu_step(_affine(input, w_ih, b_ih), hx, w_hh, b_hh)


def lstm_cell(
    input: Array,
    hx: Array | None,
    cx: Array | None,
    w_ih: Array,
    w_hh: Array,
    b_ih: Array | None = None,
    b_hh: Array | None = None,
) -> tuple[Array, Array]:
    """One LSTM step, gates ``i, f, g, o`` (torch's ``lstm_cell``).

    torch takes ``(hx, cx)`` as one tuple argument; here they are two, so that each is an
    array input of the recorded operation.

    Args:
        input: ``(B, input_size)`` or ``(input_size,)``.
        hx: ``(B, hidden_size)`` or ``(hidden_size,)``; None for zeros.
        cx: same shape as ``hx``; None for zeros.
        w_ih: ``(4 * hidden_size, input_size)``.
        w_hh: ``(4 * hidden_size, hidden_size)``.
        b_ih: ``(4 * hidden_size,)`` or None.
        b_hh: ``(4 * hidden_size,)`` or None.

    Returns:
        ``(h', c')``, each shaped like ``hx``.

    Example:
        >>> h, c = lstm_cell(jnp.ones((2, 4)), None, None, jnp.ones((12, 4)), jnp.ones((12, 3)))
        >>> h.shape, c.shape
        ((2, 3), (2, 3))
    """
    hidden_size = w_hh.shape[1]
    if hx is None:
        hx = _zeros_state(input, hidden_size, input.ndim == 2)
    if cx is None:
        cx = _zeros_state(input, hidden_size, input.ndim == 2)
    return _lstm_step(_affine(input, w_ih, b_ih), hx, cx, w_hh, b_hh, None)


def gru_cell(
    input: Array,
    hx: Array | None,
    w_ih: Array,
    w_hh: Array,
    b_ih: Array | None = None,
    b_hh: Array | None = None,
) -> Array:
    """One GRU step, gates ``r, z, n`` (torch's ``gru_cell``).

    Args:
        input: ``(B, input_size)`` or ``(input_size,)``.
        hx: ``(B, hidden_size)`` or ``(hidden_size,)``; None for zeros.
        w_ih: ``(3 * hidden_size, input_size)``.
        w_hh: ``(3 * hidden_size, hidden_size)``.
        b_ih: ``(3 * hidden_size,)`` or None.
        b_hh: ``(3 * hidden_size,)`` or None.

    Returns:
        ``h'``, shaped like ``hx``.

    Example:
        >>> gru_cell(jnp.ones((2, 4)), None, jnp.ones((9, 4)), jnp.ones((9, 3))).shape
        (2, 3)
    """
    if hx is None:
        hx = _zeros_state(input, w_hh.shape[1], input.ndim == 2)
    return _gru_step(_affine(input, w_ih, b_ih), hx, w_hh, b_hh)


# --- Layers: one direction of one layer over a whole sequence. ---------------------------------


def _time_major(input: Array, batch_first: bool) -> Array:
    """``(T, B, F)`` from ``(B, T, F)`` when batch_first; unbatched ``(T, F)`` as it is."""
    return jnp.swapaxes(input, 0, 1) if batch_first and input.ndim == 3 else input


def _scan(step, carry, xp: Array, reverse: bool, batch_first: bool, lengths: Array | None):
    """Run ``step(carry, xp_t) -> (carry, y_t)`` over time; the outputs in the input's layout.

    With ``lengths`` (``(B,)``, a time-major batch of variable-length sequences padded at the
    end) sequence ``b`` takes a step only while ``t < lengths[b]``: its state stays as it was
    elsewhere and its output there is zero. Run forward, the final state is the one after the
    sequence's last element; run in reverse, the state stays the initial one through the
    padding and the reverse pass starts at the sequence's own last element, as torch's packed
    RNNs run.
    """
    if lengths is not None:
        inner = step
        valid = (jnp.arange(xp.shape[0])[:, None] < lengths[None, :])[..., None]  # (T, B, 1)

        def step(carry, inputs):
            xp_t, valid_t = inputs
            new, y = inner(carry, xp_t)
            carry = jax.tree.map(lambda n, c: jnp.where(valid_t, n, c), new, carry)
            return carry, jnp.where(valid_t, y, jnp.zeros_like(y))

        xp = (xp, valid)
    carry, ys = jax.lax.scan(step, carry, xp, reverse=reverse)
    return carry, _time_major(ys, batch_first)


def _simple_layer(step_fn, input, hx, w_ih, w_hh, b_ih, b_hh, reverse, batch_first, lengths):
    x = _time_major(input, batch_first)
    if hx is None:
        hx = _zeros_state(x, w_hh.shape[1], x.ndim == 3)
    xp = _affine(x, w_ih, b_ih)  # every time step's input projection in one GEMM

    def step(h, xp_t):
        h = step_fn(xp_t, h, w_hh, b_hh)
        return h, h

    h_n, output = _scan(step, hx, xp, reverse, batch_first, lengths)
    return output, h_n


def rnn_tanh_layer(
    input: Array,
    hx: Array | None,
    w_ih: Array,
    w_hh: Array,
    b_ih: Array | None = None,
    b_hh: Array | None = None,
    reverse: bool = False,
    batch_first: bool = False,
    lengths: Array | None = None,
) -> tuple[Array, Array]:
    """One direction of one ``tanh`` RNN layer over a sequence.

    Args:
        input: ``(T, B, input_size)``, ``(B, T, input_size)`` if ``batch_first``, or unbatched
            ``(T, input_size)``.
        hx: initial state ``(B, hidden_size)`` (``(hidden_size,)`` unbatched); None for zeros.
        w_ih: ``(hidden_size, input_size)``.
        w_hh: ``(hidden_size, hidden_size)``.
        b_ih: ``(hidden_size,)`` or None.
        b_hh: ``(hidden_size,)`` or None.
        reverse: run from the last time step to the first (the ``_reverse`` direction).
        batch_first: the input and output are ``(B, T, *)``.
        lengths: ``(B,)`` integer lengths of a batched input padded at the end (the padded form
            of a ``PackedSequence``), or None when every sequence runs all ``T`` steps. Each
            sequence then stops at its own length (see :func:`_scan`); outputs past it are 0.

    Returns:
        ``(output, h_n)``: every step's state ``(T, B, hidden_size)`` in the input's layout,
        and the final state shaped like ``hx`` (after step 0 when ``reverse``).

    Example:
        >>> out, h = rnn_tanh_layer(jnp.ones((5, 2, 4)), None, jnp.ones((3, 4)), jnp.eye(3))
        >>> out.shape, h.shape
        ((5, 2, 3), (2, 3))
    """
    return _simple_layer(
        _tanh_step, input, hx, w_ih, w_hh, b_ih, b_hh, reverse, batch_first, lengths
    )


def rnn_relu_layer(
    input: Array,
    hx: Array | None,
    w_ih: Array,
    w_hh: Array,
    b_ih: Array | None = None,
    b_hh: Array | None = None,
    reverse: bool = False,
    batch_first: bool = False,
    lengths: Array | None = None,
) -> tuple[Array, Array]:
    """One direction of one ``relu`` RNN layer over a sequence; as :func:`rnn_tanh_layer`.

    Example:
        >>> out, h = rnn_relu_layer(jnp.ones((5, 4)), None, jnp.ones((3, 4)), jnp.eye(3))
        >>> out.shape, h.shape
        ((5, 3), (3,))
    """
    return _simple_layer(
        _relu_step, input, hx, w_ih, w_hh, b_ih, b_hh, reverse, batch_first, lengths
    )


def gru_layer(
    input: Array,
    hx: Array | None,
    w_ih: Array,
    w_hh: Array,
    b_ih: Array | None = None,
    b_hh: Array | None = None,
    reverse: bool = False,
    batch_first: bool = False,
    lengths: Array | None = None,
) -> tuple[Array, Array]:
    """One direction of one GRU layer over a sequence; shapes as :func:`rnn_tanh_layer` with
    ``3 * hidden_size`` gate rows in the weights and biases.

    Example:
        >>> out, h = gru_layer(jnp.ones((5, 2, 4)), None, jnp.ones((9, 4)), jnp.ones((9, 3)))
        >>> out.shape, h.shape
        ((5, 2, 3), (2, 3))
    """
    return _simple_layer(
        _gru_step, input, hx, w_ih, w_hh, b_ih, b_hh, reverse, batch_first, lengths
    )


def lstm_layer(
    input: Array,
    hx: Array | None,
    cx: Array | None,
    w_ih: Array,
    w_hh: Array,
    b_ih: Array | None = None,
    b_hh: Array | None = None,
    w_hr: Array | None = None,
    reverse: bool = False,
    batch_first: bool = False,
    lengths: Array | None = None,
) -> tuple[Array, Array, Array]:
    """One direction of one LSTM layer over a sequence.

    Args:
        input: ``(T, B, input_size)``, ``(B, T, input_size)`` if ``batch_first``, or unbatched
            ``(T, input_size)``.
        hx: initial hidden state ``(B, H_out)`` (``(H_out,)`` unbatched); None for zeros.
            ``H_out`` is ``proj_size`` when ``w_hr`` is given, else ``hidden_size``.
        cx: initial cell state ``(B, hidden_size)``; None for zeros.
        w_ih: ``(4 * hidden_size, input_size)``.
        w_hh: ``(4 * hidden_size, H_out)``.
        b_ih: ``(4 * hidden_size,)`` or None.
        b_hh: ``(4 * hidden_size,)`` or None.
        w_hr: ``(proj_size, hidden_size)`` projection of the hidden state, or None.
        reverse: run from the last time step to the first.
        batch_first: the input and output are ``(B, T, *)``.
        lengths: ``(B,)`` sequence lengths, as for :func:`rnn_tanh_layer`.

    Returns:
        ``(output, h_n, c_n)``: every step's hidden state ``(T, B, H_out)`` in the input's
        layout, and the final hidden and cell states.

    Example:
        >>> out, h, c = lstm_layer(jnp.ones((5, 2, 4)), None, None, jnp.ones((12, 4)),
        ...                        jnp.ones((12, 3)))
        >>> out.shape, h.shape, c.shape
        ((5, 2, 3), (2, 3), (2, 3))
    """
    x = _time_major(input, batch_first)
    if hx is None:
        hx = _zeros_state(x, w_hh.shape[1], x.ndim == 3)
    if cx is None:
        cx = _zeros_state(x, w_hh.shape[0] // 4, x.ndim == 3)
    xp = _affine(x, w_ih, b_ih)

    def step(carry, xp_t):
        h, c = _lstm_step(xp_t, *carry, w_hh, b_hh, w_hr)
        return (h, c), h

    (h_n, c_n), output = _scan(step, (hx, cx), xp, reverse, batch_first, lengths)
    return output, h_n, c_n
