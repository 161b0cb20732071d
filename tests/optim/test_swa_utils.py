"""spx.optim.swa_utils against torch.optim.swa_utils: AveragedModel parameters (SWA, EMA with
avg_fn and multi_avg_fn, use_buffers) after several updates, SWALR's lr sequence and state dict,
update_bn's recomputed BatchNorm statistics."""

import numpy as np
import pytest

import spx
from spx.optim import swa_utils
from tests.optim.lr_scheduler._schedules import check_state_dict_round_trip, compare_schedules

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)`")


def _twin_models(seed=0):
    """A Linear + BatchNorm1d + Linear model in torch and spx with the same weights."""
    torch.manual_seed(seed)
    t_model = torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2)
    )
    s_model = spx.nn.Sequential(spx.nn.Linear(3, 4), spx.nn.BatchNorm1d(4), spx.nn.Linear(4, 2))
    s_model.load_state_dict({k: v.numpy() for k, v in t_model.state_dict().items()})
    return t_model, s_model


def _perturb(t_model, s_model, rng):
    """Same random new weights and one training-mode forward (moves the BN statistics)."""
    with torch.no_grad():
        for tp in t_model.parameters():
            tp.add_(torch.tensor(rng.standard_normal(tuple(tp.shape)).astype(np.float32)))
    s_model.load_state_dict({k: v.numpy() for k, v in t_model.state_dict().items()})
    x = rng.standard_normal((8, 3)).astype(np.float32)
    t_model(torch.tensor(x))
    s_model(spx.tensor(x))


def _assert_same_state(t_module, s_module):
    t_state, s_state = t_module.state_dict(), s_module.state_dict()
    assert list(s_state) == list(t_state)
    for key, value in t_state.items():
        np.testing.assert_allclose(
            np.asarray(s_state[key]), value.numpy(), rtol=1e-5, atol=1e-6, err_msg=key
        )


AVERAGERS = {
    "swa": lambda m: m.AveragedModel,
    "ema-multi": lambda m: (
        lambda model, **kw: m.AveragedModel(model, multi_avg_fn=m.get_ema_multi_avg_fn(0.9), **kw)
    ),
    "ema-single": lambda m: (
        lambda model, **kw: m.AveragedModel(model, avg_fn=m.get_ema_avg_fn(0.8), **kw)
    ),
    "swa-multi": lambda m: (
        lambda model, **kw: m.AveragedModel(model, multi_avg_fn=m.get_swa_multi_avg_fn(), **kw)
    ),
    "swa-single": lambda m: (
        lambda model, **kw: m.AveragedModel(model, avg_fn=m.get_swa_avg_fn(), **kw)
    ),
}


@pytest.mark.parametrize("use_buffers", [False, True])
@pytest.mark.parametrize("kind", list(AVERAGERS))
def test_averaged_model_matches_torch(kind, use_buffers):
    if use_buffers and kind in ("swa-multi",):
        pytest.skip("torch's SWA multi_avg_fn fails on the int64 num_batches_tracked buffer")
    t_model, s_model = _twin_models()
    t_avg = AVERAGERS[kind](torch.optim.swa_utils)(t_model, use_buffers=use_buffers)
    s_avg = AVERAGERS[kind](swa_utils)(s_model, use_buffers=use_buffers)
    rng = np.random.default_rng(0)
    for _ in range(5):
        _perturb(t_model, s_model, rng)
        t_avg.update_parameters(t_model)
        s_avg.update_parameters(s_model)
        _assert_same_state(t_avg.module, s_avg.module)
        assert int(s_avg.n_averaged) == int(t_avg.n_averaged)
    # The averaged model runs its copy.
    x = rng.standard_normal((5, 3)).astype(np.float32)
    t_avg.eval()
    s_avg.eval()
    np.testing.assert_allclose(
        np.asarray(s_avg(spx.tensor(x)).detach()),
        t_avg(torch.tensor(x)).detach().numpy(),
        rtol=1e-5,
        atol=1e-6,
    )


def test_averaged_model_inside_spx_compile():
    t_model, s_model = _twin_models()
    t_avg = torch.optim.swa_utils.AveragedModel(
        t_model, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.9)
    )
    s_avg = swa_utils.AveragedModel(s_model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.9))

    @spx.compile
    def update(avg, model):
        avg.update_parameters(model)

    rng = np.random.default_rng(1)
    for _ in range(4):
        _perturb(t_model, s_model, rng)
        t_avg.update_parameters(t_model)
        update(s_avg, s_model)
        _assert_same_state(t_avg.module, s_avg.module)
    assert int(s_avg.n_averaged) == 4


def test_avg_fn_and_multi_avg_fn_together_raise():
    _, s_model = _twin_models()
    with pytest.raises(ValueError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(
            s_model,
            avg_fn=swa_utils.get_swa_avg_fn(),
            multi_avg_fn=swa_utils.get_swa_multi_avg_fn(),
        )


@pytest.mark.parametrize("factory", ["get_ema_multi_avg_fn", "get_ema_avg_fn"])
def test_invalid_decay_raises_like_torch(factory):
    with pytest.raises(ValueError, match=r"Invalid decay value 1\.5"):
        getattr(torch.optim.swa_utils, factory)(1.5)
    with pytest.raises(ValueError, match=r"Invalid decay value 1\.5"):
        getattr(swa_utils, factory)(1.5)


def test_update_bn_matches_torch():
    t_model, s_model = _twin_models()
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal((6, 3)).astype(np.float32) * (i + 1) for i in range(4)]
    t_model.eval()
    s_model.eval()
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in batches], t_model)
    swa_utils.update_bn([(spx.tensor(b), 0) for b in batches], s_model)
    _assert_same_state(t_model, s_model)
    assert not s_model.training  # the mode is restored
    assert s_model[1].momentum == t_model[1].momentum == 0.1


def test_update_bn_on_an_averaged_model_matches_torch():
    t_model, s_model = _twin_models()
    t_avg = torch.optim.swa_utils.AveragedModel(t_model)
    s_avg = swa_utils.AveragedModel(s_model)
    rng = np.random.default_rng(3)
    for _ in range(3):
        _perturb(t_model, s_model, rng)
        t_avg.update_parameters(t_model)
        s_avg.update_parameters(s_model)
    batches = [rng.standard_normal((6, 3)).astype(np.float32) for _ in range(3)]
    torch.optim.swa_utils.update_bn([torch.tensor(b) for b in batches], t_avg)
    swa_utils.update_bn([spx.tensor(b) for b in batches], s_avg)
    _assert_same_state(t_avg, s_avg)


SWALRS = {
    "cos": lambda opt, L: _swalr(opt, L)(opt, swa_lr=0.05, anneal_epochs=5),
    "linear-groups": lambda opt, L: _swalr(opt, L)(
        opt, swa_lr=[0.05, 0.01], anneal_epochs=7, anneal_strategy="linear"
    ),
    "no-annealing": lambda opt, L: _swalr(opt, L)(opt, swa_lr=0.02, anneal_epochs=0),
}


def _swalr(opt, L):
    return torch.optim.swa_utils.SWALR if L is torch.optim.lr_scheduler else swa_utils.SWALR


@pytest.mark.parametrize("schedule", list(SWALRS))
def test_swalr_sequence_matches_torch(schedule):
    compare_schedules(SWALRS[schedule], steps=30)


@pytest.mark.parametrize("schedule", list(SWALRS))
def test_swalr_state_dict_round_trip(schedule):
    check_state_dict_round_trip(SWALRS[schedule])


def test_swalr_validation():
    opt = spx.optim.SGD([spx.nn.Parameter(spx.zeros(2))], lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        swa_utils.SWALR(opt, swa_lr=0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=-1)
