"""spx.autocast against torch.autocast on CPU (bfloat16): dtypes, values and float32 grads."""

import numpy as np
import pytest

import spx
from spx import nn
from tests._torch_utils import copy_torch_weights

torch = pytest.importorskip("torch")

RTOL, ATOL = 2e-2, 2e-2  # bfloat16 keeps 8 bits of mantissa


class _Net:
    """The same small network in both libraries: linear, GELU, LayerNorm, attention, conv."""

    def __init__(self, lib):
        torch.manual_seed(0)
        m = lib.nn
        self.fc1, self.fc2 = m.Linear(8, 16), m.Linear(16, 5)
        self.norm = m.LayerNorm(16)
        self.attn = m.MultiheadAttention(16, 2, batch_first=True)
        self.conv = m.Conv2d(1, 2, 3)
        self.modules = [self.fc1, self.fc2, self.norm, self.attn, self.conv]

    def __call__(self, lib, x, img, y):
        F = lib.nn.functional
        h = F.gelu(self.fc1(x))  # (B, T, 16)
        outs = {"linear": h}
        h = self.norm(h)
        outs["layer_norm"] = h
        a, _ = self.attn(h, h, h, need_weights=False)
        outs["attention"] = a
        outs["matmul"] = a @ a.transpose(1, 2)
        outs["bmm"] = lib.bmm(a, a.transpose(1, 2))
        outs["softmax"] = outs["matmul"].softmax(-1)
        outs["conv2d"] = self.conv(img)
        logits = self.fc2(a)
        outs["logits"] = logits
        outs["cross_entropy"] = F.cross_entropy(logits.reshape(-1, 5), y.reshape(-1))
        outs["mse"] = F.mse_loss(logits, lib.zeros_like(logits).float())
        outs["sum"] = logits.sum()
        return outs


def _run(lib, net, device_type):
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((2, 4, 8)).astype(np.float32))
    img = lib.tensor(rng.standard_normal((1, 1, 6, 6)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 5, (2, 4)))
    with lib.autocast(device_type, dtype=lib.bfloat16):
        outs = net(lib, x, img, y)
    loss = outs["cross_entropy"] + outs["mse"]
    loss.backward()
    return outs


def test_cpu_autocast_matches_torch_dtypes_values_and_grads():
    t_net, s_net = _Net(torch), _Net(spx)
    for t_mod, s_mod in zip(t_net.modules, s_net.modules, strict=True):
        copy_torch_weights(t_mod, s_mod)
    t_out, s_out = _run(torch, t_net, "cpu"), _run(spx, s_net, "cpu")
    for name, t in t_out.items():
        s = s_out[name]
        assert str(s.dtype) == str(t.dtype).removeprefix("torch."), name
        np.testing.assert_allclose(
            s.detach().float().numpy(), t.detach().float().numpy(), RTOL, ATOL, err_msg=name
        )
    for t_mod, s_mod in zip(t_net.modules, s_net.modules, strict=True):
        for (name, tp), sp in zip(t_mod.named_parameters(), s_mod.parameters(), strict=True):
            if tp.grad is None:  # the conv is not in the loss
                assert sp.grad is None, name
                continue
            assert sp.grad.dtype == spx.float32, name  # parameters stay float32, so do grads
            np.testing.assert_allclose(sp.grad.numpy(), tp.grad.numpy(), 5e-2, 5e-2, err_msg=name)


def test_cuda_policy_runs_the_float32_list_in_float32(monkeypatch):
    """torch's CUDA lists (autocast_mode.cpp): products in float16; softmax, norms, exp/log,
    sums and losses in float32; other ops in their inputs' dtype. (Without a GPU the region
    is disabled, as torch's; the policy is checked on the CPU by pretending there is one.)"""
    monkeypatch.setattr(spx.cuda, "is_available", lambda: True)
    lin, norm = nn.Linear(4, 4), nn.LayerNorm(4)
    x = spx.ones(2, 4)
    with spx.autocast("cuda"):
        h = lin(x)
        got = {
            "linear": h.dtype, "matmul": (h @ h.T).dtype,
            "einsum": spx.einsum("ij,kj->ik", h, h).dtype,
            "softmax": h.softmax(-1).dtype, "log_softmax": h.log_softmax(-1).dtype,
            "layer_norm": norm(h).dtype, "exp": h.exp().dtype, "sum": h.sum().dtype,
            "relu": spx.relu(h).dtype, "add": (h + 1).dtype,
        }  # fmt: skip
        img = h.reshape(1, 2, 2, 2)
        for mode in ("bilinear", "bicubic"):
            for aa in (False, True):
                resized = nn.functional.interpolate(img, size=3, mode=mode, antialias=aa)
                got[f"{mode}{'_aa' * aa}"] = resized.dtype
    f16, f32 = spx.float16, spx.float32
    assert got == {
        "linear": f16, "matmul": f16, "einsum": f16, "softmax": f32, "log_softmax": f32,
        "layer_norm": f32, "exp": f32, "sum": f32, "relu": f16, "add": f16,
        "bilinear": f32, "bilinear_aa": f32, "bicubic": f32, "bicubic_aa": f32,
    }  # fmt: skip


def test_regions_nest_disable_and_decorate_per_thread():
    lin = nn.Linear(3, 3)
    x = spx.ones(1, 3)
    assert not spx.is_autocast_enabled("cpu")
    with spx.autocast("cpu"):
        assert spx.is_autocast_enabled("cpu") and spx.get_autocast_dtype("cpu") == spx.bfloat16
        with spx.autocast("cpu", enabled=False):
            assert lin(x).dtype == spx.float32
        assert lin(x).dtype == spx.bfloat16
    assert lin(x).dtype == spx.float32

    @spx.autocast("cpu", dtype=spx.float16)
    def forward(x):
        return lin(x)

    assert forward(x).dtype == spx.float16
    with spx.autocast("cpu"):  # torch keeps one state per device type
        with spx.autocast("cuda", enabled=False):
            assert spx.is_autocast_enabled("cpu") and not spx.is_autocast_enabled("cuda")
            assert lin(x).dtype == spx.bfloat16
        with spx.autocast("cpu", enabled=False):
            assert lin(x).dtype == spx.float32
    if not spx.cuda.is_available():  # as torch: "cuda" regions need a GPU, else a warning
        with pytest.warns(UserWarning, match="no GPU"), spx.cuda.amp.autocast():
            assert not spx.is_autocast_enabled() and lin(x).dtype == spx.float32


def test_einsum_and_tensordot_come_out_low_on_cpu_as_in_torch():
    a, b = np.ones((2, 3, 4), np.float32), np.ones((2, 4, 5), np.float32)
    for lib in (torch, spx):
        x, y = lib.tensor(a), lib.tensor(b)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            assert lib.einsum("bij,bjk->bik", x, y).dtype == lib.bfloat16, lib.__name__
            assert lib.tensordot(x, y, ([2], [1])).dtype == lib.bfloat16, lib.__name__


def test_a_compiled_function_follows_the_region_it_is_called_in():
    lin = nn.Linear(3, 2)
    f = spx.compile(lambda m, x: m(x))
    x = spx.ones(1, 3)
    assert f(lin, x).dtype == spx.float32
    with spx.autocast("cpu"):
        assert f(lin, x).dtype == spx.bfloat16
    assert f(lin, x).dtype == spx.float32  # not the program traced inside the region


def test_unsupported_device_type_and_dtype():
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        spx.autocast("tpu")
    with pytest.warns(UserWarning, match="Disabling autocast"):
        region = spx.autocast("cpu", dtype=spx.float32)
    with region:
        assert nn.Linear(2, 2)(spx.ones(1, 2)).dtype == spx.float32


def test_a_compiled_step_under_autocast_matches_the_eager_one():
    spx.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))
    ref = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))
    ref.load_state_dict(model.state_dict())
    x, y = spx.randn(6, 4), spx.randint(0, 2, (6,))

    def loss_of(m):
        with spx.autocast("cpu"):
            return spx.nn.functional.cross_entropy(m(x), y)

    compiled = spx.compile(lambda m: (loss_of(m).backward(), None)[1])
    compiled(model)
    loss_of(ref).backward()
    # Equal on CPU; on a GPU the compiled step fuses the bfloat16 ops (intermediates rounded
    # differently than one op at a time): a few bfloat16 ulps apart there (H200, jax 0.11.2).
    tol = (3e-2, 1e-4) if spx.cuda.is_available() else (1e-5, 1e-6)
    for a, b in zip(model.parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), *tol)


OPS_ON_TORCHS_CPU_LISTS = {
    # torch's float32 list: a bfloat16 input is widened.
    "multi_margin_loss": lambda L, h: L.nn.functional.multi_margin_loss(h, L.tensor([1, 0])),
    "hinge_embedding_loss": lambda L, h: L.nn.functional.hinge_embedding_loss(h, h * 0 + 1),
    "poisson_nll_loss": lambda L, h: L.nn.functional.poisson_nll_loss(h, h * 0 + 1),
    "cosine_embedding_loss": lambda L, h: L.nn.functional.cosine_embedding_loss(
        h, h, L.ones(2, dtype=L.bfloat16)
    ),
    "triplet_margin_loss": lambda L, h: L.nn.functional.triplet_margin_loss(h, h * 2, h * 3),
    "quantile": lambda L, h: L.quantile(h.flatten(), 0.3),
    "avg_pool3d": lambda L, h: L.nn.functional.avg_pool3d(h.reshape(1, 1, 2, 2, 2), 2),
    "max_pool3d": lambda L, h: L.nn.functional.max_pool3d(h.reshape(1, 1, 2, 2, 2), 2),
    "adaptive_max_pool3d": lambda L, h: L.nn.functional.adaptive_max_pool3d(
        h.reshape(1, 1, 2, 2, 2), 1
    ),
    "fractional_max_pool2d": lambda L, h: L.nn.functional.fractional_max_pool2d(
        h.reshape(1, 2, 4), 2, output_size=1
    ),
    "grid_sample": lambda L, h: L.nn.functional.grid_sample(
        h.reshape(1, 1, 2, 4), L.zeros(1, 1, 1, 2, dtype=L.bfloat16), align_corners=False
    ),
    # Off both lists on the CPU: as the inputs are (float32 here).
    "addmv": lambda L, h: L.addmv(L.zeros(3), L.ones(3, 3), L.ones(3)),
    # torch's CPU multi_dot / chain_matmul are mm calls: low.
    "multi_dot": lambda L, h: L.linalg.multi_dot([L.ones(2, 3), L.ones(3, 2), L.ones(2, 2)]),
}


@pytest.mark.parametrize("op", list(OPS_ON_TORCHS_CPU_LISTS))
def test_more_ops_follow_torchs_cpu_lists(op):
    dtypes = []
    for lib in (torch, spx):
        with lib.autocast("cpu"):
            h = lib.ones(2, 4, dtype=lib.bfloat16) * 0.3
            dtypes.append(str(OPS_ON_TORCHS_CPU_LISTS[op](lib, h).dtype).replace("torch.", ""))
    assert dtypes[1] == dtypes[0]
