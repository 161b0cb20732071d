"""spx.data: torch.utils.data for JAX - datasets, samplers, collation and the DataLoader.

Rename ``torch.utils.data`` to ``spx.utils.data`` (the same objects as ``spx.data``) and keep
the code: batches come out as ``spx.Tensor`` (collated in numpy, one transfer per leaf),
``num_workers`` runs threads, and generators are ``spx.Generator`` objects, int seeds or
``numpy.random.Generator`` objects.
"""

from spx.data._workers import WorkerInfo as WorkerInfo
from spx.data._workers import get_worker_info as get_worker_info
from spx.data.collate import default_collate as default_collate
from spx.data.collate import default_convert as default_convert
from spx.data.dataloader import DataLoader as DataLoader
from spx.data.dataset import ChainDataset as ChainDataset
from spx.data.dataset import ConcatDataset as ConcatDataset
from spx.data.dataset import Dataset as Dataset
from spx.data.dataset import IterableDataset as IterableDataset
from spx.data.dataset import Subset as Subset
from spx.data.dataset import TensorDataset as TensorDataset
from spx.data.dataset import random_split as random_split
from spx.data.distributed import DistributedSampler as DistributedSampler
from spx.data.sampler import BatchSampler as BatchSampler
from spx.data.sampler import RandomSampler as RandomSampler
from spx.data.sampler import Sampler as Sampler
from spx.data.sampler import SequentialSampler as SequentialSampler
from spx.data.sampler import SubsetRandomSampler as SubsetRandomSampler
from spx.data.sampler import WeightedRandomSampler as WeightedRandomSampler
