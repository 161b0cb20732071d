"""spx.special exposes every public function of torch.special."""

import pytest

import spx

torch = pytest.importorskip("torch")

# Not functions: torch.special re-exports the torch module, Tensor and two docstring helpers.
_NOT_FUNCTIONS = {"torch", "Tensor", "common_args", "multi_dim_common"}


def test_every_torch_special_function_exists():
    names = [n for n in dir(torch.special) if not n.startswith("_") and n not in _NOT_FUNCTIONS]
    missing = [n for n in names if not callable(getattr(spx.special, n, None))]
    assert not missing, f"spx.special lacks {missing}"


def test_special_is_an_attribute_of_spx():
    import spx.special as special

    assert spx.special is special
    assert spx.special.psi is spx.special.digamma
