"""float32 matmul precision: torch's default ("highest", full float32) unless the user chose.

On a GPU, JAX's own default runs float32 dots as TF32: a 512 x 512 product was 3e-4 off in
relative terms on an H100 (torch: 5e-7), so a ported script trained to other numbers. The
numbers are checked on GPU by tools/gpu_check.sh; here, the setting that decides them."""

import os
import subprocess
import sys

import jax
import pytest

import spx

torch = pytest.importorskip("torch")


def test_import_spx_selects_torchs_default():
    assert torch.get_float32_matmul_precision() == "highest"
    assert spx.get_float32_matmul_precision() == "highest"
    assert jax.config.jax_default_matmul_precision == "float32"


@pytest.mark.parametrize(
    ("torch_name", "jax_name"),
    [("high", "tensorfloat32"), ("medium", "bfloat16"), ("highest", "float32")],
)
def test_set_and_get_use_torchs_names(torch_name, jax_name):
    try:
        spx.set_float32_matmul_precision(torch_name)
        assert jax.config.jax_default_matmul_precision == jax_name
        assert spx.get_float32_matmul_precision() == torch_name
    finally:
        spx.set_float32_matmul_precision("highest")


def test_a_wrong_name_is_refused():
    with pytest.raises(ValueError, match=r"set_float32_matmul_precision\('hihgest'\): expected"):
        spx.set_float32_matmul_precision("hihgest")
    assert spx.get_float32_matmul_precision() == "highest"


def test_the_users_own_jax_setting_is_kept():
    code = "import jax, spx; print(jax.config.jax_default_matmul_precision, "
    code += "spx.get_float32_matmul_precision())"
    env = {**os.environ, "JAX_DEFAULT_MATMUL_PRECISION": "tensorfloat32", "JAX_PLATFORMS": "cpu"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["tensorfloat32", "high"]
