"""``spx.nn.parallel``: data parallelism (mirrors ``torch.nn.parallel``)."""

from spx.nn.parallel.data_parallel import DataParallel as DataParallel
from spx.nn.parallel.distributed import DistributedDataParallel as DistributedDataParallel
