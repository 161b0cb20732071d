"""``examples/nanogpt.py`` ports by renaming: the script, and its text with ``spx`` -> ``torch``.

Both start from the same weights (``--init``, a safetensors file) and draw the same batches
(a numpy generator), so their losses must agree step by step to float rounding: torch is the
independent reference for every tensor method, ``loss.backward()``, gradient accumulation,
``clip_grad_norm_``, AdamW with parameter groups and the evaluation under ``no_grad``.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

import spx

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "nanogpt.py"
ARGS = ["--iters", "8", "--eval-interval", "4", "--eval-iters", "2"]


def _initial_weights(path: Path) -> None:
    spec = importlib.util.spec_from_file_location("nanogpt_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through it
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    spx.manual_seed(0)
    model = module.GPT(module.GPTConfig())
    save_file({k: np.asarray(v) for k, v in model.state_dict().items()}, str(path))


def _run(script: Path, tmp_path: Path, init: Path) -> dict:
    log = tmp_path / f"{script.stem}.json"
    proc = subprocess.run(
        [sys.executable, str(script), *ARGS, "--init", str(init), "--log", str(log)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "sample:" in proc.stdout  # generation (topk + multinomial) ran
    return json.loads(log.read_text())


def test_nanogpt_losses_match_the_torch_renamed_script(tmp_path):
    source = EXAMPLE.read_text()
    renamed = source.replace("spx", "torch")
    assert "spx" not in renamed  # the port really is the rename, nothing else
    torch_script = tmp_path / "nanogpt_torch.py"
    torch_script.write_text(renamed)
    init = tmp_path / "init.safetensors"
    _initial_weights(init)

    ours = _run(EXAMPLE, tmp_path, init)
    theirs = _run(torch_script, tmp_path, init)

    assert len(ours["train"]) == len(theirs["train"]) == 8
    np.testing.assert_allclose(ours["train"], theirs["train"], rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(ours["eval"], theirs["eval"], rtol=2e-4, atol=2e-5)
    assert ours["train"][-1] < ours["train"][0]  # it trains
