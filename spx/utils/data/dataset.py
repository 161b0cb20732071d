"""``spx.utils.data.dataset`` (torch's ``torch.utils.data.dataset``)."""

from spx.data import ChainDataset as ChainDataset
from spx.data import ConcatDataset as ConcatDataset
from spx.data import Dataset as Dataset
from spx.data import IterableDataset as IterableDataset
from spx.data import Subset as Subset
from spx.data import TensorDataset as TensorDataset
from spx.data import random_split as random_split
