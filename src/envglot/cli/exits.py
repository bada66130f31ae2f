"""Exit codes of every envglot command (sysexits.h numbers where one fits), :func:`die`, and a
command's end without the interpreter's teardown (:class:`Finished`, :func:`end_after_exit`)."""

from __future__ import annotations

import atexit
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
    the ``envglot`` program then ends without the interpreter's teardown (:func:`end_after_exit`); to
    any other caller (``CliRunner``, ``main([...])``) it is the ``SystemExit`` it derives from."""

    code: int


_ENDING: list[int] = []
"""The exit code :func:`_end` ends the process with, once :func:`end_after_exit` set it."""


def end_after_exit(code: int) -> None:
    """Have the process end with ``code`` once the interpreter has joined its threads and run the
    other ``atexit`` handlers, without its teardown (every module's objects freed one by one and
    collected: about 50 M instructions after ``migrate``, docs/performance.md): stdout and stderr
    are flushed, then ``os._exit``. A closed stdout or stderr pipe ends with :data:`EX_PIPE`; another
    flush error is left to the interpreter's exit, which reports it."""
    _ENDING[:] = [code]


def _end() -> None:
    """The last ``atexit`` handler to run (registered when the CLI is imported: handlers run last
    registered first, and the ``envglot`` program registers none before): end the process as
    :func:`end_after_exit` asked."""
    if not _ENDING:
        return
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        silence_broken_pipe()
        os._exit(EX_PIPE)
    except (OSError, ValueError):
        return
    os._exit(_ENDING[0])


atexit.register(_end)
