"""Shared checks of the parametrization tests: state dicts and SGD training against torch."""

from __future__ import annotations

import numpy as np

import spx

RTOL, ATOL = 1e-5, 1e-5


def host(t) -> np.ndarray:
    """A torch or spx tensor's value as numpy."""
    if isinstance(t, spx.Tensor):
        return t.numpy(force=True)
    if isinstance(t, np.ndarray):
        return t
    return t.detach().numpy()


def load_from_torch(t, s, strict: bool = True):
    """Load torch module ``t``'s state dict (numpy values, torch's keys) into spx module ``s``."""
    return s.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()}, strict)


def assert_state_matches(t, s, rtol: float = RTOL, atol: float = ATOL, what: str = "") -> None:
    """Same state dict keys, in the same order, and values (parameters and buffers)."""
    tsd, ssd = t.state_dict(), s.state_dict()
    assert list(ssd) == list(tsd)
    for key, value in tsd.items():
        np.testing.assert_allclose(
            host(ssd[key]), host(value), rtol=rtol, atol=atol, err_msg=f"{what} {key}"
        )


def _spx_step(model, opt, x):
    opt.zero_grad()
    loss = (model(x) ** 2).mean()
    loss.backward()
    opt.step()
    return loss


_COMPILED_STEP = spx.compile(_spx_step)


def train_and_compare(
    t,
    s,
    x_shape: tuple[int, ...],
    steps: int = 3,
    compiled: bool = False,
    lr: float = 0.1,
    rtol: float = RTOL,
    atol: float = ATOL,
) -> None:
    """``steps`` SGD steps of ``mean(model(x) ** 2)`` on both modules, compared step by step:
    the loss, every parameter's gradient, then the whole state dict (buffers included)."""
    import torch  # only the test files that importorskip torch call this

    names = [n for n, _ in t.named_parameters()]
    assert [n for n, _ in s.named_parameters()] == names
    topt = torch.optim.SGD(t.parameters(), lr=lr)
    spx_opt = spx.optim.SGD(s.parameters(), lr=lr)
    step = _COMPILED_STEP if compiled else _spx_step
    rng = np.random.default_rng(0)
    for i in range(steps):
        x = rng.standard_normal(x_shape).astype(np.float32)
        topt.zero_grad()
        tloss = (t(torch.from_numpy(x)) ** 2).mean()
        tloss.backward()
        topt.step()
        sloss = step(s, spx_opt, spx.from_numpy(x))
        np.testing.assert_allclose(sloss.item(), tloss.item(), rtol=rtol, err_msg=f"loss {i}")
        sparams = dict(s.named_parameters())
        for name, p in t.named_parameters():
            np.testing.assert_allclose(
                host(sparams[name].grad), host(p.grad), rtol=rtol, atol=atol,
                err_msg=f"grad of {name}, step {i}",
            )  # fmt: skip
        assert_state_matches(t, s, rtol, atol, what=f"step {i}")
