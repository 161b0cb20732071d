"""``spx.utils.data.dataloader`` (torch's ``torch.utils.data.dataloader``)."""

from spx.data import DataLoader as DataLoader
from spx.data import default_collate as default_collate
from spx.data import default_convert as default_convert
from spx.data import get_worker_info as get_worker_info
