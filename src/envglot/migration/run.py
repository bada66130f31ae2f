"""The front of a migration: :func:`migrate` checks the options, then hands the run on to the
piece driver (:mod:`.engine` for local paths and stdin, over Inline or Pool; :mod:`.dask_engine`
for Dask, imported only for ``engine="dask"``)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from ..diagnostics import Diagnostic
from ..errors import EnvglotError
from ..mappings import Mappings, mappings_for
from ..options import UNSET, Options, Style, Unsupported, resolve
from ..registry import Registry
from .constants import DEFAULT_CHUNK_BYTES, DEFAULT_INCLUDE, Mode
from .engine import run_local
from .files import MigrationError
from .inputs import DEFAULT_MAX_GZIP_RATIO, DEFAULT_MAX_RECORD_BYTES, InputLimits
from .records import RecordError, rebuild_migrator
from .report import MigrationReport, Progress


def migrate(
    inputs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    to: str = "response-v2",
    from_: str | None = None,
    out: str | os.PathLike[str] | None = None,
    in_place: bool = False,
    backup: str | None = ".bak",
    check: bool = False,
    rejects: str | os.PathLike[str] | None = None,
    report: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    options: Options | None = None,
    unsupported: Unsupported = UNSET,
    preserve: bool = UNSET,
    mappings: Sequence[str | os.PathLike[str]] | None = UNSET,
    context: dict[str, Any] | None = UNSET,
    strict: bool = UNSET,
    max_depth: int = UNSET,
    style: Style = UNSET,
    max_errors: int | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    progress: Callable[[Progress], None] | None = None,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    engine: str = "local",
    client: Any = None,
    scheduler: str | None = None,
    workers: int | None = None,
    storage_options: dict[str, Any] | None = None,
    notice: Callable[[str], None] | None = None,
    on_diagnostic: Callable[[str, int | None, Diagnostic | RecordError], None] | None = None,
    on_output: Callable[[str, str, bytes], None] | None = None,
    skip: Sequence[str | os.PathLike[str]] = (),
    follow_symlinks: bool = False,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    max_gzip_ratio: int = DEFAULT_MAX_GZIP_RATIO,
) -> MigrationReport:
    """Migrate files, directory trees and JSON Lines streams to dialect ``to``.

    Args:
        inputs: files and directories (walked recursively, in sorted order); ``"-"`` is
            JSON Lines on ``stdin``.
        to: target dialect (``response-v2`` by default).
        from_: force the source dialect; ``None`` detects it per record. Records already in
            ``to`` pass through either way.
        out: mirror the inputs under this directory (same names, same container, gzip kept).
        in_place: rewrite each changed input in place; ``backup`` (default ``".bak"``) keeps
            the original as ``<file><suffix>``; ``backup=None`` keeps none.
        check: convert in memory only and report what would change; write nothing (except
            ``rejects``/``report`` when given explicitly).
        rejects: the rejects file (JSON Lines; a file migrated again replaces its earlier
            lines). Default: ``.envglot-rejects.jsonl``
            in ``out``, or in the first input's directory for ``in_place``/stdout; none for
            ``check`` unless given.
        report: write the :class:`MigrationReport` as JSON here (atomically).
        jobs: worker processes (default: the CPUs available); 1 runs in this process.
        include, exclude: glob patterns for files found in directories (a pattern with a
            ``/`` matches the path relative to the directory given, else the file name);
            ``exclude`` also prunes directories. Files named explicitly are always taken.
        options: the conversion :class:`~envglot.Options`; each is also a keyword of its own
            (a keyword overrides that field of ``options``), as for :func:`envglot.convert`.
            ``mappings`` must be overlay paths (worker processes load them again).
        unsupported: ``ignore``/``warn`` convert lossy records (counted as lossy);
            ``raise`` rejects them; an :class:`envglot.Policy` also chooses which kinds count.
        preserve, mappings, context, strict, max_depth: as for :func:`envglot.convert` (a record
            refused by ``strict`` detection or deeper than ``max_depth`` is rejected).
        style: layout of converted ``.json`` documents (``compact``, ``pretty``, ``native``);
            JSON Lines records are always compact.
        max_errors: stop once more than this many records were rejected.
        chunk_bytes: JSON Lines chunk size sent to a worker (whole lines).
        progress: called with a :class:`Progress` after each chunk.
        stdin, stdout: streams for ``"-"`` (default ``sys.stdin.buffer``/``sys.stdout.buffer``).
        engine: ``"local"`` (this machine's process pool) or ``"dask"`` (``out=`` or
            ``check`` only; inputs and ``out`` may be fsspec URLs): see "Scale out" in
            ``docs/migration.md``. The Dask options: ``client`` (a ``distributed.Client``
            to use), ``scheduler`` (a scheduler address, or ``"synchronous"`` to run in
            this process), ``workers`` (worker processes of the ``LocalCluster`` started
            when neither is given), ``storage_options`` (for fsspec), ``notice`` (called
            with the dashboard link of a cluster it starts).
        on_diagnostic: called in the main process, in input order, with ``(file, line,
            item)`` for every diagnostic of every record (a :class:`~envglot.Diagnostic`;
            ``line`` is ``None`` for a ``.json`` document) and for every rejected record
            (a :class:`RecordError`, after its diagnostics). The workers collect them only
            when this is given. Local engine only.
        on_output: ``check`` only: called in input order with ``(file, its path, the bytes
            that would be written)`` for every input file that would change and be written
            (a rejected ``.json`` document is not); the output is held in memory per file.
            Local engine only.
        skip: files never taken as inputs from a directory (the CLI's ``--log`` file), like
            the rejects and report files.
        follow_symlinks: follow a link found in a directory to a regular file anywhere
            (default: only to one inside that directory's tree; others are skipped, exit 66).
        max_record_bytes: a record (line or ``.json`` document) longer than this is rejected
            with its length, without being held in memory or copied to the rejects file.
        max_gzip_ratio: a ``.gz`` input that expands more than this many times the
            compressed bytes read (past 16 MiB) is not read further (that file fails, exit 66).

    Returns:
        The :class:`MigrationReport`; its ``exit_code`` follows ``docs/migration.md``.

    Raises:
        MigrationError: bad options or a missing input, before anything is written.
        EnvglotError: an unknown dialect or an invalid mapping overlay.
    """
    t0 = time.monotonic()
    names = [os.fspath(inputs)] if isinstance(inputs, str | os.PathLike) else [os.fspath(i) for i in inputs]
    mode = _mode(names, out, in_place, check)
    try:
        opts = resolve(
            options,
            unsupported=unsupported,
            preserve=preserve,
            mappings=mappings,
            context=context,
            strict=strict,
            max_depth=max_depth,
            style=style,
        )
    except EnvglotError as exc:
        raise MigrationError(exc.message, 2) from None
    style = opts.style
    # first: the dialects declared among them are known by name (docs/declared-dialects.md)
    tables = opts.mappings if isinstance(opts.mappings, Mappings) else mappings_for(opts.mappings)
    _check_options(to, chunk_bytes, max_errors, backup if mode == "in-place" else None, tables.registry)
    limits = InputLimits(max_record_bytes, max_gzip_ratio, follow_symlinks)
    if (problem := limits.problem()) is not None:
        raise MigrationError(problem, 2)
    options_: dict[str, Any] = {"to": to, "from_": from_, "options": opts}
    if on_diagnostic is not None:
        if engine != "local":
            raise MigrationError("on_diagnostic (--log, -v) needs the local engine", 2)
        options_["details"] = True
    if on_output is not None and (engine != "local" or mode != "check"):
        raise MigrationError("on_output (--diff) needs check=True and the local engine", 2)
    mig = rebuild_migrator(to, {k: v for k, v in options_.items() if k != "to"})  # validates options early
    if engine != "local":
        return _run_dask(
            engine,
            names,
            mode,
            options_,
            out=out,
            rejects=rejects,
            report=report,
            include=include,
            exclude=exclude,
            style=style,
            max_errors=max_errors,
            chunk_bytes=chunk_bytes,
            progress=progress,
            client=client,
            scheduler=scheduler,
            workers=workers,
            storage_options=storage_options,
            notice=notice,
            t0=t0,
            limits=limits,
        )
    return run_local(
        names,
        mode=mode,
        mig=mig,
        options=options_,
        out=Path(out) if out is not None else None,
        rejects=Path(rejects) if rejects is not None else None,
        report=Path(report) if report is not None else None,
        skip=[Path(x) for x in skip],
        include=tuple(include) if include else DEFAULT_INCLUDE,
        exclude=tuple(exclude),
        backup=backup if mode == "in-place" else None,
        jobs=jobs,
        style=style,
        max_errors=max_errors,
        chunk_bytes=chunk_bytes,
        progress=progress,
        stdin=stdin,
        stdout=stdout,
        limits=limits,
        on_diagnostic=on_diagnostic,
        on_output=on_output,
        t0=t0,
    )


def _run_dask(
    engine: str,
    names: list[str],
    mode: Mode,
    options: dict[str, Any],
    *,
    out: str | os.PathLike[str] | None,
    rejects: str | os.PathLike[str] | None,
    report: str | os.PathLike[str] | None,
    client: Any,
    scheduler: str | None,
    **rest: Any,
) -> MigrationReport:
    """Hand the run to the Dask driver (``rest``: the options it shares with the local one)."""
    if engine != "dask":
        raise MigrationError(f"engine must be local or dask, not {engine!r}", 2)
    try:
        import dask  # noqa: F401
        import fsspec  # noqa: F401

        if client is None and scheduler != "synchronous":
            import distributed  # noqa: F401
        from .dask_engine import migrate_dask
    except ImportError as exc:  # pragma: no cover - the extra is not installed
        raise MigrationError(f"engine='dask' needs the dask extra (pip install 'envglot[dask]'): {exc}", 2) from None
    return migrate_dask(
        names,
        mode=mode,
        options=options,
        out=None if out is None else os.fspath(out),
        rejects=None if rejects is None else os.fspath(rejects),
        report=None if report is None else os.fspath(report),
        client=client,
        scheduler=scheduler,
        **rest,
    )


def _mode(names: list[str], out: object, in_place: bool, check: bool) -> Mode:
    if not names:
        raise MigrationError("no input given", 2)
    if names.count("-") > 1:
        raise MigrationError("stdin ('-') can be given only once", 2)
    if out is not None and in_place:
        raise MigrationError("choose one of out and in_place", 2)
    if in_place and "-" in names:
        raise MigrationError("stdin ('-') cannot be migrated in place", 2)
    if check:
        return "check"
    if in_place:
        return "in-place"
    if out is not None:
        return "out"
    if names == ["-"]:
        return "stdout"
    raise MigrationError("say where the output goes: out=DIR, in_place=True, or check=True", 2)


def _check_options(to: str, chunk_bytes: int, max_errors: int | None, backup: str | None, registry: Registry) -> None:
    if chunk_bytes < 1:
        raise MigrationError("chunk_bytes must be positive", 2)
    if max_errors is not None and max_errors < 0:
        raise MigrationError("max_errors must be >= 0", 2)
    if backup is not None and not backup:
        raise MigrationError("the backup suffix must not be empty (use backup=None for no backup)", 2)
    if not registry.get(to).shape.writable:
        writable = ", ".join(registry.writable_names())
        raise MigrationError(f"{to} is a read-only source dialect; write one of {writable}", 2)
