"""``spx.nn.parallel``: data parallelism (mirrors ``torch.nn.parallel``)."""

from spx.nn.parallel.distributed import DistributedDataParallel as DistributedDataParallel
