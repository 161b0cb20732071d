"""A tiny key-value store the agents of a multi-node job talk through.

The node-0 agent serves it; every agent (node 0 included) is a client. It carries only agent
business (who joined which attempt, which attempt failed, who finished), never worker data.
It is not on MASTER_PORT, which belongs to the workers' JAX coordinator (hosted by global rank
0), but on the agent port: MASTER_PORT + 1 unless ``--rdzv-conf agent_port=P`` says otherwise.

The server binds exactly the address it is given (MASTER_ADDR), so a job on 127.0.0.1 is reachable
from this host only; it never listens on all interfaces unless told to (``0.0.0.0``). A client
first sends the run id (``--rdzv-id``), and a server of another job refuses it. The protocol is
one JSON object per line each way; nothing is unpickled.

A client that disconnects without saying goodbye (its launcher was killed) is reported by the
server under the key ``fatal``, so the other agents stop their workers at once.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from typing import Any


class StoreError(RuntimeError):
    """The store refused a request or could not be reached."""


class _Handler(socketserver.StreamRequestHandler):
    server: AgentStoreServer

    def handle(self) -> None:
        node: int | None = None
        said_bye = False
        try:
            for raw in self.rfile:
                try:
                    req = json.loads(raw)
                    op = req["op"]
                except (ValueError, KeyError, TypeError):
                    self._reply({"error": "malformed request"})
                    return
                if op == "hello":
                    if req.get("run_id") != self.server.run_id:
                        self._reply(
                            {
                                "error": f"this agent store serves run {self.server.run_id!r}, "
                                f"not {req.get('run_id')!r}: give every node the same --rdzv-id"
                            }
                        )
                        return
                    node = req.get("node")
                    self._reply({"ok": True})
                elif op == "bye":
                    said_bye = True
                    self._reply({"ok": True})
                else:
                    self._reply(self.server.apply(op, req))
        except (ConnectionError, OSError):
            pass
        finally:
            if node is not None and not said_bye and not self.server.closing:
                self.server.apply(
                    "setnx",
                    {
                        "key": "fatal",
                        "value": {"reason": f"the spx-run agent of node {node} disconnected"},
                    },
                )

    def _reply(self, obj: dict) -> None:
        self.wfile.write(json.dumps(obj).encode() + b"\n")
        self.wfile.flush()


class AgentStoreServer(socketserver.ThreadingTCPServer):
    """The store, served by node 0's agent.

    Args:
        host: the address to bind (MASTER_ADDR), exactly as given.
        port: the agent port.
        run_id: clients must present the same ``--rdzv-id``.

    Example:
        >>> srv = AgentStoreServer("127.0.0.1", 0, "job").start()
        >>> srv.server_address[0]
        '127.0.0.1'
        >>> srv.stop()
    """

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str, port: int, run_id: str) -> None:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        self.address_family = infos[0][0]
        self.run_id = run_id
        self.closing = False
        self._data: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        super().__init__(infos[0][4][:2], _Handler)

    def apply(self, op: str, req: dict) -> dict:
        """Run one store operation (``set``, ``setnx``, ``get``)."""
        with self._lock:
            if op == "set":
                self._data[req["key"]] = req["value"]
                return {"ok": True}
            if op == "setnx":
                value = self._data.setdefault(req["key"], req["value"])
                return {"ok": True, "value": value}
            if op == "get":
                return {"ok": True, "values": {k: self._data.get(k) for k in req["keys"]}}
        return {"error": f"unknown op {op!r}"}

    def start(self) -> AgentStoreServer:
        """Serve in a background thread."""
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.closing = True
        self.shutdown()
        self.server_close()


class AgentStoreClient:
    """One agent's connection to the store.

    Args:
        host: the server's address.
        port: the agent port.
        run_id: this job's ``--rdzv-id``.
        node: this agent's node rank.
        timeout: seconds to keep trying to connect (the server's agent may start later).

    Raises:
        StoreError: no server answered in time, or it serves another run.
    """

    def __init__(self, host: str, port: int, run_id: str, node: int, timeout: float) -> None:
        self.address = (host, port)
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while True:
            try:
                self._sock = socket.create_connection(self.address, timeout=5)
                break
            except OSError as e:
                last = e
                if time.monotonic() >= deadline:
                    raise StoreError(
                        f"could not reach the spx-run agent of node 0 at {host}:{port} within "
                        f"{timeout:.0f}s ({last}); start node 0 with the same --master-addr and "
                        "--master-port, or raise --rdzv-conf timeout=SECONDS"
                    ) from None
                time.sleep(0.1)
        self._sock.settimeout(60)
        self._file = self._sock.makefile("rwb")
        self._lock = threading.Lock()
        self._call({"op": "hello", "run_id": run_id, "node": node})

    def _call(self, req: dict) -> dict:
        with self._lock:
            try:
                self._file.write(json.dumps(req).encode() + b"\n")
                self._file.flush()
                line = self._file.readline()
            except OSError as e:
                raise StoreError(
                    f"lost the spx-run agent store at {self.address[0]}:{self.address[1]}: {e}"
                ) from None
        if not line:
            raise StoreError(
                f"the spx-run agent store at {self.address[0]}:{self.address[1]} closed the "
                "connection (node 0's spx-run exited)"
            )
        reply = json.loads(line)
        if "error" in reply:
            raise StoreError(reply["error"])
        return reply

    def set(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-serializable) under ``key``."""
        self._call({"op": "set", "key": key, "value": value})

    def setnx(self, key: str, value: Any) -> Any:
        """Store ``value`` unless ``key`` has one; return the value the key now holds."""
        return self._call({"op": "setnx", "key": key, "value": value})["value"]

    def get(self, *keys: str) -> dict[str, Any]:
        """The values of ``keys`` (None for a missing key)."""
        return self._call({"op": "get", "keys": list(keys)})["values"]

    def close(self, bye: bool = True) -> None:
        """Disconnect; ``bye`` tells the server this was not a crash."""
        try:
            if bye:
                self._call({"op": "bye"})
        except StoreError:
            pass
        finally:
            self._file.close()
            self._sock.close()
