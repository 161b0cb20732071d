"""Attention: ``scaled_dot_product_attention`` and ``multi_head_attention_forward``.

Both are written as einsums + a masked softmax that XLA fuses; grouped-query attention reshapes
the query heads instead of repeating keys and values, so K/V are never copied.

Masks follow torch: for ``scaled_dot_product_attention`` a **bool mask is True where attention
is allowed**; for ``multi_head_attention_forward`` (like ``nn.MultiheadAttention``) bool
``attn_mask``/``key_padding_mask`` are **True where attention is blocked**. Float masks are added
to the scores in both. A query row whose keys are all masked yields zeros (and zero gradients)
in ``scaled_dot_product_attention`` and in ``multi_head_attention_forward`` without weights, as
torch's fused attention; with ``need_weights=True`` it yields NaN, as torch's softmax there.
(torch's inference fast path of ``nn.MultiheadAttention``, in eval mode under ``no_grad``, gives
NaN without weights too; spx gives zeros there.)

See https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from spx.nn.functional._utils import resolve_key
from spx.nn.functional.linear import linear

Array = jax.Array


def _safe_softmax(scores: Array) -> Array:
    """Softmax over the last dim; rows that are entirely ``-inf`` give 0, not NaN."""
    row_max = jax.lax.stop_gradient(jnp.max(scores, axis=-1, keepdims=True))
    row_max = jnp.where(jnp.isfinite(row_max), row_max, 0)
    e = jnp.exp(scores - row_max)
    denom = jnp.sum(e, axis=-1, keepdims=True)
    return e / jnp.where(denom == 0, 1, denom)


def _apply_mask(scores: Array, mask: Array | None) -> Array:
    if mask is None:
        return scores
    m = jnp.asarray(mask)
    if m.dtype == jnp.bool_:
        return jnp.where(m, scores, -jnp.inf)
    if not jnp.issubdtype(m.dtype, jnp.floating):
        raise TypeError(
            f"attention mask must be bool (True = attend) or floating (added to the scores), "
            f"got dtype {m.dtype}"
        )
    return scores + m.astype(scores.dtype)


def _attention_dropout(w: Array, p: float, key: jax.Array | None) -> Array:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout_p has to be between 0 and 1, but got {p}")
    if p == 0.0:
        return w
    if p == 1.0:
        return jnp.zeros_like(w)
    keep = jax.random.bernoulli(resolve_key(key), 1.0 - p, w.shape)
    return jnp.where(keep, w / (1.0 - p), 0)


def _attend(
    q: Array,
    k: Array,
    v: Array,
    mask: Array | None,
    causal: bool,
    scale: float,
    dropout_p: float,
    dropout_key: jax.Array | None,
    groups: int,
    safe: bool = True,
) -> tuple[Array, Array]:
    """Core attention on ``(..., H, L, E)`` arrays; returns ``(output, weights)``.

    ``safe``: a query whose keys are all masked gets zero weights (torch's fused attention),
    else NaN (torch's softmax, which ``MultiheadAttention`` uses when it returns weights)."""
    L, S = q.shape[-2], k.shape[-2]
    q = q * jnp.asarray(scale, q.dtype)  # scale the (L, E) side: cheaper than the (L, S) scores
    if groups > 1:
        # Query head h uses key head h // groups (torch's repeat_interleave), i.e. view the
        # Hq query heads as (Hk, groups).
        hk = k.shape[-3]
        qg = q.reshape(*q.shape[:-3], hk, groups, L, q.shape[-1])
        scores = jnp.einsum("...hgle,...hse->...hgls", qg, k)
        scores = scores.reshape(*scores.shape[:-4], hk * groups, L, S)
    else:
        scores = jnp.einsum("...le,...se->...ls", q, k)
    # Softmax in at least float32 for low-precision inputs.
    scores = scores.astype(jnp.promote_types(scores.dtype, jnp.float32))
    if causal:
        # torch's is_causal is top-left aligned: query i sees keys 0..i (also when L != S).
        scores = jnp.where(jnp.tril(jnp.ones((L, S), jnp.bool_)), scores, -jnp.inf)
    scores = _apply_mask(scores, mask)
    weights = (_safe_softmax(scores) if safe else jax.nn.softmax(scores, axis=-1)).astype(q.dtype)
    weights = _attention_dropout(weights, dropout_p, dropout_key)
    if groups > 1:
        hk = v.shape[-3]
        wg = weights.reshape(*weights.shape[:-3], hk, groups, L, S)
        out = jnp.einsum("...hgls,...hsv->...hglv", wg, v)
        out = out.reshape(*out.shape[:-4], hk * groups, L, v.shape[-1])
    else:
        out = jnp.einsum("...ls,...sv->...lv", weights, v)
    return out, weights


def scaled_dot_product_attention(
    query: Array,
    key: Array,
    value: Array,
    attn_mask: Array | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
    *,
    dropout_key: jax.Array | None = None,
) -> Array:
    """``softmax(q k^T * scale + mask) v`` (mirrors ``torch...scaled_dot_product_attention``).

    Args:
        query: ``(N, ..., Hq, L, E)`` (any leading batch dims, broadcast like matmul).
        key: ``(N, ..., H, S, E)``.
        value: ``(N, ..., H, S, Ev)``.
        attn_mask: broadcastable to ``(N, ..., Hq, L, S)``; bool (True = may attend) or float
            (added to the scores, e.g. ``-inf`` to block or an ALiBi bias).
        dropout_p: dropout on the attention weights. Applied whenever > 0, as in torch, so pass
            0.0 in eval mode.
        is_causal: causal (top-left aligned) mask; with ``attn_mask`` too, both apply (as
            torch's CPU kernel does).
        scale: score scale, default ``1 / sqrt(E)``.
        enable_gqa: allow ``Hq`` to be a multiple of ``H`` (grouped-query attention).
        dropout_key: jax PRNG key for the dropout mask; default: ``spx.manual_seed``'s
            generator.

    Returns:
        ``(N, ..., Hq, L, Ev)``.

    Example:
        >>> q = k = v = jnp.ones((2, 4, 8, 16))  # (batch, heads, seq, head_dim)
        >>> F.scaled_dot_product_attention(q, k, v, is_causal=True).shape  # (2, 4, 8, 16)
    """
    q, k, v = jnp.asarray(query), jnp.asarray(key), jnp.asarray(value)
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError(
            f"scaled_dot_product_attention: query {q.shape}, key {k.shape} and value {v.shape} "
            "must be at least 2-D (..., L, E)"
        )
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise RuntimeError(
            f"scaled_dot_product_attention: query {q.shape} and key {k.shape} must share the "
            f"last dim E, and key and value {v.shape} the sequence dim S"
        )
    groups = 1
    if enable_gqa and q.ndim >= 3 and q.shape[-3] != k.shape[-3]:
        hq, hk = q.shape[-3], k.shape[-3]
        if hk != v.shape[-3] or hq % hk:
            raise RuntimeError(
                f"scaled_dot_product_attention: with enable_gqa=True the query heads ({hq}) "
                f"must be a multiple of the key/value heads ({hk}, {v.shape[-3]})"
            )
        groups = hq // hk
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    out, _ = _attend(q, k, v, attn_mask, is_causal, scale, dropout_p, dropout_key, groups)
    return out


def _canonical_mask(mask: Array | None, dtype: jnp.dtype, name: str) -> Array | None:
    """MHA masks as additive floats: bool True (= blocked) becomes ``-inf``."""
    if mask is None:
        return None
    m = jnp.asarray(mask)
    if m.dtype == jnp.bool_:
        return jnp.where(m, -jnp.inf, 0.0).astype(dtype)
    if not jnp.issubdtype(m.dtype, jnp.floating):
        raise TypeError(f"{name}: only bool and floating masks are supported, got {m.dtype}")
    return m.astype(dtype)


def multi_head_attention_forward(
    query: Array,
    key: Array,
    value: Array,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Array | None,
    in_proj_bias: Array | None,
    bias_k: Array | None,
    bias_v: Array | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Array,
    out_proj_bias: Array | None,
    training: bool = True,
    key_padding_mask: Array | None = None,
    need_weights: bool = True,
    attn_mask: Array | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Array | None = None,
    k_proj_weight: Array | None = None,
    v_proj_weight: Array | None = None,
    static_k: Array | None = None,
    static_v: Array | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
    *,
    batch_first: bool = False,
    dropout_key: jax.Array | None = None,
) -> tuple[Array, Array | None]:
    """``nn.MultiheadAttention``'s forward (mirrors ``torch...multi_head_attention_forward``).

    Weights are torch's: packed ``in_proj_weight (3E, E)`` / ``in_proj_bias (3E,)`` (or separate
    ``q/k/v_proj_weight`` with ``use_separate_proj_weight=True``), ``out_proj_weight (E, E)``.

    Args:
        query: ``(L, N, E)``, or ``(N, L, E)`` with ``batch_first=True``, or unbatched ``(L, E)``.
        key, value: ``(S, N, Ek)`` / ``(S, N, Ev)`` (batch-first likewise), or ``(S, E*)``.
        embed_dim_to_check: ``E``; the query's last dim must equal it.
        num_heads: heads; ``E`` must be divisible by it.
        in_proj_weight, in_proj_bias: packed projections, or None.
        bias_k, bias_v: ``(1, 1, E)`` learned key/value appended to the sequence, or None.
        add_zero_attn: append an all-zero key/value to the sequence.
        dropout_p: attention-weight dropout (only when ``training``).
        out_proj_weight, out_proj_bias: output projection.
        training: apply dropout.
        key_padding_mask: ``(N, S)`` (or ``(S,)`` unbatched); bool True = padding (ignored), or
            float added to the scores.
        need_weights: also return the attention weights.
        attn_mask: ``(L, S)`` or ``(N * num_heads, L, S)``; bool True = blocked, or float.
        use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight: separate
            ``(E, E)``, ``(E, Ek)``, ``(E, Ev)`` projections instead of the packed one.
        static_k, static_v: ``(N * num_heads, S, E / num_heads)`` precomputed keys/values.
        average_attn_weights: average the returned weights over heads.
        is_causal: a hint that ``attn_mask`` is causal (required with it, as in torch); the
            mask itself is always applied.
        batch_first: inputs and output are ``(N, L, E)`` (spx extension saving the module two
            transposes).
        dropout_key: jax PRNG key for dropout; default: ``spx.manual_seed``'s generator.

    Returns:
        ``(attn_output, attn_weights)``: output shaped like ``query``; weights
        ``(N, L, S)`` averaged or ``(N, num_heads, L, S)``, unbatched without ``N``, or None
        when ``need_weights=False``.

    Example:
        >>> E, H, x = 8, 2, jnp.ones((5, 3, 8))  # (L, N, E)
        >>> out, w = F.multi_head_attention_forward(
        ...     x, x, x, E, H, jnp.ones((3 * E, E)), jnp.zeros(3 * E), None, None, False, 0.0,
        ...     jnp.ones((E, E)), jnp.zeros(E), training=False)
    """
    q_in, k_in, v_in = jnp.asarray(query), jnp.asarray(key), jnp.asarray(value)
    batched = q_in.ndim == 3
    if q_in.ndim not in (2, 3) or k_in.ndim != q_in.ndim or v_in.ndim != q_in.ndim:
        raise RuntimeError(
            f"multi_head_attention_forward: query, key and value must all be 3-D (batched) or "
            f"2-D (unbatched), got {q_in.shape}, {k_in.shape}, {v_in.shape}"
        )
    if not batched:
        q_in, k_in, v_in = q_in[None], k_in[None], v_in[None]
        if key_padding_mask is not None:
            key_padding_mask = jnp.asarray(key_padding_mask)[None]
    elif not batch_first:
        q_in, k_in, v_in = (jnp.swapaxes(t, 0, 1) for t in (q_in, k_in, v_in))
    # From here on everything is batch-first: (N, L, E).
    bsz, tgt_len, embed_dim = q_in.shape
    if embed_dim != embed_dim_to_check:
        raise RuntimeError(
            f"multi_head_attention_forward: expected embedding dim {embed_dim_to_check}, "
            f"got query {jnp.shape(query)}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise ValueError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint; build one with "
            "jnp.triu(jnp.full((L, L), -jnp.inf), 1) or use scaled_dot_product_attention"
        )

    if use_separate_proj_weight:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise ValueError("use_separate_proj_weight=True needs q/k/v_proj_weight")
        b_q = b_k = b_v = None
        if in_proj_bias is not None:
            b_q, b_k, b_v = jnp.split(jnp.asarray(in_proj_bias), 3)
        q = linear(q_in, q_proj_weight, b_q)
        k = linear(k_in, k_proj_weight, b_k)
        v = linear(v_in, v_proj_weight, b_v)
    else:
        if in_proj_weight is None:
            raise ValueError("use_separate_proj_weight is False but in_proj_weight is None")
        w = jnp.asarray(in_proj_weight)
        b = None if in_proj_bias is None else jnp.asarray(in_proj_bias)
        if query is key and key is value:
            # Self-attention: one (3E, E) GEMM, then split.
            q, k, v = jnp.split(linear(q_in, w, b), 3, axis=-1)
        else:
            ws = jnp.split(w, 3)
            bs = (None,) * 3 if b is None else jnp.split(b, 3)
            q, k, v = (
                linear(t, wi, bi) for t, wi, bi in zip((q_in, k_in, v_in), ws, bs, strict=True)
            )

    dtype = q.dtype
    mask = _canonical_mask(attn_mask, dtype, "attn_mask")
    kpm = _canonical_mask(key_padding_mask, dtype, "key_padding_mask")
    src_len = k.shape[1]
    if mask is not None:
        if mask.ndim == 2:
            if mask.shape != (tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {mask.shape}, but should be "
                    f"{(tgt_len, src_len)}."
                )
            mask = mask[None, None]
        elif mask.ndim == 3:
            if mask.shape != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {mask.shape}, but should be "
                    f"{(bsz * num_heads, tgt_len, src_len)}."
                )
            mask = mask.reshape(bsz, num_heads, tgt_len, src_len)
        else:
            raise RuntimeError(f"attn_mask's dimension {mask.ndim} is not supported")

    def split_heads(t: Array) -> Array:  # (N, S, E) -> (N, H, S, D)
        return jnp.swapaxes(t.reshape(bsz, t.shape[1], num_heads, head_dim), 1, 2)

    def pad_masks(mask: Array | None, kpm: Array | None) -> tuple[Array | None, Array | None]:
        widen = ((0, 0),) * 3 + ((0, 1),)
        return (
            None if mask is None else jnp.pad(mask, widen),
            None if kpm is None else jnp.pad(kpm, ((0, 0), (0, 1))),
        )

    if bias_k is not None or bias_v is not None:
        if bias_k is None or bias_v is None:
            raise ValueError("bias_k and bias_v must be given together")
        if static_k is not None or static_v is not None:
            raise ValueError("bias_k/bias_v cannot be added to static_k/static_v")
        k = jnp.concatenate([k, _expand_bias(bias_k, bsz)], axis=1)
        v = jnp.concatenate([v, _expand_bias(bias_v, bsz)], axis=1)
        mask, kpm = pad_masks(mask, kpm)

    qh = split_heads(q)
    kh = split_heads(k) if static_k is None else _static(static_k, bsz, num_heads, head_dim, "k")
    vh = split_heads(v) if static_v is None else _static(static_v, bsz, num_heads, head_dim, "v")
    if add_zero_attn:
        zeros = jnp.zeros((bsz, num_heads, 1, head_dim), dtype)
        kh = jnp.concatenate([kh, zeros], axis=2)
        vh = jnp.concatenate([vh, zeros], axis=2)
        mask, kpm = pad_masks(mask, kpm)
    src_len = kh.shape[2]
    if kpm is not None:
        if kpm.shape != (bsz, src_len):
            raise RuntimeError(
                f"key_padding_mask must have shape {(bsz, src_len)}, got {kpm.shape}"
            )
        kpm = kpm[:, None, None, :]
        mask = kpm if mask is None else mask + kpm

    p = dropout_p if training else 0.0
    # torch returns the weights from its own softmax (NaN for a query whose keys are all
    # masked) and uses fused attention (zeros there) only when it returns none.
    out, weights = _attend(
        qh, kh, vh, mask, False, 1.0 / math.sqrt(head_dim), p, dropout_key, groups=1,
        safe=not need_weights,
    )  # fmt: skip
    out = jnp.swapaxes(out, 1, 2).reshape(bsz, tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    if not batched:
        out = out[0]
    elif not batch_first:
        out = jnp.swapaxes(out, 0, 1)
    if not need_weights:
        return out, None
    if average_attn_weights:
        weights = jnp.mean(weights, axis=1)
    return out, weights if batched else weights[0]


def _expand_bias(bias: Array, bsz: int) -> Array:
    # torch's bias_k.repeat(1, bsz, 1) in (S, N, E) layout; here (N, 1, E).
    b = jnp.asarray(bias).reshape(1, 1, -1)
    return jnp.broadcast_to(b, (bsz, 1, b.shape[-1]))


def _static(t: Array, bsz: int, num_heads: int, head_dim: int, name: str) -> Array:
    t = jnp.asarray(t)
    if t.ndim != 3 or t.shape[0] != bsz * num_heads or t.shape[2] != head_dim:
        raise RuntimeError(
            f"static_{name} must be (N * num_heads, S, head_dim) = "
            f"({bsz * num_heads}, S, {head_dim}), got {t.shape}"
        )
    return t.reshape(bsz, num_heads, t.shape[1], head_dim)
