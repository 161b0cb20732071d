"""torch's top-level in-place functions (``torch.relu_(x)``, ``torch.clamp_(x, 0, 1)``): each is
the Tensor method of the same name, called on its first argument.

Example:
    >>> import spx
    >>> x = spx.tensor([-1.0, 2.0])
    >>> _ = spx.relu_(x)
    >>> x.tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_",
    "clip_", "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_",
    "fill_", "fix_", "floor_", "frac_", "gcd_", "i0_", "index_put_", "lcm_", "ldexp_", "log1p_",
    "log2_", "log10_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_",
    "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_",
    "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_",
]  # fmt: skip


def _method(name: str) -> Callable[..., Any]:
    def call(input: Any, *args: Any, **kwargs: Any) -> Any:
        method = getattr(input, name, None)
        if method is None:
            raise TypeError(
                f"{name}(): argument 'input' must be Tensor, not {type(input).__name__} (an "
                f"in-place function writes into a Tensor: spx.tensor(...) first)"
            )
        return method(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``input.{name}(...)``: in place, returns ``input`` (mirrors ``torch.{name}``)."
    return call


abs_ = _method("abs_")
acos_ = _method("acos_")
acosh_ = _method("acosh_")
addmv_ = _method("addmv_")
arccos_ = _method("arccos_")
arccosh_ = _method("arccosh_")
arcsin_ = _method("arcsin_")
arcsinh_ = _method("arcsinh_")
arctan_ = _method("arctan_")
arctanh_ = _method("arctanh_")
asin_ = _method("asin_")
asinh_ = _method("asinh_")
atan_ = _method("atan_")
atanh_ = _method("atanh_")
ceil_ = _method("ceil_")
clamp_ = _method("clamp_")
clamp_max_ = _method("clamp_max_")
clamp_min_ = _method("clamp_min_")
clip_ = _method("clip_")
cos_ = _method("cos_")
cosh_ = _method("cosh_")
deg2rad_ = _method("deg2rad_")
detach_ = _method("detach_")
erf_ = _method("erf_")
erfc_ = _method("erfc_")
exp2_ = _method("exp2_")
exp_ = _method("exp_")
expm1_ = _method("expm1_")
fill_ = _method("fill_")
fix_ = _method("fix_")
floor_ = _method("floor_")
frac_ = _method("frac_")
gcd_ = _method("gcd_")
i0_ = _method("i0_")
index_put_ = _method("index_put_")
lcm_ = _method("lcm_")
ldexp_ = _method("ldexp_")
log10_ = _method("log10_")
log1p_ = _method("log1p_")
log2_ = _method("log2_")
log_ = _method("log_")
logit_ = _method("logit_")
nan_to_num_ = _method("nan_to_num_")
neg_ = _method("neg_")
negative_ = _method("negative_")
rad2deg_ = _method("rad2deg_")
reciprocal_ = _method("reciprocal_")
relu_ = _method("relu_")
round_ = _method("round_")
rsqrt_ = _method("rsqrt_")
sigmoid_ = _method("sigmoid_")
sin_ = _method("sin_")
sinc_ = _method("sinc_")
sinh_ = _method("sinh_")
sqrt_ = _method("sqrt_")
square_ = _method("square_")
tan_ = _method("tan_")
tanh_ = _method("tanh_")
trunc_ = _method("trunc_")
xlogy_ = _method("xlogy_")
zero_ = _method("zero_")
