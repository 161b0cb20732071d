"""The Transformer family with torch's names, layout and initialization.

``TransformerEncoderLayer``, ``TransformerEncoder``, ``TransformerDecoderLayer``,
``TransformerDecoder`` and ``Transformer`` are built from :class:`MultiheadAttention`,
``Linear``, ``LayerNorm`` and ``Dropout`` exactly as torch builds them, so a torch ``state_dict``
(``layers.0.self_attn.in_proj_weight``, ``layers.0.linear1.weight``, ``norm.weight``, ...) loads
with no key map. An encoder or decoder stacks deep copies of the layer it is given (the layers
start equal, as in torch); ``Transformer`` re-initializes every matrix with Xavier-uniform.

Differences from torch: torch's inference "fast path" (a fused kernel in eval mode without
grad) is a kernel choice with the same numbers and has no counterpart; with
``enable_nested_tensor`` and a padding mask, torch's encoder then returns zeros at padded
positions, where spx returns the computed values (which a padding mask already keeps out of
every unpadded position). A mask's ``is_causal`` is not detected from its values: the mask is
applied as given, which computes the same numbers.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from spx import _validate
from spx.nn import functional as F
from spx.nn import init
from spx.nn.module import Module
from spx.nn.modules.attention import MultiheadAttention
from spx.nn.modules.container import ModuleList
from spx.nn.modules.dropout import Dropout
from spx.nn.modules.linear import Linear
from spx.nn.modules.normalization import LayerNorm

__all__ = [
    "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
    "TransformerEncoderLayer",
]  # fmt: skip


def _activation(activation: str | Callable[[Any], Any]) -> Callable[[Any], Any]:
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    if not callable(activation):
        raise TypeError(f"activation must be 'relu', 'gelu' or a callable, got {activation!r}")
    return activation


def _clones(layer: Module, n: int, where: str) -> ModuleList:
    n = _validate.as_int(n, "num_layers", where, minimum=0)
    return ModuleList([copy.deepcopy(layer) for _ in range(n)])


def _attend(
    attn: MultiheadAttention, x: Any, mem: Any, attn_mask: Any, key_padding_mask: Any, causal: Any
) -> Any:
    """``x`` attending to ``mem`` without weights, as torch's layers call their attention.

    torch detects a causal mask by comparing values (``is_causal=None``); the mask itself is
    applied either way, so only an explicit True counts (MultiheadAttention refuses it without
    a mask).
    """
    return attn(
        x, mem, mem,
        attn_mask=attn_mask,
        key_padding_mask=key_padding_mask,
        need_weights=False,
        is_causal=bool(causal),
    )[0]  # fmt: skip


def _feed_forward(layer: Module, x: Any) -> Any:
    """``linear2(dropout(activation(linear1(x))))``, the feed-forward block of either layer."""
    return layer.linear2(layer.dropout(layer.activation(layer.linear1(x))))


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block (mirrors ``torch.nn.TransformerEncoderLayer``).

    Args:
        d_model: features of the input.
        nhead: attention heads (``d_model`` must be divisible by it).
        dim_feedforward: hidden width of the feed-forward block.
        dropout: dropout after attention, inside and after the feed-forward block.
        activation: ``"relu"``, ``"gelu"`` or a callable.
        layer_norm_eps: LayerNorm's eps.
        batch_first: inputs are ``(N, S, E)`` instead of ``(S, N, E)``.
        norm_first: LayerNorm before attention and feed-forward (pre-norm) instead of after.
        bias: biases in the Linear and LayerNorm layers.

    Example:
        >>> import spx
        >>> layer = spx.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        >>> layer(spx.ones(3, 5, 8)).shape
        spx.Size([3, 5, 8])
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Any], Any] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **factory
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(
        self,
        src: Any,
        src_mask: Any = None,
        src_key_padding_mask: Any = None,
        is_causal: bool = False,
    ) -> Any:
        """``src (S, N, E)`` (``(N, S, E)`` batch-first, or ``(S, E)``) -> the same shape.

        ``src_mask`` is ``(S, S)`` or ``(N * nhead, S, S)`` (bool True blocks, floats are added);
        ``src_key_padding_mask`` ``(N, S)`` marks padding to ignore.
        """
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Any, attn_mask: Any, key_padding_mask: Any, is_causal: bool) -> Any:
        return self.dropout1(_attend(self.self_attn, x, x, attn_mask, key_padding_mask, is_causal))

    def _ff_block(self, x: Any) -> Any:
        return self.dropout2(_feed_forward(self, x))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's output and a feed-forward block (mirrors
    ``torch.nn.TransformerDecoderLayer``; arguments as :class:`TransformerEncoderLayer`).

    Example:
        >>> import spx
        >>> layer = spx.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        >>> layer(spx.ones(3, 4, 8), spx.ones(3, 6, 8)).shape
        spx.Size([3, 4, 8])
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Any], Any] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **factory
        )
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **factory
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(
        self,
        tgt: Any,
        memory: Any,
        tgt_mask: Any = None,
        memory_mask: Any = None,
        tgt_key_padding_mask: Any = None,
        memory_key_padding_mask: Any = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Any:
        """``tgt (T, N, E)`` attending to ``memory (S, N, E)`` (batch-first likewise) ->
        ``(T, N, E)``; masks as in :class:`Transformer`."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            mem_masks = (memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, *mem_masks)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            mem_masks = (memory_mask, memory_key_padding_mask, memory_is_causal)
            x = self.norm2(x + self._mha_block(x, memory, *mem_masks))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Any, attn_mask: Any, key_padding_mask: Any, is_causal: bool) -> Any:
        return self.dropout1(_attend(self.self_attn, x, x, attn_mask, key_padding_mask, is_causal))

    def _mha_block(
        self, x: Any, mem: Any, attn_mask: Any, key_padding_mask: Any, is_causal: bool
    ) -> Any:
        attended = _attend(self.multihead_attn, x, mem, attn_mask, key_padding_mask, is_causal)
        return self.dropout2(attended)

    def _ff_block(self, x: Any) -> Any:
        return self.dropout3(_feed_forward(self, x))


class TransformerEncoder(Module):
    """``num_layers`` copies of an encoder layer, then an optional norm (mirrors
    ``torch.nn.TransformerEncoder``).

    Example:
        >>> import spx
        >>> layer = spx.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
        >>> spx.nn.TransformerEncoder(layer, num_layers=2)(spx.ones(5, 3, 8)).shape
        spx.Size([5, 3, 8])
    """

    def __init__(
        self,
        encoder_layer: Module,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder")
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False  # no nested tensors in spx (see the module docstring)
        self.mask_check = mask_check

    def forward(
        self,
        src: Any,
        mask: Any = None,
        src_key_padding_mask: Any = None,
        is_causal: bool | None = None,
    ) -> Any:
        """Each layer in turn (masks as :meth:`TransformerEncoderLayer.forward`), then norm."""
        output = src
        causal = bool(is_causal)
        for layer in self.layers:
            output = layer(
                output, src_mask=mask, is_causal=causal, src_key_padding_mask=src_key_padding_mask
            )
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """``num_layers`` copies of a decoder layer, then an optional norm (mirrors
    ``torch.nn.TransformerDecoder``).

    Example:
        >>> import spx
        >>> layer = spx.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)
        >>> spx.nn.TransformerDecoder(layer, 2)(spx.ones(4, 3, 8), spx.ones(6, 3, 8)).shape
        spx.Size([4, 3, 8])
    """

    def __init__(self, decoder_layer: Module, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder")
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Any,
        memory: Any,
        tgt_mask: Any = None,
        memory_mask: Any = None,
        tgt_key_padding_mask: Any = None,
        memory_key_padding_mask: Any = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Any:
        """Each layer in turn (masks as :class:`Transformer`), then norm."""
        output = tgt
        causal = bool(tgt_is_causal)
        for layer in self.layers:
            output = layer(
                output,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=causal,
                memory_is_causal=memory_is_causal,
            )
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """An encoder-decoder Transformer (mirrors ``torch.nn.Transformer``).

    Args:
        d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
            norm_first, bias: as :class:`TransformerEncoderLayer`.
        num_encoder_layers, num_decoder_layers: depth of each stack.
        custom_encoder, custom_decoder: modules used instead of the default stacks.

    Example:
        >>> import spx
        >>> model = spx.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True)
        >>> model(spx.ones(3, 6, 8), spx.ones(3, 4, 8)).shape
        spx.Size([3, 4, 8])
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Any], Any] = F.relu,
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(*args, batch_first, norm_first, bias, **factory)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(*args, batch_first, norm_first, bias, **factory)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(
        self,
        src: Any,
        tgt: Any,
        src_mask: Any = None,
        tgt_mask: Any = None,
        memory_mask: Any = None,
        src_key_padding_mask: Any = None,
        tgt_key_padding_mask: Any = None,
        memory_key_padding_mask: Any = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Any:
        """``src (S, N, E)`` and ``tgt (T, N, E)`` (batch-first: ``(N, S, E)``, ``(N, T, E)``;
        unbatched: ``(S, E)``, ``(T, E)``) -> ``(T, N, E)``.

        Masks: ``src_mask (S, S)``, ``tgt_mask (T, T)``, ``memory_mask (T, S)`` (or with a
        leading ``N * nhead``); bool True blocks attention, floats are added to the scores.
        Padding masks ``(N, S)``/``(N, T)``/``(N, S)``: True marks keys to ignore.
        """
        batched = src.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if batched and src.size(batch_dim) != tgt.size(batch_dim):
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Any:
        """``(sz, sz)`` float mask: ``-inf`` above the diagonal, 0 elsewhere (torch's).

        Example:
            >>> import spx
            >>> spx.nn.Transformer.generate_square_subsequent_mask(2).tolist()
            [[0.0, -inf], [0.0, 0.0]]
        """
        import spx

        sz = _validate.as_int(sz, "sz", "generate_square_subsequent_mask", minimum=0)
        full = spx.full((sz, sz), float("-inf"), dtype=dtype, device=device)
        return spx.triu(full, diagonal=1)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
