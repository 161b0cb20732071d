"""``spx.utils.data.distributed`` (torch's ``torch.utils.data.distributed``)."""

from spx.data import DistributedSampler as DistributedSampler
