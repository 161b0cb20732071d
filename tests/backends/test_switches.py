"""spx.backends: torch.backends' switches, read and set as in torch (torch is the reference)."""

import pytest

import spx

torch = pytest.importorskip("torch")


def test_allow_tf32_is_the_matmul_precision_switch_as_in_torch():
    assert spx.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32 is False
    try:
        for allow in (True, False):
            spx.backends.cuda.matmul.allow_tf32 = allow
            torch.backends.cuda.matmul.allow_tf32 = allow
            assert spx.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
            assert spx.backends.cuda.matmul.allow_tf32 is allow
    finally:
        spx.set_float32_matmul_precision("highest")
        torch.set_float32_matmul_precision("highest")
    assert spx.get_float32_matmul_precision() == "highest"


def test_matmul_switch_rejects_typos_and_non_bools():
    with pytest.raises(AttributeError, match="allow_tf32"):
        spx.backends.cuda.matmul.alow_tf32 = True
    with pytest.raises(TypeError, match="bool"):
        spx.backends.cuda.matmul.allow_tf32 = "yes"


def test_cudnn_flags_read_back_with_torchs_defaults():
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(spx.backends.cudnn, name) == getattr(torch.backends.cudnn, name), name
    old = spx.backends.cudnn.benchmark
    try:
        spx.backends.cudnn.benchmark = True
        assert spx.backends.cudnn.benchmark is True
    finally:
        spx.backends.cudnn.benchmark = old
    assert spx.backends.cudnn.is_available() == spx.cuda.is_available()


def test_mps_is_never_available():
    assert spx.backends.mps.is_available() is False
    assert spx.backends.mps.is_built() is False
