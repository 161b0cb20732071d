"""Everything ``spx.distributed`` offers: its ``__init__`` imports it at once, or, in ``spx-run``'s
own process, on first use (:mod:`spx._lazy`)."""

from spx.distributed import device_mesh as device_mesh
from spx.distributed import functional as functional
from spx.distributed.backend import Backend as Backend
from spx.distributed.backend import DistBackendError as DistBackendError
from spx.distributed.backend import Work as Work
from spx.distributed.collectives import P2POp as P2POp
from spx.distributed.collectives import all_gather as all_gather
from spx.distributed.collectives import all_gather_into_tensor as all_gather_into_tensor
from spx.distributed.collectives import all_reduce as all_reduce
from spx.distributed.collectives import all_to_all as all_to_all
from spx.distributed.collectives import all_to_all_single as all_to_all_single
from spx.distributed.collectives import barrier as barrier
from spx.distributed.collectives import batch_isend_irecv as batch_isend_irecv
from spx.distributed.collectives import broadcast as broadcast
from spx.distributed.collectives import gather as gather
from spx.distributed.collectives import irecv as irecv
from spx.distributed.collectives import isend as isend
from spx.distributed.collectives import recv as recv
from spx.distributed.collectives import reduce as reduce
from spx.distributed.collectives import reduce_scatter as reduce_scatter
from spx.distributed.collectives import reduce_scatter_tensor as reduce_scatter_tensor
from spx.distributed.collectives import scatter as scatter
from spx.distributed.collectives import send as send
from spx.distributed.device_mesh import DeviceMesh as DeviceMesh
from spx.distributed.device_mesh import init_device_mesh as init_device_mesh
from spx.distributed.environment import (
    get_default_backend_for_device as get_default_backend_for_device,
)
from spx.distributed.environment import get_node_local_rank as get_node_local_rank
from spx.distributed.environment import is_backend_available as is_backend_available
from spx.distributed.environment import is_gloo_available as is_gloo_available
from spx.distributed.environment import is_mpi_available as is_mpi_available
from spx.distributed.environment import is_nccl_available as is_nccl_available
from spx.distributed.environment import is_torchelastic_launched as is_torchelastic_launched
from spx.distributed.environment import is_ucc_available as is_ucc_available
from spx.distributed.environment import is_xccl_available as is_xccl_available
from spx.distributed.object_collectives import all_gather_object as all_gather_object
from spx.distributed.object_collectives import broadcast_object_list as broadcast_object_list
from spx.distributed.object_collectives import gather_object as gather_object
from spx.distributed.object_collectives import recv_object_list as recv_object_list
from spx.distributed.object_collectives import scatter_object_list as scatter_object_list
from spx.distributed.object_collectives import send_object_list as send_object_list
from spx.distributed.process_group import GroupMember as GroupMember
from spx.distributed.process_group import ProcessGroup as ProcessGroup
from spx.distributed.process_group import destroy_process_group as destroy_process_group
from spx.distributed.process_group import get_backend as get_backend
from spx.distributed.process_group import get_global_rank as get_global_rank
from spx.distributed.process_group import get_group_rank as get_group_rank
from spx.distributed.process_group import get_process_group_ranks as get_process_group_ranks
from spx.distributed.process_group import get_rank as get_rank
from spx.distributed.process_group import get_world_size as get_world_size
from spx.distributed.process_group import group as group
from spx.distributed.process_group import init_process_group as init_process_group
from spx.distributed.process_group import is_available as is_available
from spx.distributed.process_group import is_initialized as is_initialized
from spx.distributed.process_group import new_group as new_group
from spx.distributed.process_group import (
    register_multiprocess_backend as register_multiprocess_backend,
)
from spx.distributed.reduce_op import ReduceOp as ReduceOp
from spx.distributed.spawn import ProcessContext as ProcessContext
from spx.distributed.spawn import ProcessExitedException as ProcessExitedException
from spx.distributed.spawn import ProcessRaisedException as ProcessRaisedException
from spx.distributed.spawn import spawn as spawn

_complete = True  # spx._lazy copies the names into the package only once all are here
