"""``spx.multiprocessing``: start ranks as processes (mirrors ``torch.multiprocessing``)."""

from spx.multiprocessing.spawn import ProcessContext as ProcessContext
from spx.multiprocessing.spawn import ProcessException as ProcessException
from spx.multiprocessing.spawn import ProcessExitedException as ProcessExitedException
from spx.multiprocessing.spawn import ProcessRaisedException as ProcessRaisedException
from spx.multiprocessing.spawn import spawn as spawn
from spx.multiprocessing.spawn import start_processes as start_processes
