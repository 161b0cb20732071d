"""``spx.distributed.pipelining``: torch's pipelining API as true MPMD on JAX.

Each rank runs its own compiled programs for its own stage(s); activations and gradients move
between ranks as JAX transfers (thread ranks: ``device_put``; process ranks:
``jax.experimental.transfer``). The layout is the architecture:

- the public frontend, here: ``stage`` (``PipelineStage``), ``schedules`` (the schedule
  classes, ``step``/``eval``), ``pipe`` (``pipeline()``/``Pipe``), ``microbatch``;
- ``split/``: how ``pipeline()`` cuts a model at ``pipe_split``/``SplitPoint`` markers;
- ``tables/``: schedules as data — the action IR, torch's CSV format, the schedule generators,
  validation, the deadlock simulator and the lowering to explicit SEND/RECV;
- ``runtime/``: what executes a rank's lowered table — the executor, each stage's compiled
  programs, the backward split into I and W, and the transport.
"""

from spx.distributed.pipelining.microbatch import TensorChunkSpec as TensorChunkSpec
from spx.distributed.pipelining.pipe import Pipe as Pipe
from spx.distributed.pipelining.pipe import pipeline as pipeline
from spx.distributed.pipelining.schedules import PipelineScheduleMulti as PipelineScheduleMulti
from spx.distributed.pipelining.schedules import (
    PipelineScheduleSingle as PipelineScheduleSingle,
)
from spx.distributed.pipelining.schedules import Schedule1F1B as Schedule1F1B
from spx.distributed.pipelining.schedules import ScheduleDualPipeV as ScheduleDualPipeV
from spx.distributed.pipelining.schedules import ScheduleGPipe as ScheduleGPipe
from spx.distributed.pipelining.schedules import (
    ScheduleInterleaved1F1B as ScheduleInterleaved1F1B,
)
from spx.distributed.pipelining.schedules import (
    ScheduleInterleavedZeroBubble as ScheduleInterleavedZeroBubble,
)
from spx.distributed.pipelining.schedules import ScheduleLoopedBFS as ScheduleLoopedBFS
from spx.distributed.pipelining.schedules import ScheduleZBVZeroBubble as ScheduleZBVZeroBubble
from spx.distributed.pipelining.schedules import _ScheduleForwardOnly as _ScheduleForwardOnly
from spx.distributed.pipelining.schedules import get_schedule_class as get_schedule_class
from spx.distributed.pipelining.split.marker import SplitPoint as SplitPoint
from spx.distributed.pipelining.split.marker import pipe_split as pipe_split
from spx.distributed.pipelining.stage import PipelineStage as PipelineStage
