"""``spx-run --threads``: every rank is a thread of this process, one JAX device each.

The script runs once per rank through :func:`spx.distributed.spawn`, which seats each thread as a
rank of one thread world, so ``init_process_group()`` in the script joins it. Each rank gets:

- its own module namespace: the script's code runs in a fresh ``__main__`` module per rank
  (``__name__ == "__main__"``); modules it imports are shared, as threads share ``sys.modules``;
- its own torchrun variables in ``os.environ`` (RANK, LOCAL_RANK, WORLD_SIZE, ...,
  TORCHELASTIC_ERROR_FILE; see :mod:`.thread_overlay`);
- its output prefixed on the console as in ``--tee`` (``[default1]:``), always, because the
  ranks share one console; ``--redirects``/``--tee``/``--log-dir``/``--local-ranks-filter``
  write and filter as for processes.

A rank that raises writes its error file and its traceback (to its stderr); the other ranks'
pending collectives raise at once; the run ends with the root-cause report, or restarts (every
rank, ``TORCHELASTIC_RESTART_COUNT`` + 1) while ``--max-restarts`` allow. Threads cannot be
killed: a rank busy in its own code after a failure or a signal is abandoned when spx-run exits.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import signal
import sys
import threading
import traceback
import types
from typing import Any, TextIO

from spx.distributed.elastic.agent import RunResult, SignalException
from spx.distributed.elastic.config import LaunchConfig, parse_signals
from spx.distributed.elastic.multiprocessing.errors import ErrorHandler, ProcessFailure
from spx.distributed.elastic.multiprocessing.logs import CONSOLE, LogsSpecs
from spx.distributed.elastic.multiprocessing.processes import WorkerStartError
from spx.distributed.elastic.multiprocessing.tail_log import line_prefix
from spx.distributed.elastic.worker_env import (
    GroupInfo,
    NodeInfo,
    assign_worker_ranks,
    launcher_environ,
    worker_env,
)

_log = logging.getLogger(__name__)
# Process-mode variables that mean nothing for thread ranks sharing one JAX runtime.
_PROCESS_ONLY = ("JAX_NUM_CPU_DEVICES", "SPX_LOCAL_DEVICE_IDS", "PJRT_NPROC")


def load_code(script: str, module: bool) -> tuple[types.CodeType, dict[str, Any]]:
    """The script's (or module's) code and the ``__main__`` globals it runs with.

    Raises:
        FileNotFoundError / ModuleNotFoundError: the script or module does not exist.
        SyntaxError: it does not compile (before any rank starts).
    """
    if module:
        spec = importlib.util.find_spec(script)
        if spec is None:
            raise ModuleNotFoundError(f"spx-run --threads -m: no module named {script!r}")
        if spec.submodule_search_locations is not None:  # a package runs its __main__
            spec = importlib.util.find_spec(f"{script}.__main__")
            if spec is None:
                raise ModuleNotFoundError(f"{script!r} is a package without a __main__ module")
        if spec.loader is None or not hasattr(spec.loader, "get_code"):
            raise ModuleNotFoundError(f"spx-run --threads -m {script}: no code to run")
        code = spec.loader.get_code(spec.name)
        if code is None:
            raise ModuleNotFoundError(f"spx-run --threads -m {script}: no code to run")
        return code, {
            "__file__": spec.origin,
            "__spec__": spec,
            "__loader__": spec.loader,
            "__package__": spec.parent,
        }
    path = os.path.abspath(script)
    with open(path, "rb") as fp:
        source = fp.read()
    return compile(source, path, "exec"), {"__file__": path, "__spec__": None, "__package__": None}


def _rank_main(
    rank: int,
    code: types.CodeType,
    template: dict[str, Any],
    envs: dict[int, dict[str, str]],
    sinks: dict[int, dict[str, Any]],
) -> None:
    from spx import _context
    from spx.distributed.elastic.thread_overlay import ENV_KEY, STREAMS_KEY

    extras = _context.current().extras
    extras[ENV_KEY] = dict(envs[rank])
    extras[STREAMS_KEY] = sinks[rank]
    main = types.ModuleType("__main__")
    main.__dict__.update(template)
    main.__dict__["__builtins__"] = __builtins__
    try:
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except BaseException as e:
        # Leave this launcher frame out: the traceback starts in the script, as in a process.
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
        text = "".join(traceback.format_exception(type(e), e, tb))
        ErrorHandler().record_exception(e, callstack=text)  # os.environ is this rank's
        sys.stderr.write(text)  # this rank's stderr: prefixed, and in its log file
        raise
    finally:
        for sink in sinks[rank].values():
            sink.flush_partial()


class _Interrupted(KeyboardInterrupt):
    """A handled signal; a KeyboardInterrupt so that ``spawn``'s join aborts the rank world."""

    def __init__(self, sigval: Any) -> None:
        super().__init__(sigval.name)
        self.sigval = sigval


def run_threads(
    config: LaunchConfig,
    script: str,
    script_args: list[str],
    module: bool = False,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> RunResult:
    """Run ``script`` once per rank in threads of this process (see the module docstring).

    Args:
        config: the launch configuration (``threads=True``, one node).
        script: the script path, or the module name with ``module``.
        script_args: its arguments (``sys.argv[1:]`` for every rank).
        module: run ``script`` as a module (``-m``).
        stdout: the console for rank stdout (default ``sys.stdout``).
        stderr: the console for rank stderr (default ``sys.stderr``).

    Raises:
        SignalException: a handled signal arrived (the rank world was aborted).
        WorkerStartError: the script or module cannot be loaded.
    """
    from spx import _lazy

    # The ranks' script imports spx here, in the launcher's process, where spx loads lazily:
    # load every name now, in the canonical order (spx._lazy), before any rank imports.
    _lazy.load_all()
    from spx.distributed.elastic.thread_overlay import LineSink, Overlay

    try:
        code, template = load_code(script, module)
    except (OSError, ImportError, SyntaxError) as e:
        raise WorkerStartError(f"--threads could not load {script!r}: {e}") from e
    logs = config.logs_specs or LogsSpecs()
    n = config.nproc_per_node
    environ = launcher_environ()
    saved_argv, saved_path = list(sys.argv), list(sys.path)
    sys.argv = [template["__file__"], *script_args]
    sys.path.insert(0, os.getcwd() if module else os.path.dirname(template["__file__"]))
    out, err = stdout or sys.stdout, stderr or sys.stderr
    lock = threading.Lock()
    restore = _install_interrupts(config.signals_to_handle)
    try:
        with Overlay():
            for attempt in range(config.max_restarts + 1):
                workers = assign_worker_ranks([NodeInfo(config.role, n)], 0)
                group = GroupInfo(
                    role=config.role,
                    local_world_size=n,
                    group_rank=0,
                    group_world_size=1,
                    master_addr=config.master_addr,
                    master_port=config.master_port or 0,
                    restart_count=attempt,
                    max_restarts=config.max_restarts,
                    run_id=config.run_id,
                    signals_to_handle=config.signals_to_handle,
                    omp_num_threads=config.omp_num_threads,
                )
                envs = {w.local_rank: worker_env(w, group, environ) for w in workers}
                for env in envs.values():
                    for key in _PROCESS_ONLY:
                        env.pop(key, None)
                dest = logs.reify(envs)
                sinks = {}
                for w in workers:
                    r = w.local_rank
                    prefix = line_prefix(config.log_line_prefix_template, config.role, r, r)
                    sinks[r] = {
                        name: LineSink(
                            console if path == CONSOLE or r in tee else None,
                            prefix,
                            open(path, "w") if path not in (CONSOLE, os.devnull) else None,  # noqa: SIM115
                            lock,
                        )
                        for name, path, console, tee in (
                            ("stdout", dest.stdouts[r], out, dest.tee_stdouts),
                            ("stderr", dest.stderrs[r], err, dest.tee_stderrs),
                        )
                    }
                result = _run_attempt(config, code, template, envs, sinks, dest.error_files)
                if result.state == "SUCCEEDED":
                    logs.cleanup()
                    return result
                if attempt < config.max_restarts:
                    _log.warning(
                        "[%s] Worker group FAILED. %s/%s attempts left; will restart worker group",
                        config.role,
                        config.max_restarts - attempt,
                        config.max_restarts,
                    )
            return result
    except _Interrupted as e:
        msg = f"Process {os.getpid()} got signal: {e.sigval.name}"
        raise SignalException(msg, e.sigval) from None
    finally:
        restore()
        sys.argv, sys.path[:] = saved_argv, saved_path


def _install_interrupts(names: str) -> Any:
    """Make handled signals raise :class:`_Interrupted`; return a restore function."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def interrupt(signum: int, frame: Any) -> None:
        raise _Interrupted(signal.Signals(signum))

    old = {sig: signal.signal(sig, interrupt) for sig in parse_signals(names)}

    def restore() -> None:
        for sig, handler in old.items():
            signal.signal(sig, handler)

    return restore


def _run_attempt(
    config: LaunchConfig,
    code: types.CodeType,
    template: dict[str, Any],
    envs: dict[int, dict[str, str]],
    sinks: dict[int, dict[str, Any]],
    error_files: dict[int, str],
) -> RunResult:
    from spx.distributed import ProcessExitedException, ProcessRaisedException, spawn

    ctx = spawn(
        _rank_main,
        args=(code, template, envs, sinks),
        nprocs=len(envs),
        join=False,
        daemon=True,  # a rank stuck in its own code must not keep spx-run alive
    )
    try:
        while not ctx.join(timeout=config.monitor_interval, grace_period=config.shutdown_timeout):
            pass
        return RunResult("SUCCEEDED")
    except (ProcessRaisedException, ProcessExitedException) as e:
        rank = e.error_index
        exit_code = getattr(e, "exit_code", 1)
        failure = ProcessFailure(
            local_rank=rank,
            pid=os.getpid(),
            exitcode=exit_code if isinstance(exit_code, int) else 1,
            error_file=error_files.get(rank, ""),
            stderr_tail=sinks[rank]["stderr"].tail(),
        )
        return RunResult("FAILED", {rank: failure}, rank)
    finally:
        for rank_sinks in sinks.values():
            for sink in rank_sinks.values():
                sink.close()
