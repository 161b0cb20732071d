"""float16/bfloat16 reductions accumulate in float32, as torch's kernels do (its "opmath").

The reference is torch on the same half-precision values (for log_softmax, torch computing them
in float32): each case overflows float16 (65504) or loses a softmax's mass if summed in the half
type itself.
"""

import numpy as np
import pytest
import torch

import spx

RNG = np.random.default_rng(0)
ROWS = (RNG.standard_normal((2, 1024)) * 10).astype(np.float32)  # row norms ~320: squares ~1e5
LOGITS = (RNG.standard_normal((2, 100000)) * 0.02).astype(np.float32)  # exps sum to ~1e5
SIGNED = np.array([200.0, -200.0] * 4, np.float32)  # variance 45714, squares sum to 320000

CASES = [
    ("norm", lambda m, x: x.norm(dim=-1), ROWS),
    ("linalg.vector_norm", lambda m, x: m.linalg.vector_norm(x, dim=-1), ROWS),
    ("normalize", lambda m, x: m.nn.functional.normalize(x, dim=-1).float().norm(dim=-1), ROWS),
    ("cosine_similarity", lambda m, x: m.nn.functional.cosine_similarity(x, x * 0.5), ROWS),
    ("softmax", lambda m, x: x.softmax(-1).float().sum(-1), LOGITS),
    ("F.softmax", lambda m, x: m.nn.functional.softmax(x, -1).float().sum(-1), LOGITS),
    # torch's CPU kernel gives -inf here (its CUDA kernel accumulates in float): the reference
    # is torch's float32 result in the half type.
    ("log_softmax", lambda m, x: x.log_softmax(-1)[:, :3], LOGITS, "float32"),
    ("std", lambda m, x: x.std(), SIGNED),
    ("var", lambda m, x: x.var(), SIGNED),
    ("avg_pool2d", lambda m, x: m.nn.functional.avg_pool2d(x.reshape(1, 1, 32, 64), 32), ROWS),
]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_half_reductions_match_torch(case, dtype):
    _, fn, data, *reference_dtype = case
    half = torch.tensor(data).to(getattr(torch, dtype))
    if reference_dtype:
        expected = fn(torch, half.to(getattr(torch, reference_dtype[0]))).to(half.dtype)
    else:
        expected = fn(torch, half)
    got = fn(spx, spx.tensor(data).to(getattr(spx, dtype)))
    assert str(got.dtype) == str(expected.dtype).removeprefix("torch.")
    want = expected.float().numpy()
    assert np.isfinite(want).all()  # the case is meaningful: torch's result is finite
    np.testing.assert_allclose(got.float().numpy(), want, rtol=2e-2, atol=2e-2)
