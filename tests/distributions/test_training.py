"""Training through distributions: the same loops in torch and spx give the same parameters,
eagerly and under spx.compile."""

import numpy as np
import pytest

import spx
import spx.distributions as D
from spx import nn
from tests.distributions._parity import assert_close, host

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(7)
DATA = (_rng.standard_normal((64, 2)) * np.array([2.0, 0.5]) + np.array([1.0, -3.0])).astype(
    np.float32
)
STATES = _rng.standard_normal((32, 4)).astype(np.float32)
ACTIONS = _rng.integers(0, 3, 32)
ADVANTAGES = _rng.standard_normal(32).astype(np.float32)


# -- maximum likelihood for a Normal's loc and log-scale ---------------------------------------
def _torch_normal_fit(steps):
    loc = torch.nn.Parameter(torch.zeros(2))
    log_scale = torch.nn.Parameter(torch.zeros(2))
    opt = torch.optim.Adam([loc, log_scale], lr=0.1)
    x = torch.tensor(DATA)
    for _ in range(steps):
        opt.zero_grad()
        loss = -torch.distributions.Normal(loc, log_scale.exp()).log_prob(x).mean()
        loss.backward()
        opt.step()
    return loss.item(), loc, log_scale


class _Gaussian(nn.Module):
    def __init__(self):
        super().__init__()
        self.loc = nn.Parameter(spx.zeros(2))
        self.log_scale = nn.Parameter(spx.zeros(2))


def _normal_step(model, opt, x):
    # torch's loop body with torch renamed to spx.
    opt.zero_grad()
    loss = -D.Normal(model.loc, model.log_scale.exp()).log_prob(x).mean()
    loss.backward()
    opt.step()
    return loss


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_normal_maximum_likelihood_matches_torch(compiled):
    t_loss, t_loc, t_log_scale = _torch_normal_fit(20)
    model = _Gaussian()
    opt = spx.optim.Adam(model.parameters(), lr=0.1)
    step = spx.compile(_normal_step) if compiled else _normal_step
    x = spx.tensor(DATA)
    for _ in range(20):
        loss = step(model, opt, x)
    assert_close(loss, t_loss, rtol=1e-5)
    assert_close(model.loc, t_loc, rtol=1e-5, atol=1e-6)
    assert_close(model.log_scale, t_log_scale, rtol=1e-5, atol=1e-6)


# -- a policy-gradient loss with a Categorical policy ------------------------------------------
def _pg_loss(lib_D, logits, actions, advantages):
    dist = lib_D.Categorical(logits=logits)
    return -(dist.log_prob(actions) * advantages).mean() - 0.01 * dist.entropy().mean()


def _pg_step(policy, opt, states, actions, advantages):
    opt.zero_grad()
    loss = _pg_loss(D, policy(states), actions, advantages)
    loss.backward()
    opt.step()
    return loss


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_policy_gradient_matches_torch(compiled):
    torch.manual_seed(0)
    t_policy = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    s_policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))
    s_policy.load_state_dict({k: v.detach().numpy() for k, v in t_policy.state_dict().items()})
    t_opt = torch.optim.Adam(t_policy.parameters(), lr=1e-2)
    s_opt = spx.optim.Adam(s_policy.parameters(), lr=1e-2)
    step = spx.compile(_pg_step) if compiled else _pg_step
    ts, ta, tadv = torch.tensor(STATES), torch.tensor(ACTIONS), torch.tensor(ADVANTAGES)
    ss, sa, sadv = spx.tensor(STATES), spx.tensor(ACTIONS), spx.tensor(ADVANTAGES)
    for i in range(20):
        t_opt.zero_grad()
        t_loss = _pg_loss(torch.distributions, t_policy(ts), ta, tadv)
        t_loss.backward()
        t_opt.step()
        s_loss = step(s_policy, s_opt, ss, sa, sadv)
        assert_close(s_loss, t_loss, rtol=1e-5, atol=1e-6, what=f"loss at step {i}")
    for (name, tp), sp in zip(t_policy.named_parameters(), s_policy.parameters(), strict=True):
        assert_close(sp, tp, rtol=1e-5, atol=1e-6, what=name)


# -- sampling inside a compiled step -------------------------------------------------------------
class _Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.loc = nn.Parameter(spx.zeros(3))
        self.log_scale = nn.Parameter(spx.zeros(3))


def _elbo_step(model, opt, target):
    # A VAE-style loss: a reparameterized draw, a KL term, one Adam step.
    opt.zero_grad()
    q = D.Normal(model.loc, model.log_scale.exp())
    z = q.rsample((16,))
    recon = ((z - target) ** 2).sum(-1).mean()
    kl = D.kl_divergence(q, D.Normal(spx.zeros(3), spx.ones(3))).sum()
    loss = recon + 0.1 * kl
    loss.backward()
    opt.step()
    return loss, z


def test_rsample_and_kl_train_inside_spx_compile_with_fresh_reproducible_noise():
    target = spx.tensor([1.0, -2.0, 0.5])
    step = spx.compile(_elbo_step)

    def run():
        spx.manual_seed(0)
        model = _Encoder()
        opt = spx.optim.Adam(model.parameters(), lr=0.05)
        out = [step(model, opt, target) for _ in range(60)]
        return [host(loss) for loss, _ in out], [host(z) for _, z in out], model

    losses, draws, model = run()
    assert not np.allclose(draws[0], draws[1])  # fresh noise every call
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])
    np.testing.assert_allclose(host(model.loc), host(target) / 1.05, atol=0.15)
    losses2, draws2, _ = run()  # the same seed replays the same run
    np.testing.assert_array_equal(draws2[5], draws[5])
    np.testing.assert_array_equal(losses2, losses)


def test_gamma_and_categorical_draws_inside_spx_compile():
    class Params(nn.Module):
        def __init__(self):
            super().__init__()
            self.log_conc = nn.Parameter(spx.tensor([0.0, 1.0]))

    @spx.compile
    def draw(model):
        g = D.Gamma(model.log_conc.exp(), 1.0).rsample((2000,))
        c = D.Categorical(logits=model.log_conc).sample((2000,))
        return g, c

    m = Params()
    spx.manual_seed(0)
    g, c = draw(m)
    g2, _ = draw(m)
    assert not np.allclose(host(g), host(g2))
    conc = np.exp([0.0, 1.0])
    np.testing.assert_allclose(host(g).mean(0), conc, rtol=0.1)
    p1 = 1 / (1 + np.exp(-1.0))
    assert abs(host(c).mean() - p1) < 0.05
