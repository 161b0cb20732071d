"""Static rendezvous: how the agents of one job agree on each attempt.

One node (``--nnodes 1``) needs no talking: :class:`LocalRendezvous`.

Several nodes (``--nnodes N --node-rank i``, fixed N) use :class:`StaticRendezvous` over the agent
store (:mod:`.store`), served by node 0's agent on MASTER_ADDR at the agent port. Per attempt
``k`` (``TORCHELASTIC_RESTART_COUNT``):

1. every agent registers ``node/k/<node_rank>`` (its role, worker count and settings) and waits
   until all N have; ranks follow from the registrations (:func:`.assign_worker_ranks`). An agent
   registers only once its previous workers are gone, so no old worker is alive when the new
   attempt starts, and rank 0's JAX coordinator can bind MASTER_PORT again;
2. an agent whose worker fails posts ``failed/k`` (the first post wins: the root cause); every
   agent polls it each monitor interval, stops its workers, and, with restarts left, all of them
   go to attempt ``k + 1`` together (they were started with the same ``--max-restarts``, which
   step 1 checks). A node whose workers already finished restarts them too: the job re-forms whole;
3. an agent whose workers all succeeded posts ``done/k/<node_rank>`` and waits for the others;
4. ``fatal`` ends the job on every node without restart: an agent got SIGTERM/SIGINT, could not
   start its workers, or disconnected without saying goodbye (killed).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from spx.distributed.elastic.store import AgentStoreClient, AgentStoreServer, StoreError
from spx.distributed.elastic.worker_env import NodeInfo

DEFAULT_TIMEOUT = 600.0  # seconds to wait for every node to join (torch's static default)


class RendezvousError(RuntimeError):
    """The nodes could not agree (timeout, mismatched settings, lost node 0)."""


@dataclass(frozen=True)
class RendezvousInfo:
    """The outcome of one rendezvous."""

    group_rank: int
    group_world_size: int
    nodes: tuple[NodeInfo, ...]


class LocalRendezvous:
    """The rendezvous of a single-node job: nothing to agree on."""

    def next_rendezvous(self, attempt: int, me: NodeInfo) -> RendezvousInfo:
        """This node is group rank 0 of 1."""
        return RendezvousInfo(0, 1, (me,))

    def post_failure(self, attempt: int, summary: dict[str, Any]) -> dict[str, Any]:
        """Record this attempt's root cause (returned as is: there is no other node)."""
        return summary

    def poll(self, attempt: int) -> tuple[str, Any] | None:
        """Another node's news (never any here)."""
        return None

    def post_done(self, attempt: int) -> None:
        """This node's workers all succeeded."""

    def all_done(self, attempt: int) -> bool:
        """Whether every node's workers succeeded in ``attempt``."""
        return True

    def post_fatal(self, reason: str) -> None:
        """End the job on every node."""

    def shutdown(self) -> None:
        """Release what the rendezvous holds."""


class StaticRendezvous(LocalRendezvous):
    """The rendezvous of a fixed set of nodes, through node 0's agent store.

    Args:
        master_addr: node 0's address (the store binds it on node 0).
        agent_port: the store's port.
        node_rank: this node's rank (``--node-rank``).
        nnodes: the number of nodes.
        run_id: ``--rdzv-id``; every node must give the same.
        settings: values every node must agree on (e.g. ``max_restarts``).
        timeout: seconds to wait for the other nodes at each rendezvous.
    """

    def __init__(
        self,
        master_addr: str,
        agent_port: int,
        node_rank: int,
        nnodes: int,
        run_id: str,
        settings: dict[str, Any],
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.node_rank = node_rank
        self.nnodes = nnodes
        self.settings = settings
        self.timeout = timeout
        self._agent_id = uuid.uuid4().hex
        self._server: AgentStoreServer | None = None
        if node_rank == 0:
            try:
                self._server = AgentStoreServer(master_addr, agent_port, run_id).start()
            except OSError as e:
                raise RendezvousError(
                    f"node 0 could not serve the agent store on {master_addr}:{agent_port}: {e}. "
                    "The agent port is MASTER_PORT + 1; choose a free one with "
                    "--rdzv-conf agent_port=PORT (the same on every node) or another --master-port"
                ) from None
        try:
            self._client = AgentStoreClient(master_addr, agent_port, run_id, node_rank, timeout)
        except StoreError as e:
            if self._server is not None:
                self._server.stop()
            raise RendezvousError(str(e)) from None

    def _get(self, *keys: str) -> dict[str, Any]:
        try:
            return self._client.get(*keys)
        except StoreError as e:
            raise RendezvousError(str(e)) from None

    def next_rendezvous(self, attempt: int, me: NodeInfo) -> RendezvousInfo:
        """Register for ``attempt`` and wait for every node (see the module docstring).

        Raises:
            RendezvousError: a node did not join in time, disagrees on settings, took this
                node rank already, or the job was ended (``fatal``).
        """
        mine = {"agent": self._agent_id, "node": asdict(me), "settings": self.settings}
        try:
            held = self._client.setnx(f"node/{attempt}/{self.node_rank}", mine)
        except StoreError as e:
            raise RendezvousError(str(e)) from None
        if held["agent"] != self._agent_id:
            raise RendezvousError(
                f"--node-rank {self.node_rank} is already taken by another spx-run in this job; "
                f"give each node its own rank in 0..{self.nnodes - 1}"
            )
        keys = [f"node/{attempt}/{i}" for i in range(self.nnodes)]
        deadline = time.monotonic() + self.timeout
        while True:
            values = self._get(*keys, "fatal")
            if values["fatal"] is not None:
                raise RendezvousError(f"the job was ended: {values['fatal']['reason']}")
            missing = [i for i, k in enumerate(keys) if values[k] is None]
            if not missing:
                break
            if time.monotonic() >= deadline:
                raise RendezvousError(
                    f"node(s) {missing} did not join attempt {attempt} within "
                    f"{self.timeout:.0f}s; start them with --nnodes {self.nnodes} and the same "
                    "--master-addr/--master-port, or raise --rdzv-conf timeout=SECONDS"
                )
            time.sleep(0.05)
        for i, k in enumerate(keys):
            if values[k]["settings"] != self.settings:
                raise RendezvousError(
                    f"node {i} was started with {values[k]['settings']} but node "
                    f"{self.node_rank} with {self.settings}; start every node with the same flags"
                )
        nodes = tuple(NodeInfo(**values[k]["node"]) for k in keys)
        return RendezvousInfo(self.node_rank, self.nnodes, nodes)

    def post_failure(self, attempt: int, summary: dict[str, Any]) -> dict[str, Any]:
        """Post this node's failure; return the attempt's root cause (the first posted)."""
        try:
            return self._client.setnx(f"failed/{attempt}", summary)
        except StoreError:
            return summary

    def poll(self, attempt: int) -> tuple[str, Any] | None:
        """``("fatal", reason)``, ``("failed", summary)`` or None."""
        values = self._get(f"failed/{attempt}", "fatal")
        if values["fatal"] is not None:
            return "fatal", values["fatal"]["reason"]
        if values[f"failed/{attempt}"] is not None:
            return "failed", values[f"failed/{attempt}"]
        return None

    def post_done(self, attempt: int) -> None:
        """This node's workers all succeeded in ``attempt``."""
        try:
            self._client.set(f"done/{attempt}/{self.node_rank}", True)
        except StoreError as e:
            raise RendezvousError(str(e)) from None

    def all_done(self, attempt: int) -> bool:
        """Whether every node posted ``done`` for ``attempt``."""
        values = self._get(*(f"done/{attempt}/{i}" for i in range(self.nnodes)))
        return all(v is not None for v in values.values())

    def post_fatal(self, reason: str) -> None:
        """End the job on every node (best effort: node 0 may be gone already)."""
        with contextlib.suppress(StoreError):
            self._client.setnx("fatal", {"reason": reason})

    def shutdown(self, linger: float = 10.0) -> None:
        """Say goodbye; node 0 keeps serving until the others have (at most ``linger`` s)."""
        if self._server is not None:
            self._client.set(f"bye/{self.node_rank}", True)
            deadline = time.monotonic() + linger
            keys = [f"bye/{i}" for i in range(self.nnodes)]
            while time.monotonic() < deadline:
                values = self._client.get(*keys, "fatal")
                if all(values[k] is not None for k in keys) or values["fatal"] is not None:
                    break
                time.sleep(0.05)
            self._client.close()
            self._server.stop()
        else:
            with contextlib.suppress(StoreError):
                self._client.set(f"bye/{self.node_rank}", True)
            self._client.close()
