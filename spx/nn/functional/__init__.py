r"""Functional ops mirroring ``torch.nn.functional``, on :class:`spx.Tensor`.

Import as ``import spx.nn.functional as F``; names, argument order, defaults and numbers follow
torch (see each function for the few documented differences, e.g. random ops take an optional
``key=``; ``inplace=True`` writes into a Tensor input, not into a jax array). Each function is
implemented once over JAX arrays in the module of its theme and exported here as one recorded
Tensor operation (``@recorded``): a call costs a few microseconds and autograd differentiates
the implementation with JAX. Random ops draw their key from ``spx.manual_seed``'s generator
when they call for one, before recording.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import jax.numpy as _jnp
import numpy as _np

from spx import random as _random
from spx._tensor import checks as _checks
from spx._tensor.grad_mode import no_grad as _no_grad
from spx._tensor.recorded import record_call as _record_call
from spx._tensor.recorded import recorded as _recorded
from spx._tensor.tensor import Tensor as _Tensor
from spx.nn.functional import activation as _activation
from spx.nn.functional import attention as _attention
from spx.nn.functional import conv as _conv
from spx.nn.functional import cross_entropy as _cross_entropy
from spx.nn.functional import distance as _distance
from spx.nn.functional import dropout as _dropout
from spx.nn.functional import linear as _linear
from spx.nn.functional import loss as _loss
from spx.nn.functional import margin_loss as _margin_loss
from spx.nn.functional import normalization as _normalization
from spx.nn.functional import pad as _pad
from spx.nn.functional import pool_indices as _pool_indices
from spx.nn.functional import pooling as _pooling
from spx.nn.functional import shape as _shape
from spx.nn.functional import sparse as _sparse
from spx.nn.functional import upsampling as _upsampling
from spx.nn.functional.normalization import BatchNormResult as BatchNormResult
from spx.ops.creation import as_tensor as _as_tensor


def _keyed(fn: Callable, key_arg: str, needs_key: Callable[..., bool]) -> Callable:
    """``fn`` recorded, with ``key_arg`` drawn from the rank's generator when it is needed."""
    record = _recorded(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get(key_arg) is None and needs_key(*args, **kwargs):
            kwargs[key_arg] = _random.next_key_tensor()
        return record(*args, **kwargs)

    return wrapper


def _dropping(input: Any, p: float = 0.5, training: bool = True, *a: Any, **k: Any) -> bool:
    return bool(training) and p != 0


def _identity_when_off(fn: Callable, training_default: bool) -> Callable:
    """A keyed dropout that, when it drops nothing, returns its input Tensor itself (as torch).

    Nothing is recorded and no key is drawn then: a Dropout in eval mode costs nothing.
    """
    keyed = _keyed(fn, "key", _always)
    plain = _recorded(fn)

    @functools.wraps(fn)
    def wrapper(
        input: Any, p: float = 0.5, training: bool = training_default, inplace: bool = False,
        *, key: Any = None,
    ) -> Any:  # fmt: skip
        _dropout._check_p(p)
        if not training or p == 0:
            if hasattr(input, "_ref"):
                return input
            return plain(input, p, False)  # an array in, a Tensor out
        return keyed(input, p, True, inplace, key=key)

    return wrapper


def _sdpa_drops(q: Any, k: Any, v: Any, attn_mask: Any = None, dropout_p: float = 0.0, *a, **kw):
    return dropout_p != 0


def _mha_drops(*args: Any, **kwargs: Any) -> bool:
    dropout_p = args[10] if len(args) > 10 else kwargs.get("dropout_p", 0.0)
    training = args[13] if len(args) > 13 else kwargs.get("training", True)
    return bool(training) and dropout_p != 0


def _always(*args: Any, **kwargs: Any) -> bool:
    return True


def _rrelu_trains(input: Any, lower: Any = 0, upper: Any = 0, training: bool = False, *a, **k):
    return bool(training)


_batch_norm_with_stats = _recorded(_normalization.batch_norm_with_stats)


@functools.wraps(_normalization.batch_norm)
def batch_norm(
    input: Any,
    running_mean: Any,
    running_var: Any,
    weight: Any = None,
    bias: Any = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Any:
    # torch updates the running statistics in place; the new values are recorded like any op.
    out, mean, var = _batch_norm_with_stats(
        input, running_mean, running_var, weight, bias, training, momentum, eps
    )
    if training:
        _update_running(((running_mean, mean), (running_var, var)))
    return out


def _update_running(pairs: tuple) -> None:
    """torch's in-place update of running statistics: ``old.copy_(new)`` for each ``old`` that
    is a Tensor (an array given as ``running_mean`` cannot be written, as in JAX)."""
    with _no_grad():
        for old, new in pairs:
            if hasattr(old, "copy_") and new is not None:
                old.copy_(new)


_cross_entropy_op = _recorded(_cross_entropy.cross_entropy)
_linear_cross_entropy_op = _recorded(_cross_entropy.linear_cross_entropy)
_nll_loss_op = _recorded(_cross_entropy.nll_loss)
_one_hot_op = _recorded(_sparse.one_hot)


def _check_targets(input: Any, target: Any, ignore_index: int | None, name: str) -> None:
    """torch's IndexError for class indices out of range.

    A recorded op sees only shapes; the values of targets that are already computed (numpy,
    a DataLoader batch) are checked here, before recording, and pending ones once they are
    computed (:mod:`spx._tensor.checks`). Traced targets are not checked: out-of-range ones
    give NaN, as inside ``jit``.
    """
    dtype = getattr(target, "dtype", None)
    if dtype is None or not _np.issubdtype(dtype, _np.integer):
        return
    cdim = _cross_entropy._class_dim(input, name)
    ignore = -100 if ignore_index is None else ignore_index
    shape = _ShapeOnly(tuple(input.shape))  # not the input itself: a check may wait a while
    _checks.when_known(
        target, lambda v: _cross_entropy._check_index_target(shape, v, cdim, ignore, name)
    )


@functools.wraps(_cross_entropy.cross_entropy)
def cross_entropy(input: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
    ignore_index = args[2] if len(args) > 2 else kwargs.get("ignore_index", -100)
    _check_targets(input, target, ignore_index, "cross_entropy")
    return _cross_entropy_op(input, target, *args, **kwargs)


@functools.wraps(_cross_entropy.nll_loss)
def nll_loss(input: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
    ignore_index = args[2] if len(args) > 2 else kwargs.get("ignore_index", -100)
    _check_targets(input, target, ignore_index, "nll_loss")
    return _nll_loss_op(input, target, *args, **kwargs)


@functools.wraps(_cross_entropy.linear_cross_entropy)
def linear_cross_entropy(input: Any, linear_weight: Any, target: Any, **kwargs: Any) -> Any:
    if getattr(input, "ndim", None) in (1, 2) and getattr(linear_weight, "ndim", 0) >= 2:
        shape = (*input.shape[:-1], *linear_weight.shape[:-1])
        logits = _ShapeOnly(shape)
        _check_targets(logits, target, kwargs.get("ignore_index"), "linear_cross_entropy")
    return _linear_cross_entropy_op(input, linear_weight, target, **kwargs)


class _ShapeOnly:
    """Stands for an array whose shape is all a check reads."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(shape)
        self.ndim = len(self.shape)


_embedding_op = _recorded(_sparse.embedding)


@functools.wraps(_sparse.embedding)
def embedding(input: Any, weight: Any, *args: Any, **kwargs: Any) -> Any:
    # torch's IndexError for out-of-range indices: at once when their values are known (a
    # batch from a DataLoader, spx.tensor(...)), else once they are computed (the recorded op
    # sees only shapes; spx._tensor.checks).
    num = getattr(weight, "shape", (None,))[0]
    if num is not None:
        _checks.when_known(input, lambda v: _sparse._check_range(v, num))
    bound = _embedding_signature.bind(input, weight, *args, **kwargs).arguments
    if bound.get("max_norm") is not None and isinstance(weight, _Tensor):
        # torch renormalises the looked-up rows of the table itself, in place: the next step
        # starts from them. A raw array cannot be written; the op then scales the output.
        _embedding_renorm_(weight, input, bound["max_norm"], bound.get("norm_type", 2.0))
        bound["max_norm"] = None
    return _embedding_op(**bound)


_embedding_signature = inspect.signature(_sparse.embedding)


def _embedding_renorm_(weight: Any, input: Any, max_norm: float, norm_type: float) -> None:
    """torch's ``embedding_renorm_``: rows of ``weight`` that ``input`` looks up and whose
    ``norm_type``-norm exceeds ``max_norm`` are scaled by ``max_norm / (norm + 1e-7)``."""
    import jax.numpy as jnp

    with _no_grad():
        w = weight._data
        idx = jnp.asarray(input._data if isinstance(input, _Tensor) else input).reshape(-1)
        rows = jnp.take(w, idx, axis=0, mode="clip")
        norms = jnp.linalg.norm(rows, ord=norm_type, axis=-1, keepdims=True)
        scale = jnp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.copy_(w.at[idx].set((rows * scale).astype(w.dtype), mode="drop"))


@functools.wraps(_sparse.one_hot)
def one_hot(tensor: Any, num_classes: int = -1) -> Any:
    # The output's shape depends on the values when num_classes=-1: torch reads them (a sync),
    # and so does spx, before recording. Known values are range-checked as torch does.
    if num_classes == -1 and hasattr(tensor, "_ref"):
        tensor._value()  # computes a pending tensor (a traced one stays unknown)
    values = _checks.known_value(tensor)
    if values is not None and _np.issubdtype(values.dtype, _np.integer):
        if num_classes == -1:
            num_classes = int(values.max()) + 1 if values.size else 0
        _sparse.one_hot(values, num_classes)  # the value checks, on the host
    elif num_classes >= 0 and _np.issubdtype(getattr(tensor, "dtype", float), _np.integer):
        # Pending values: checked once computed (spx._tensor.checks).
        _checks.when_known(tensor, lambda v: _sparse.check_one_hot_values(v, num_classes))
    return _one_hot_op(tensor, num_classes)


celu = _recorded(_activation.celu)
elu = _recorded(_activation.elu)
gelu = _recorded(_activation.gelu)
glu = _recorded(_activation.glu)
hardshrink = _recorded(_activation.hardshrink)
hardsigmoid = _recorded(_activation.hardsigmoid)
hardswish = _recorded(_activation.hardswish)
hardtanh = _recorded(_activation.hardtanh)
leaky_relu = _recorded(_activation.leaky_relu)
log_softmax = _recorded(_activation.log_softmax)
logsigmoid = _recorded(_activation.logsigmoid)
mish = _recorded(_activation.mish)
prelu = _recorded(_activation.prelu)
relu = _recorded(_activation.relu)
relu6 = _recorded(_activation.relu6)
selu = _recorded(_activation.selu)
sigmoid = _recorded(_activation.sigmoid)
silu = _recorded(_activation.silu)
softmax = _recorded(_activation.softmax)
softmin = _recorded(_activation.softmin)
softplus = _recorded(_activation.softplus)
softshrink = _recorded(_activation.softshrink)
softsign = _recorded(_activation.softsign)
tanh = _recorded(_activation.tanh)
tanhshrink = _recorded(_activation.tanhshrink)
threshold = _recorded(_activation.threshold)

conv1d = _recorded(_conv.conv1d)
conv2d = _recorded(_conv.conv2d)
conv3d = _recorded(_conv.conv3d)
conv_transpose1d = _recorded(_conv.conv_transpose1d)
conv_transpose2d = _recorded(_conv.conv_transpose2d)
conv_transpose3d = _recorded(_conv.conv_transpose3d)
cosine_similarity = _recorded(_distance.cosine_similarity)
pairwise_distance = _recorded(_distance.pairwise_distance)
pdist = _recorded(_distance.pdist)
bilinear = _recorded(_linear.bilinear)
linear = _recorded(_linear.linear)
_binary_cross_entropy_op = _recorded(_loss.binary_cross_entropy)


@functools.wraps(_loss.binary_cross_entropy)
def binary_cross_entropy(input: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
    # torch's checks of the values (see _check_targets): a logit passed where a probability
    # belongs would otherwise give NaN or a wrong loss. Pending values (a model's output always
    # is) are checked once computed, through their lowest and highest entries.
    for name, value in (("input", input), ("target", target)):
        _checks.when_known(
            value, functools.partial(_check_probabilities, name), _checks.value_range
        )
    return _binary_cross_entropy_op(input, target, *args, **kwargs)


def _check_probabilities(name: str, values: Any) -> None:
    if values.size and not ((values >= 0) & (values <= 1)).all():
        raise RuntimeError(
            f"all elements of {name} should be between 0 and 1 (binary_cross_entropy got "
            f"{name} values in [{values.min()}, {values.max()}]); for logits use "
            "binary_cross_entropy_with_logits (nn.BCEWithLogitsLoss)"
        )


binary_cross_entropy_with_logits = _recorded(_loss.binary_cross_entropy_with_logits)
huber_loss = _recorded(_loss.huber_loss)
kl_div = _recorded(_loss.kl_div)
l1_loss = _recorded(_loss.l1_loss)
margin_ranking_loss = _recorded(_loss.margin_ranking_loss)
mse_loss = _recorded(_loss.mse_loss)
smooth_l1_loss = _recorded(_loss.smooth_l1_loss)
soft_margin_loss = _recorded(_loss.soft_margin_loss)
cosine_embedding_loss = _recorded(_margin_loss.cosine_embedding_loss)
_gaussian_nll_loss_op = _recorded(_margin_loss.gaussian_nll_loss)
hinge_embedding_loss = _recorded(_margin_loss.hinge_embedding_loss)
_multi_margin_loss_op = _recorded(_margin_loss.multi_margin_loss)
_multilabel_margin_loss_op = _recorded(_margin_loss.multilabel_margin_loss)


@functools.wraps(_margin_loss.gaussian_nll_loss)
def gaussian_nll_loss(input: Any, target: Any, var: Any, *args: Any, **kwargs: Any) -> Any:
    _checks.when_known(var, _check_variance, _checks.value_range)
    return _gaussian_nll_loss_op(input, target, var, *args, **kwargs)


def _check_variance(values: Any) -> None:
    if values.size and (values < 0).any():
        raise ValueError(
            f"var has negative entry/entries (gaussian_nll_loss got min {values.min()}); "
            "predict a variance that is non-negative, e.g. through softplus or exp"
        )


def _check_class_range(target: Any, input: Any, low: int, message: str) -> None:
    """torch's RuntimeError for class indices outside ``[low, C)``: at once when they are known,
    else once they are computed (:mod:`spx._tensor.checks`)."""
    n_classes = getattr(input, "shape", (None,))[-1] if getattr(input, "ndim", 0) else None
    if n_classes is None:
        return

    def check(values: Any) -> None:
        if not values.size or not _np.issubdtype(values.dtype, _np.integer):
            return
        bad = (values < low) | (values >= n_classes)
        if bad.any():
            raise RuntimeError(
                f"{message} (got {int(values[bad].reshape(-1)[0])}; class indices must be in "
                f"[{low}, {n_classes - 1}] for an input with {n_classes} classes)"
            )

    _checks.when_known(target, check)


@functools.wraps(_margin_loss.multi_margin_loss)
def multi_margin_loss(input: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
    _check_class_range(target, input, 0, "target out of range")
    return _multi_margin_loss_op(input, target, *args, **kwargs)


@functools.wraps(_margin_loss.multilabel_margin_loss)
def multilabel_margin_loss(input: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
    # -1 ends each row's list of classes.
    _check_class_range(target, input, -1, "argument #2 'target' is out of range")
    return _multilabel_margin_loss_op(input, target, *args, **kwargs)


multilabel_soft_margin_loss = _recorded(_margin_loss.multilabel_soft_margin_loss)
poisson_nll_loss = _recorded(_margin_loss.poisson_nll_loss)
triplet_margin_loss = _recorded(_margin_loss.triplet_margin_loss)
_triplet_from_distances = _recorded(_margin_loss.triplet_from_distances)


def triplet_margin_with_distance_loss(
    anchor: Any,
    positive: Any,
    negative: Any,
    *,
    distance_function: Callable[[Any, Any], Any] | None = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Any:
    """``max(0, margin + d(a, pos) - d(a, neg))`` with any distance (torch's version).

    ``distance_function`` is called on the Tensors themselves (it may be any spx code, e.g. a
    lambda over ``F.cosine_similarity``); the default is :func:`pairwise_distance`.

    Args:
        anchor, positive, negative: ``(N, D)`` or ``(D,)``, all of the same rank.
        distance_function: ``(x1, x2) -> (N,)`` distances; None is the Euclidean distance.
        margin: a positive margin.
        swap: use ``min(d(a, neg), d(pos, neg))`` as the negative distance.
        reduction: ``"none"`` | ``"mean"`` | ``"sum"``.

    Example:
        >>> a = spx.zeros(2, 3)
        >>> F.triplet_margin_with_distance_loss(a, a, a + 1, margin=2.0)  # 2 - sqrt(3)
    """
    if margin <= 0:
        raise ValueError(
            f"triplet_margin_with_distance_loss: margin must be greater than 0, got {margin}"
        )
    shapes = [tuple(getattr(x, "shape", ())) for x in (anchor, positive, negative)]
    if len({len(s) for s in shapes}) != 1 or len(shapes[0]) not in (1, 2):
        raise RuntimeError(
            "triplet_margin_with_distance_loss: anchor, positive and negative must all be 1-D "
            f"or all be 2-D, got shapes {shapes}"
        )
    dist = pairwise_distance if distance_function is None else distance_function
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    d_swap = dist(positive, negative) if swap else None
    return _triplet_from_distances(d_pos, d_neg, d_swap, margin, reduction)


batch_norm_with_stats = _recorded(_normalization.batch_norm_with_stats)
group_norm = _recorded(_normalization.group_norm)
_instance_norm_op = _recorded(_normalization.instance_norm)


@functools.wraps(_normalization.instance_norm)
def instance_norm(
    input: Any,
    running_mean: Any = None,
    running_var: Any = None,
    weight: Any = None,
    bias: Any = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Any:
    if use_input_stats and (running_mean is not None or running_var is not None):
        # torch updates the running statistics in place here: each instance's mean and
        # unbiased variance, averaged over the batch, blended in with `momentum`.
        dims = tuple(range(2, len(input.shape)))
        with _no_grad():
            x = (input.detach() if isinstance(input, _Tensor) else _as_tensor(input)).float()
            stats = (x.mean(dim=dims).mean(0), x.var(dim=dims, unbiased=True).mean(0))
            blended = [
                None
                if not hasattr(old, "copy_")
                else old * (1 - momentum) + new.to(old.dtype) * momentum
                for old, new in zip((running_mean, running_var), stats, strict=True)
            ]
        _update_running(tuple(zip((running_mean, running_var), blended, strict=True)))
    return _instance_norm_op(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


layer_norm = _recorded(_normalization.layer_norm)
local_response_norm = _recorded(_normalization.local_response_norm)
normalize = _recorded(_normalization.normalize)
rms_norm = _recorded(_normalization.rms_norm)
pad = _recorded(_pad.pad)
adaptive_avg_pool1d = _recorded(_pooling.adaptive_avg_pool1d)
adaptive_avg_pool2d = _recorded(_pooling.adaptive_avg_pool2d)
adaptive_avg_pool3d = _recorded(_pooling.adaptive_avg_pool3d)
adaptive_max_pool1d = _recorded(_pooling.adaptive_max_pool1d)
adaptive_max_pool2d = _recorded(_pooling.adaptive_max_pool2d)
adaptive_max_pool3d = _recorded(_pooling.adaptive_max_pool3d)
avg_pool1d = _recorded(_pooling.avg_pool1d)
avg_pool2d = _recorded(_pooling.avg_pool2d)
avg_pool3d = _recorded(_pooling.avg_pool3d)
max_pool1d = _recorded(_pooling.max_pool1d)
max_pool2d = _recorded(_pooling.max_pool2d)
max_pool3d = _recorded(_pooling.max_pool3d)
max_pool1d_with_indices = _recorded(_pool_indices.max_pool1d_with_indices)
max_pool2d_with_indices = _recorded(_pool_indices.max_pool2d_with_indices)
max_pool3d_with_indices = _recorded(_pool_indices.max_pool3d_with_indices)
adaptive_max_pool1d_with_indices = _recorded(_pool_indices.adaptive_max_pool1d_with_indices)
adaptive_max_pool2d_with_indices = _recorded(_pool_indices.adaptive_max_pool2d_with_indices)
adaptive_max_pool3d_with_indices = _recorded(_pool_indices.adaptive_max_pool3d_with_indices)


def _max_unpool(fn: Callable, nd: int) -> Callable:
    """``fn`` recorded, with torch's range check of the indices: at once if they are known,
    else once computed, on their min and max (the pool that made them usually ran in the same
    recorded step)."""
    record = _recorded(fn)
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(
        input: Any,
        indices: Any,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        output_size: Any = None,
    ) -> Any:
        shape = getattr(input, "shape", None)
        if shape is not None and len(shape) >= nd:
            sizes, *_ = _pool_indices.unpool_output_size(
                shape, kernel_size, stride, padding, output_size, nd, name
            )
            check = functools.partial(_pool_indices.check_unpool_indices, spatial=sizes, name=name)
            _checks.when_known(indices, check, _checks.value_range)
        return record(input, indices, kernel_size, stride, padding, output_size)

    return wrapper


max_unpool1d = _max_unpool(_pool_indices.max_unpool1d, 1)
max_unpool2d = _max_unpool(_pool_indices.max_unpool2d, 2)
max_unpool3d = _max_unpool(_pool_indices.max_unpool3d, 3)
lp_pool1d = _recorded(_pooling.lp_pool1d)
lp_pool2d = _recorded(_pooling.lp_pool2d)
lp_pool3d = _recorded(_pooling.lp_pool3d)
flatten = _recorded(_shape.flatten)
pixel_shuffle = _recorded(_shape.pixel_shuffle)
pixel_unshuffle = _recorded(_shape.pixel_unshuffle)
unflatten = _recorded(_shape.unflatten)


@functools.wraps(_upsampling.interpolate)
def interpolate(
    input: Any,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Any:
    # The arguments are checked on the shape alone and only the chosen kernel is recorded, so
    # autocast sees torch's op (upsample_* on its float32 list; area is an adaptive pool).
    shape = getattr(input, "shape", None)
    if shape is None:
        raise TypeError(f"interpolate: input must be a Tensor or array, got {type(input).__name__}")
    kernel, args = _upsampling.plan(
        shape, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias
    )
    return _record_call(kernel, (input, *args), {})


dropout = _identity_when_off(_dropout.dropout, training_default=True)
dropout1d = _keyed(_dropout.dropout1d, "key", _dropping)
dropout2d = _keyed(_dropout.dropout2d, "key", _dropping)
dropout3d = _keyed(_dropout.dropout3d, "key", _dropping)
alpha_dropout = _identity_when_off(_dropout.alpha_dropout, training_default=False)
feature_alpha_dropout = _identity_when_off(_dropout.feature_alpha_dropout, training_default=False)
scaled_dot_product_attention = _keyed(
    _attention.scaled_dot_product_attention, "dropout_key", _sdpa_drops
)
multi_head_attention_forward = _keyed(
    _attention.multi_head_attention_forward, "dropout_key", _mha_drops
)
gumbel_softmax = _keyed(_activation.gumbel_softmax, "key", _always)
rrelu = _keyed(_activation.rrelu, "key", _rrelu_trains)

from spx.nn.functional import fold as _fold  # noqa: E402

fold = _recorded(_fold.fold)
unfold = _recorded(_fold.unfold)

from spx.nn.functional import grid_sample as _grid_sample  # noqa: E402

affine_grid = _recorded(_grid_sample.affine_grid)
grid_sample = _recorded(_grid_sample.grid_sample)

from spx.nn.functional import channel_shuffle as _channel_shuffle  # noqa: E402

channel_shuffle = _recorded(_channel_shuffle.channel_shuffle)

# (Recorded operations already: their argument checks run on the host first.)
from spx.nn.functional.ctc_loss import ctc_loss as ctc_loss  # noqa: E402
from spx.nn.functional.embedding_bag import embedding_bag as embedding_bag  # noqa: E402
from spx.nn.functional.fractional_pool import (  # noqa: E402
    fractional_max_pool2d as fractional_max_pool2d,
)
from spx.nn.functional.fractional_pool import (  # noqa: E402
    fractional_max_pool2d_with_indices as fractional_max_pool2d_with_indices,
)
from spx.nn.functional.fractional_pool import (  # noqa: E402
    fractional_max_pool3d as fractional_max_pool3d,
)
from spx.nn.functional.fractional_pool import (  # noqa: E402
    fractional_max_pool3d_with_indices as fractional_max_pool3d_with_indices,
)


def _honour_inplace(fn: Callable) -> Callable:
    """``fn`` with torch's ``inplace=True``: the result is written into the input Tensor, which
    is returned (views and aliases see it; autograd checks it as torch checks ``relu_``). The
    array-level implementations cannot write into a jax array (immutable): they return a new
    one, and so does this for an array input."""
    at = list(inspect.signature(fn).parameters).index("inplace") - 1  # among *args

    @functools.wraps(fn)
    def wrapper(input: Any, *args: Any, **kwargs: Any) -> Any:
        out = fn(input, *args, **kwargs)
        inplace = kwargs.get("inplace", args[at] if len(args) > at else False)
        if inplace and isinstance(input, _Tensor) and out is not input:
            return input._assign(out)  # as Tensor.relu_ writes: one in-place rebind
        return out

    return wrapper


celu = _honour_inplace(celu)
dropout = _honour_inplace(dropout)
dropout1d = _honour_inplace(dropout1d)
dropout2d = _honour_inplace(dropout2d)
dropout3d = _honour_inplace(dropout3d)
alpha_dropout = _honour_inplace(alpha_dropout)
feature_alpha_dropout = _honour_inplace(feature_alpha_dropout)
elu = _honour_inplace(elu)
hardsigmoid = _honour_inplace(hardsigmoid)
hardswish = _honour_inplace(hardswish)
hardtanh = _honour_inplace(hardtanh)
leaky_relu = _honour_inplace(leaky_relu)
mish = _honour_inplace(mish)
relu = _honour_inplace(relu)
relu6 = _honour_inplace(relu6)
rrelu = _honour_inplace(rrelu)
selu = _honour_inplace(selu)
silu = _honour_inplace(silu)
threshold = _honour_inplace(threshold)


def _in_place(name: str, fn: Callable) -> Callable:
    """torch's in-place form of an activation (``F.relu_(x)``): writes into and returns ``x``."""

    def inplace(input: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(input, _Tensor):
            raise TypeError(
                f"{name}() writes into its input, which must be a Tensor; got "
                f"{type(input).__name__}. Use {name[:-1]}(x), which returns the result"
            )
        return input.copy_(fn(input, *args, **kwargs))

    inplace.__name__ = inplace.__qualname__ = name
    inplace.__doc__ = f"In-place {name[:-1]}: ``x`` holds the result (mirrors ``F.{name}``)."
    return inplace


celu_ = _in_place("celu_", celu)
elu_ = _in_place("elu_", elu)
hardtanh_ = _in_place("hardtanh_", hardtanh)
leaky_relu_ = _in_place("leaky_relu_", leaky_relu)
relu_ = _in_place("relu_", relu)
rrelu_ = _in_place("rrelu_", rrelu)
selu_ = _in_place("selu_", selu)
threshold_ = _in_place("threshold_", threshold)
