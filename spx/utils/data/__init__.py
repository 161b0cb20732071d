"""``spx.utils.data``: :mod:`spx.data` under torch's path (``torch.utils.data``).

The same objects as :mod:`spx.data` (``spx.utils.data.DataLoader is spx.data.DataLoader``),
with torch's submodules: ``dataloader``, ``dataset``, ``sampler``, ``distributed``.

Example:
    >>> from spx.utils.data import DataLoader, TensorDataset
    >>> import spx
    >>> [b.shape for (b,) in DataLoader(TensorDataset(spx.ones(5, 2)), batch_size=2)]
    [spx.Size([2, 2]), spx.Size([2, 2]), spx.Size([1, 2])]
"""

from spx.data import BatchSampler as BatchSampler
from spx.data import ChainDataset as ChainDataset
from spx.data import ConcatDataset as ConcatDataset
from spx.data import DataLoader as DataLoader
from spx.data import Dataset as Dataset
from spx.data import DistributedSampler as DistributedSampler
from spx.data import IterableDataset as IterableDataset
from spx.data import RandomSampler as RandomSampler
from spx.data import Sampler as Sampler
from spx.data import SequentialSampler as SequentialSampler
from spx.data import Subset as Subset
from spx.data import SubsetRandomSampler as SubsetRandomSampler
from spx.data import TensorDataset as TensorDataset
from spx.data import WeightedRandomSampler as WeightedRandomSampler
from spx.data import WorkerInfo as WorkerInfo
from spx.data import default_collate as default_collate
from spx.data import default_convert as default_convert
from spx.data import get_worker_info as get_worker_info
from spx.data import random_split as random_split
from spx.utils.data import dataloader as dataloader
from spx.utils.data import dataset as dataset
from spx.utils.data import distributed as distributed
from spx.utils.data import sampler as sampler
