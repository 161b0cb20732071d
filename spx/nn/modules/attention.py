"""``MultiheadAttention`` with torch's parameter names, layout and initialization.

The projections are stored exactly as in torch — a packed ``in_proj_weight (3E, E)`` (or
``q_proj_weight``/``k_proj_weight``/``v_proj_weight`` when ``kdim``/``vdim`` differ from
``embed_dim``), ``in_proj_bias (3E,)``, optional ``bias_k``/``bias_v (1, 1, E)`` and an
``out_proj`` Linear — so a torch ``state_dict`` loads with no key map. The computation is
``F.multi_head_attention_forward``; torch's inference "fast path" is a CPU/GPU kernel choice with
the same numbers, so it has no counterpart here.
"""

from __future__ import annotations

from typing import Any

import jax

from spx import _validate
from spx.nn import functional as F
from spx.nn import init
from spx.nn.module import Module
from spx.nn.modules.linear import Linear, _empty
from spx.nn.parameter import Parameter


class NonDynamicallyQuantizableLinear(Linear):
    """The ``Linear`` that torch uses for ``MultiheadAttention.out_proj``.

    torch gives it its own class only to keep quantization tooling away from it; it computes
    exactly what :class:`Linear` does. spx keeps the name so ``repr`` and ``isinstance`` checks
    of ported code behave the same.

    Example:
        >>> import jax.numpy as jnp
        >>> NonDynamicallyQuantizableLinear(4, 2)(jnp.ones((3, 4))).shape
        spx.Size([3, 2])
    """


class MultiheadAttention(Module):
    """Multi-head attention (mirrors ``torch.nn.MultiheadAttention``).

    ``MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O`` with
    ``head_i = softmax(Q W_i^Q (K W_i^K)^T / sqrt(E / h)) V W_i^V``. Parameters and their init
    are torch's: ``xavier_uniform_`` for the input projections, zeros for ``in_proj_bias`` and
    ``out_proj.bias``, ``xavier_normal_`` for ``bias_k``/``bias_v``, and ``out_proj.weight``
    keeps Linear's default init.

    Args:
        embed_dim: total model dimension ``E`` (split across the heads).
        num_heads: number of heads; must divide ``embed_dim``.
        dropout: dropout probability on the attention weights (training mode only).
        bias: add biases to the input and output projections.
        add_bias_kv: learn a bias key/value appended to the key/value sequences.
        add_zero_attn: append an all-zero key/value to the sequences.
        kdim: key feature size (default ``embed_dim``).
        vdim: value feature size (default ``embed_dim``).
        batch_first: inputs/outputs are ``(N, L, E)`` instead of ``(L, N, E)``.
        device: optional device spec for the parameters.
        dtype: parameter dtype (default float32).

    Shapes:
        query ``(L, N, E)`` (``(N, L, E)`` with batch_first, ``(L, E)`` unbatched); key
        ``(S, N, kdim)``; value ``(S, N, vdim)``; key_padding_mask ``(N, S)``; attn_mask
        ``(L, S)`` or ``(N * num_heads, L, S)``. Output: ``(L, N, E)`` like query, and weights
        ``(N, L, S)`` (``(N, num_heads, L, S)`` with ``average_attn_weights=False``) or None.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> mha = nn.MultiheadAttention(8, 2, batch_first=True)
        >>> x = jnp.ones((3, 5, 8))
        >>> out, weights = mha(x, x, x)
        >>> out.shape, weights.shape
        (spx.Size([3, 5, 8]), spx.Size([3, 5, 5]))
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        embed_dim = _validate.as_int(embed_dim, "embed_dim", "MultiheadAttention", minimum=1)
        num_heads = _validate.as_int(num_heads, "num_heads", "MultiheadAttention", minimum=1)
        if embed_dim % num_heads:
            raise ValueError(
                f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads "
                f"({num_heads}); each head gets embed_dim // num_heads features"
            )
        kdim = _validate.as_optional_int(kdim, "kdim", "MultiheadAttention", minimum=1)
        vdim = _validate.as_optional_int(vdim, "vdim", "MultiheadAttention", minimum=1)
        dropout = _validate.as_float(dropout, "dropout", "MultiheadAttention", minimum=0, maximum=1)
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads

        def new(*shape: int) -> Parameter:
            return Parameter(_empty(shape, dtype, device))

        # Registration order is torch's, so state_dict keys come out in torch's order.
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = new(embed_dim, embed_dim)
            self.k_proj_weight = new(embed_dim, self.kdim)
            self.v_proj_weight = new(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = new(3 * embed_dim, embed_dim)
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = new(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(
            embed_dim, embed_dim, bias=bias, device=device, dtype=dtype
        )
        if add_bias_kv:
            self.bias_k = new(1, 1, embed_dim)
            self.bias_v = new(1, 1, embed_dim)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def _check_inputs(self, query: Any, key: Any, value: Any) -> None:
        shapes = tuple(tuple(t.shape) for t in (query, key, value))
        if len({len(s) for s in shapes}) != 1 or len(shapes[0]) not in (2, 3):
            raise RuntimeError(
                f"MultiheadAttention: query, key and value must all be 3-D (batched) or all 2-D "
                f"(unbatched), got shapes {shapes}"
            )
        for name, shape, expected in zip(
            ("query", "key", "value"), shapes, (self.embed_dim, self.kdim, self.vdim), strict=True
        ):
            if shape[-1] != expected:
                dim = {"query": "embed_dim", "key": "kdim", "value": "vdim"}[name]
                raise RuntimeError(
                    f"MultiheadAttention: {name} has {shape[-1]} features (shape {shape}), but "
                    f"this layer expects {dim}={expected}"
                )
        seq_dim = 1 if self.batch_first and len(shapes[0]) == 3 else 0
        if shapes[1][seq_dim] != shapes[2][seq_dim]:
            raise RuntimeError(
                f"MultiheadAttention: key {shapes[1]} and value {shapes[2]} must have the same "
                "sequence length"
            )

    def forward(
        self,
        query: jax.Array,
        key: jax.Array,
        value: jax.Array,
        key_padding_mask: jax.Array | None = None,
        need_weights: bool = True,
        attn_mask: jax.Array | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[jax.Array, jax.Array | None]:
        """Attend from ``query`` to ``key``/``value``.

        Args:
            query: ``(L, N, E)``, ``(N, L, E)`` with ``batch_first``, or unbatched ``(L, E)``.
            key: ``(S, N, kdim)`` (batch-first likewise) or ``(S, kdim)``.
            value: ``(S, N, vdim)`` (batch-first likewise) or ``(S, vdim)``.
            key_padding_mask: ``(N, S)`` (``(S,)`` unbatched); bool True marks padding to
                ignore, a float mask is added to the scores.
            need_weights: also return the attention weights.
            attn_mask: ``(L, S)`` or ``(N * num_heads, L, S)``; bool True blocks attention, a
                float mask is added to the scores.
            average_attn_weights: average the returned weights over the heads.
            is_causal: a hint that ``attn_mask`` is the causal mask; as in torch it requires
                ``attn_mask``.

        Returns:
            ``(attn_output, attn_weights)``; ``attn_weights`` is None without ``need_weights``.
        """
        self._check_inputs(query, key, value)
        # The functional takes batch-first input directly, sparing torch's two transposes; the
        # same objects are passed on so it can detect self-attention and use one packed GEMM.
        kwargs: dict[str, Any] = {}
        if not self._qkv_same_embed_dim:
            kwargs = dict(
                use_separate_proj_weight=True,
                q_proj_weight=self.q_proj_weight,
                k_proj_weight=self.k_proj_weight,
                v_proj_weight=self.v_proj_weight,
            )
        return F.multi_head_attention_forward(
            query,
            key,
            value,
            self.embed_dim,
            self.num_heads,
            self.in_proj_weight,
            self.in_proj_bias,
            self.bias_k,
            self.bias_v,
            self.add_zero_attn,
            self.dropout,
            self.out_proj.weight,
            self.out_proj.bias,
            training=self.training,
            key_padding_mask=key_padding_mask,
            need_weights=need_weights,
            attn_mask=attn_mask,
            average_attn_weights=average_attn_weights,
            is_causal=is_causal,
            batch_first=self.batch_first,
            **kwargs,
        )
