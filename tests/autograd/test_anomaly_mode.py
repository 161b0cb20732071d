"""Anomaly detection against torch's: a NaN gradient raises, finite ones do not, the mode's
switches and scopes."""

import warnings

import pytest

import spx

torch = pytest.importorskip("torch")


def _nan_backward(lib):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    (x.sqrt() / x.sqrt()).sum().backward()  # 0/0 in the gradient at x = 0
    return x


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Anomaly Detection has been enabled")
        yield


@pytest.mark.parametrize("lib", [torch, spx], ids=["torch", "spx"])
def test_a_nan_gradient_raises_only_with_the_mode_on(lib):
    assert not lib.is_anomaly_enabled()
    _nan_backward(lib)  # off: the NaN is kept, no error
    with pytest.raises(RuntimeError, match=r"nan|NaN"), lib.autograd.detect_anomaly():
        _nan_backward(lib)
    assert not lib.is_anomaly_enabled()  # restored
    with lib.autograd.detect_anomaly(check_nan=False):
        assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        _nan_backward(lib)
    with lib.autograd.detect_anomaly():
        y = lib.tensor([2.0], requires_grad=True)
        (y * y).sum().backward()  # finite: fine
        assert y.grad.tolist() == [4.0]


@pytest.mark.parametrize("lib", [torch, spx], ids=["torch", "spx"])
def test_set_detect_anomaly_switches_now_or_for_a_block(lib):
    lib.autograd.set_detect_anomaly(True)
    try:
        assert lib.is_anomaly_enabled()
        with pytest.raises(RuntimeError):
            _nan_backward(lib)
    finally:
        lib.autograd.set_detect_anomaly(False)
    assert not lib.is_anomaly_enabled()
    with lib.autograd.set_detect_anomaly(True):
        assert lib.is_anomaly_enabled()
    assert not lib.is_anomaly_enabled()
