"""spx's top-level in-place functions (``spx.relu_(x)``, ``spx.clamp_(x, 0, 1)``) against
torch's: each writes into its input and returns it."""

import numpy as np
import pytest

import spx
from spx.ops import inplace

torch = pytest.importorskip("torch")

ARGS = {
    "clamp_": (-0.5, 0.5), "clip_": (-0.5, 0.5), "clamp_min_": (0.1,), "clamp_max_": (0.1,),
    "fill_": (2.0,), "xlogy_": (2.0,), "ldexp_": (1.0,), "logit_": (0.1,),
    "nan_to_num_": (0.0,),
}  # fmt: skip
DOMAIN = {"acosh_": 2.0, "arccosh_": 2.0, "log_": 0.5, "log2_": 0.5, "log10_": 0.5}
SKIP = {"addmv_", "detach_", "gcd_", "lcm_", "index_put_"}  # other arguments; tested below


@pytest.mark.parametrize("name", [n for n in inplace.__all__ if n not in SKIP])
def test_each_writes_into_its_input_as_torchs(name):
    base = np.array([0.3, -0.2, 0.7], np.float32) + DOMAIN.get(name, 0.0)
    if name in ("acos_", "arccos_", "asin_", "arcsin_", "atanh_", "arctanh_"):
        base = np.clip(base, -0.9, 0.9)
    results = []
    for lib in (spx, torch):
        x = lib.tensor(base)
        args = [lib.tensor(a) if name in ("xlogy_", "ldexp_") else a for a in ARGS.get(name, ())]
        out = getattr(lib, name)(x, *args)
        assert out is x
        results.append(np.asarray(x.tolist()))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-6)


def test_the_others_and_a_non_tensor():
    for lib in (spx, torch):
        x = lib.tensor([6, 4])
        lib.gcd_(x, lib.tensor([4, 6]))
        assert x.tolist() == [2, 2]
        y = lib.zeros(3)
        lib.index_put_(y, (lib.tensor([0, 2]),), lib.tensor([1.0, 2.0]))
        assert y.tolist() == [1.0, 0.0, 2.0]
        assert lib.row_stack([lib.ones(2), lib.zeros(2)]).tolist() == [[1.0, 1.0], [0.0, 0.0]]
    with pytest.raises(TypeError, match="must be Tensor"):
        spx.relu_([1.0])
