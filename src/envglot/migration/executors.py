"""Executors: where a migration's work runs — this process (``-j 1``), a local process pool
(``-j N``), or Dask (``--engine dask``). The engine flag chooses one.

An executor only runs "run these pieces" (:class:`Executor`) and hands back what each task
returned: counts, reject lines and the paths of the temporaries it wrote. Planning the work
and committing outputs and rejects in walk order is the driver's (:mod:`.driver`).
"""

from __future__ import annotations

import logging
import os
import pickle
import sys
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .workers import start_workers, worker_init

if TYPE_CHECKING:
    from concurrent.futures import Future


def cpus() -> int:
    """The CPUs this process may run on (the default number of workers)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class WorkerDiedError(Exception):
    """A worker process died (killed, out of memory) while it ran a task."""


class Executor(Protocol):
    """Runs the tasks the driver submits (:mod:`.driver`) and hands back each one's outcome."""

    jobs: int
    """Tasks that run at once (the report's ``jobs``)."""
    cuts: bool
    """A large file is cut into byte ranges run side by side (not in this process: one at a time)."""
    cheap_tasks: bool
    """A task costs little (a local process): pieces as small as a chunk, not a megabyte."""
    in_process: bool
    """Tasks run in the driver's process (a callback may be handed to them)."""
    on_this_machine: bool
    """The workers run on this machine and share its disks: on a local disk the driver's commit
    batch makes their temporaries durable (one sync per batch, not one per task) and the driver
    puts a file cut into ranges together as its ranges come in (:meth:`.driver.Driver._assemble`),
    not one task after the last range."""
    spread: int
    """Pieces per worker the input is cut into at most (above the least piece size): more make a
    shorter tail when the workers run at uneven speeds, each costs a task."""
    tapers: bool
    """Idle workers take the next task as they free up: the last ranges are cut small
    (:func:`.partitions.ranges`' ``taper``) so the workers end together."""

    def submit(self, fn: Callable[..., Any], *args: Any, tag: Any) -> None:
        """Run ``fn(*args)``; its outcome comes back from :meth:`next` with ``tag``."""

    def next(self) -> tuple[Any, Any, BaseException | None]:
        """A finished task's ``(tag, result, exception)`` (waits for one)."""

    def pending(self) -> bool:
        """Tasks submitted whose outcome :meth:`next` has not given yet."""

    def cancel(self) -> None:
        """Forget the tasks not given back yet (those not started never run)."""

    def close(self) -> None:
        """Stop what this executor started."""


# --------------------------------------------------------------------------- local

START_METHOD = "fork" if sys.platform.startswith("linux") else None
"""How :class:`Pool` starts its workers: forked on Linux (the default there up to Python 3.13;
:func:`.workers.start_workers` holds Ctrl-C back while they fork), else Python's default
(``spawn`` on macOS, where forking a process with system threads is unsafe)."""


class Inline:
    """``-j 1``: each task runs in this process, in submission order, when the driver asks for
    the next outcome."""

    jobs = 1
    cuts = False
    cheap_tasks = False
    in_process = True
    on_this_machine = True
    spread = 4
    tapers = False

    def __init__(self) -> None:
        self.queue: list[tuple[Any, Callable[..., Any], tuple[Any, ...]]] = []

    def submit(self, fn: Callable[..., Any], *args: Any, tag: Any) -> None:
        self.queue.append((tag, fn, args))

    def next(self) -> tuple[Any, Any, BaseException | None]:
        """The next task's ``(tag, result, exception)``, run now."""
        tag, fn, args = self.queue.pop(0)
        try:
            return tag, self.call(fn, args), None
        except Exception as exc:
            return tag, None, exc

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """Run one task here."""
        return fn(*args)

    def pending(self) -> bool:
        return bool(self.queue)

    def cancel(self) -> None:
        self.queue.clear()

    def close(self) -> None:
        """Forget the tasks not run."""
        self.cancel()


class Pool:
    """``-j N``: ``jobs`` worker processes, each with one Migrator built from ``options``. Tasks
    (:meth:`submit`) come back as they complete, the earliest submitted first among those done.

    On Linux the workers are forked (:data:`START_METHOD`; also on Python 3.14, whose default
    there is a fork server): each starts with this process's modules, tables and Migrator
    (:func:`.workers.migrator_for`), without an interpreter start-up or an import of envglot."""

    cuts = True
    cheap_tasks = True
    in_process = False
    on_this_machine = True
    spread = 4
    tapers = True

    def __init__(self, jobs: int, options: dict[str, Any]) -> None:
        import multiprocessing  # here: a run in this process (-j 1) imports no process pool
        from concurrent.futures import ProcessPoolExecutor

        self.jobs = jobs
        self.tasks: dict[Future[Any], tuple[int, Any]] = {}
        self.order = 0
        ctx = multiprocessing.get_context(START_METHOD) if START_METHOD else None
        self.pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=worker_init, initargs=(options,))
        try:
            start_workers(self.pool)
        except BaseException:
            self.pool.shutdown(wait=True, cancel_futures=True)
            raise

    def submit(self, fn: Callable[..., Any], *args: Any, tag: Any) -> None:
        """Queue ``fn(*args)``; on a pool already broken (a worker died, or could not start: the
        workers are not waited for at the start) the task comes back from :meth:`next` as failed."""
        from concurrent.futures import Future
        from concurrent.futures.process import BrokenProcessPool

        fut: Future[Any]
        try:
            fut = self.pool.submit(fn, *args)
        except BrokenProcessPool as exc:
            fut = Future()
            fut.set_exception(exc)
        self.tasks[fut] = (self.order, tag)
        self.order += 1

    def next(self) -> tuple[Any, Any, BaseException | None]:
        """A finished task's ``(tag, result, exception)``."""
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        done = [f for f in self.tasks if f.done()]
        if not done:
            done = list(wait(self.tasks, return_when=FIRST_COMPLETED).done)
        fut = min(done, key=lambda f: self.tasks[f][0])
        _, tag = self.tasks.pop(fut)
        exc = fut.exception()
        if isinstance(exc, BrokenProcessPool):
            exc = WorkerDiedError(f"a worker process died ({exc})")
        return tag, None if exc is not None else fut.result(), exc

    def pending(self) -> bool:
        return bool(self.tasks)

    def cancel(self) -> None:
        for f in self.tasks:
            f.cancel()
        self.tasks.clear()

    def close(self) -> None:
        """Cancel the tasks not started and wait for the workers to end."""
        self.cancel()
        self.pool.shutdown(wait=True, cancel_futures=True)


# --------------------------------------------------------------------------- Dask

QUIET_LOGS = logging.CRITICAL
"""What a ``LocalCluster`` envglot starts prints of ``distributed``'s log (its ``silence_logs``). Not
``ERROR``: under load a worker logs a missed heartbeat with its traceback at that level
(``logger.exception``), noise for a user; a failure that matters to the run comes back to the
driver as the task's error and is reported by envglot (exit 70)."""


BATCH_CONFIG: dict[str, Any] = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "500ms",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": str(64 * 1024 * 1024),
    "distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024),
}
"""Dask settings of the ``LocalCluster`` envglot starts (:func:`start_local_cluster`) — never of a
cluster of the user's (``client=``, ``--scheduler``). A batch run needs none of what they turn
down: the worker's statistical profiler (a sample of every thread's stack each 10 ms: the
dashboard's Profile page stays empty), the event loop's health tick (20 ms: the dashboard's
event-loop figures coarser), the system monitor's samples (CPU, memory, I/O: every 2 s, not
0.5 s) and the memory monitor's checks (every 1 s, not 0.1 s; a task's memory is bounded by the
input limits). The worker processes' C allocator keeps up to 64 MiB freed at the top of its heap
and serves blocks up to 32 MiB from it (the top of glibc's own adaptive thresholds, which a
``-j N`` worker reaches), not ``distributed``'s 64 KiB trim threshold, which turns off that
adaptation: every chunk's megabyte buffers were then mapped afresh, about a thousand page
faults per megabyte converted. Each measured in docs/performance.md ("Migrate on Dask"); the
worker's heartbeat interval is the scheduler's (0.5 s up to 10 workers), not a setting."""


def start_local_cluster(workers: int | None, config: dict[str, Any] | None = None) -> Any:
    """The ``distributed.LocalCluster`` ``--engine dask`` starts: ``workers`` processes (default:
    :func:`cpus`), one thread each, on 127.0.0.1, a dashboard on a free port, only critical log
    records (:data:`QUIET_LOGS`), with ``config`` (default :data:`BATCH_CONFIG`) in its scheduler,
    nannies and workers."""
    import dask
    from distributed import LocalCluster

    before = dict(os.environ)
    try:
        with dask.config.set(BATCH_CONFIG if config is None else config):  # the nannies keep a copy for their workers
            return LocalCluster(
                n_workers=workers or cpus(),
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",
                silence_logs=QUIET_LOGS,
            )
    finally:
        restore_environ(before)


def restore_environ(before: dict[str, str]) -> None:
    """Undo what a nanny set in this process's environment while it spawned its worker
    (``distributed.nanny.pre-spawn-environ``: it updates ``os.environ``, and a nanny sets it again
    each time it spawns): later children of this process, and a later cluster, which would take
    those values over its own, start from this process's environment."""
    for key in set(before) | set(os.environ):
        if key not in before:
            del os.environ[key]
        elif os.environ.get(key) != before[key]:
            os.environ[key] = before[key]


class DaskSynchronous(Inline):
    """Runs each task with Dask's synchronous scheduler, in this process, when the driver asks for
    the next: the plan of a cluster whose workers are elsewhere (each task syncs its own
    temporaries, a ranged file is put together by a task), for debugging and tests."""

    cuts = True
    in_process = False
    on_this_machine = False

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        import dask

        return dask.delayed(fn, pure=False)(*args).compute(scheduler="synchronous")


PICKLE_PROTOCOL = 5
"""How :class:`DaskCluster` packs a task's arguments and result."""


def run_packed(fn: Callable[..., Any], args: bytes) -> bytes:
    """A task on a Dask worker: ``fn(*args)``, its arguments and its result each one pickled blob.

    A task's pieces (a thousand small files' :class:`~.walk.FileSpec`) and results travel as bytes:
    ``distributed`` neither walks them for futures nor unpickles and pickles them again in the
    scheduler on their way to the worker, and the client takes a result without its own
    deserialization step: for 8,506 small files the client's process spent 0.15-0.2 s less CPU (0.34-0.57
    s beside the driver's thread before, 0.12-0.17 s after; docs/performance.md, "Migrate on Dask")."""
    return pickle.dumps(fn(*pickle.loads(args)), PICKLE_PROTOCOL)


class DaskCluster:
    """Submits tasks to a ``distributed`` cluster; hands them back as they complete.

    ``client``: a ``distributed.Client`` to use (not closed here); else one is connected to
    ``scheduler``, or a ``LocalCluster`` of ``workers`` processes is started
    (:func:`start_local_cluster`: envglot's batch settings, only critical log records; ``notice``
    is called with its dashboard link) — both closed by :meth:`close`. The workers of a
    ``LocalCluster`` (started here, or the cluster of the client given) are
    :attr:`on_this_machine`; those of a scheduler's address are taken to be elsewhere.
    """

    cuts = True
    cheap_tasks = False
    in_process = False
    spread = 8
    """Twice the pool's: a worker of a cluster often runs slower than the other (a shared machine,
    a busy node) and Dask does not split a running task; a task costs milliseconds
    (docs/performance.md, "Migrate on Dask")."""
    tapers = True
    """A worker takes a task when it frees up (the scheduler queues the rest): the last ranges
    small, as the pool's, so that neither worker converts the last large range alone."""

    def __init__(
        self,
        client: Any = None,
        scheduler: str | None = None,
        workers: int | None = None,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        from distributed import Client, LocalCluster, as_completed

        self.own: list[Any] = []
        if client is None and scheduler is not None:
            client = Client(scheduler)
            self.own.append(client)
        elif client is None:
            cluster = start_local_cluster(workers)
            client = Client(cluster)
            self.own.extend([client, cluster])
            if notice is not None:
                notice(f"Dask dashboard: {client.dashboard_link}")
        self.client = client
        self.on_this_machine = isinstance(getattr(client, "cluster", None), LocalCluster)
        self.jobs = max(1, len(client.scheduler_info().get("workers", {})))
        self.tags: dict[str, Any] = {}
        self.ac = as_completed()
        self.futures: list[Any] = []

    def submit(self, fn: Callable[..., Any], *args: Any, tag: Any) -> None:
        """Submit ``fn(*args)`` as :func:`run_packed` (its arguments and result pickled once, as bytes),
        under a key named after ``fn`` (as the dashboard's task stream shows it)."""
        blob = pickle.dumps(args, PICKLE_PROTOCOL)
        fut = self.client.submit(run_packed, fn, blob, key=f"{fn.__name__}-{uuid.uuid4()}", retries=0)
        self.tags[fut.key] = tag
        self.futures.append(fut)
        self.ac.add(fut)

    def next(self) -> tuple[Any, Any, BaseException | None]:
        """The next finished task's ``(tag, result, exception)``."""
        fut = next(self.ac)
        tag = self.tags.pop(fut.key)
        try:
            return tag, pickle.loads(fut.result()), None
        except Exception as exc:
            return tag, None, exc
        finally:
            fut.release()

    def pending(self) -> bool:
        return not self.ac.is_empty()

    def cancel(self) -> None:
        self.ac.clear()
        self.client.cancel([f for f in self.futures if not f.done()])

    def close(self) -> None:
        """Close the client and cluster started here (a client given is left open)."""
        for c in self.own:
            c.close()


def dask_executor(
    client: Any, scheduler: str | None, workers: int | None, notice: Callable[[str], None] | None
) -> DaskSynchronous | DaskCluster:
    """The Dask executor the options name (``scheduler="synchronous"``: this process)."""
    if client is None and scheduler == "synchronous":
        return DaskSynchronous()
    return DaskCluster(client, scheduler, workers, notice)
