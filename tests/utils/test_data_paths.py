"""spx.utils.data: torch.utils.data's import paths, so a data pipeline ports by renaming."""

import importlib

import numpy as np
import pytest

import spx

torch = pytest.importorskip("torch")

NAMES = [
    "DataLoader", "Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset",
    "Subset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
    "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DistributedSampler",
    "default_collate", "default_convert", "get_worker_info",
]  # fmt: skip
SUBMODULES = {
    "dataloader": ["DataLoader", "default_collate", "get_worker_info"],
    "dataset": ["Dataset", "TensorDataset", "Subset", "random_split"],
    "sampler": ["Sampler", "RandomSampler", "BatchSampler"],
    "distributed": ["DistributedSampler"],
}


def test_torchs_names_are_spx_datas_objects():
    for name in NAMES:
        assert hasattr(torch.utils.data, name), name  # the reference has it
        assert getattr(spx.utils.data, name) is getattr(spx.data, name), name


@pytest.mark.parametrize("module", sorted(SUBMODULES))
def test_torchs_submodule_paths(module):
    theirs = importlib.import_module(f"torch.utils.data.{module}")
    ours = importlib.import_module(f"spx.utils.data.{module}")
    for name in SUBMODULES[module]:
        assert hasattr(theirs, name), name
        assert getattr(ours, name) is getattr(spx.data, name), name


SCRIPT = """
from lib.utils.data import DataLoader, TensorDataset
from lib.utils.data.distributed import DistributedSampler
data = TensorDataset(lib.arange(20.).reshape(10, 2), lib.arange(10))
sampler = DistributedSampler(data, num_replicas=2, rank=1, shuffle=False)
batches = [(x.tolist(), y.tolist()) for x, y in DataLoader(data, batch_size=2, sampler=sampler)]
"""


def test_a_torch_data_pipeline_runs_renamed():
    out = {}
    for lib in (torch, spx):
        scope = {"lib": lib}
        exec(SCRIPT.replace("lib.utils", f"{lib.__name__}.utils"), scope)
        out[lib.__name__] = scope["batches"]
    assert out["spx"] == out["torch"]
    assert np.asarray(out["spx"][0][1]).tolist() == [1, 3]
