"""Exit codes of every envglot command (sysexits.h numbers where one fits), :func:`die`, and a
command's end without the interpreter's teardown (:class:`Finished`, :func:`end_now`)."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from ..excerpt import display_path

EX_OK = 0
"""Success."""
EX_FAILED = 1
"""Lossy conversion with --fail-if-lossy, validation failures, rejected records, or --check found changes."""
EX_USAGE = 2
"""Usage error (click's own code)."""
EX_DATAERR = 65
"""Invalid input data: bad JSON, no dialect matches, a contract violation on read."""
EX_NOINPUT = 66
"""An input file is missing or unreadable."""
EX_UNAVAILABLE = 69
"""A service cannot start: ``envglot proxy --listen`` on an address that is in use or not this machine's."""
EX_IOERR = 74
"""An output could not be written."""
EX_INTERRUPTED = 130
"""Interrupted by Ctrl-C or SIGTERM (128 + SIGINT); nothing half-written is left behind."""
EX_PIPE = 141
"""The reader of stdout (or stderr) went away, e.g. ``| head`` (128 + SIGPIPE, as a shell reports it)."""


def silence_broken_pipe() -> None:
    """Point stdout and stderr at /dev/null so exiting after a broken pipe prints nothing more."""
    import os
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            fd = stream.fileno()
        except (OSError, ValueError):
            continue
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)
        except OSError:
            pass


def die(message: str, code: int, where: str | None = None) -> NoReturn:
    """Print ``[WHERE: ]error: MESSAGE`` on stderr and exit with ``code``."""
    if where:
        where = display_path(where)
    click.echo(f"{where}: error: {message}" if where else f"error: {message}", err=True)
    sys.exit(code)


class Finished(SystemExit):
    """A command's end with every file it wrote closed (``raise Finished(code)`` for ``sys.exit(code)``):
    the ``envglot`` program then ends at once (:func:`end_now`); to any other caller (``CliRunner``,
    ``main([...])``) it is the ``SystemExit`` it derives from."""

    code: int


def end_now(code: int) -> NoReturn:
    """End the process with ``code`` as the interpreter's own exit would, without its teardown (every
    module's objects freed one by one and collected: about 47 M instructions after ``migrate``,
    docs/performance.md): the ``atexit`` handlers run, stdout and stderr are flushed, then
    ``os._exit``. With another thread running (the interpreter would wait for it), the normal exit;
    a closed stdout or stderr pipe ends with :data:`EX_PIPE`, another flush error as the interpreter's
    exit reports it."""
    import atexit
    import os

    threading = sys.modules.get("threading")  # not imported: no thread was started through it
    if threading is not None and threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        silence_broken_pipe()
        os._exit(EX_PIPE)
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code)
