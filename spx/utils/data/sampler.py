"""``spx.utils.data.sampler`` (torch's ``torch.utils.data.sampler``)."""

from spx.data import BatchSampler as BatchSampler
from spx.data import RandomSampler as RandomSampler
from spx.data import Sampler as Sampler
from spx.data import SequentialSampler as SequentialSampler
from spx.data import SubsetRandomSampler as SubsetRandomSampler
from spx.data import WeightedRandomSampler as WeightedRandomSampler
