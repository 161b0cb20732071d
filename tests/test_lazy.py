"""spx and spx.distributed load their names on first use (spx._lazy): checked in fresh processes."""

from __future__ import annotations

import subprocess
import sys

import pytest

import spx


def _fresh(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_launcher_imports_without_jax():
    # spx-run never computes: before, importing it imported jax and all of spx (~1 s a launch).
    code = "import sys, spx.distributed.run, spx.distributed.elastic; print('jax' in sys.modules)"
    assert _fresh(code) == "False"


def test_submodule_first_then_names_are_the_namespace_ones():
    # spx.compile and spx.device are a function and a callable in torch's namespace; importing a
    # submodule first must not leave a module under those names.
    code = (
        "import types, spx.nn, spx.optim, spx\n"
        "print(isinstance(spx.compile, types.ModuleType), isinstance(spx.device, types.ModuleType),"
        " callable(spx.compile), spx.device('cpu').type)"
    )
    assert _fresh(code) == "False False True cpu"


def test_matmul_precision_is_torchs_without_loading_the_namespace():
    code = (
        "import jax, sys, spx.nn as nn\n"
        "nn.Linear(2, 2)\n"
        "print(jax.config.jax_default_matmul_precision, 'spx._namespace' in sys.modules)"
    )
    assert _fresh(code) == "float32 False"


def test_star_import_and_dir_list_the_namespace():
    names = {}
    exec("from spx import *", names)
    for name in ("zeros", "Tensor", "nn", "optim", "compile", "float32", "no_grad", "device"):
        assert name in names, name
        assert name in dir(spx), name
    assert names["zeros"] is spx.zeros
    assert "all_reduce" in dir(spx.distributed)


def test_unknown_names_raise_attribute_error_naming_them():
    with pytest.raises(AttributeError, match="module 'spx' has no attribute 'zeross'"):
        spx.zeross  # noqa: B018
    with pytest.raises(AttributeError, match=r"'spx\.distributed' has no attribute 'all_reduc'"):
        spx.distributed.all_reduc  # noqa: B018
    assert not hasattr(spx, "__wrapped__")
