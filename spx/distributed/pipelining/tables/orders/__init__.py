"""Schedule generators: the compute-only table of every torch schedule, by name.

``registry`` maps names to generators and placements; ``single`` (GPipe, 1F1B, forward-only),
``interleaved`` (Interleaved1F1B, LoopedBFS, InterleavedZeroBubble) and ``v`` (ZBVZeroBubble,
DualPipeV) generate the tables; ``common`` holds argument checks and stage placements.
"""

from spx.distributed.pipelining.tables.orders.registry import SCHEDULES as SCHEDULES
from spx.distributed.pipelining.tables.orders.registry import ScheduleSpec as ScheduleSpec
from spx.distributed.pipelining.tables.orders.registry import (
    dual_pipe_v_order as dual_pipe_v_order,
)
from spx.distributed.pipelining.tables.orders.registry import (
    forward_only_order as forward_only_order,
)
from spx.distributed.pipelining.tables.orders.registry import (
    get_schedule_order as get_schedule_order,
)
from spx.distributed.pipelining.tables.orders.registry import (
    get_schedule_spec as get_schedule_spec,
)
from spx.distributed.pipelining.tables.orders.registry import gpipe_order as gpipe_order
from spx.distributed.pipelining.tables.orders.registry import (
    interleaved_1f1b_order as interleaved_1f1b_order,
)
from spx.distributed.pipelining.tables.orders.registry import (
    interleaved_zero_bubble_order as interleaved_zero_bubble_order,
)
from spx.distributed.pipelining.tables.orders.registry import (
    looped_bfs_order as looped_bfs_order,
)
from spx.distributed.pipelining.tables.orders.registry import (
    one_f_one_b_order as one_f_one_b_order,
)
from spx.distributed.pipelining.tables.orders.registry import rank_to_stages as rank_to_stages
from spx.distributed.pipelining.tables.orders.registry import (
    stage_to_rank_loop as stage_to_rank_loop,
)
from spx.distributed.pipelining.tables.orders.registry import (
    stage_to_rank_v as stage_to_rank_v,
)
from spx.distributed.pipelining.tables.orders.registry import (
    zbv_zero_bubble_order as zbv_zero_bubble_order,
)
