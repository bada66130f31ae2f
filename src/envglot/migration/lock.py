"""One run per ``--out`` directory at a time: the lock file ``<out>/.envglot-lock`` (both engines).

The lock is an advisory ``flock`` on that file, which holds the owner's pid. The kernel
releases it when its process ends, however it ends (``kill -9`` included), so a lock left
by a dead run is simply taken over; a live run's lock refuses the second run with
:data:`~.constants.EX_LOCKED`. Where ``flock`` is not supported, the pid decides: a lock
file naming a live process other than this one refuses the run, a dead one's is taken over.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path
from types import TracebackType

from ..excerpt import display_path as display
from .constants import EX_LOCKED, EX_OUTPUT, LOCK_NAME
from .files import MigrationError, pid_alive


class OutLock:
    """Hold ``<out>/.envglot-lock`` for a run (a context manager); :meth:`acquire` refuses a second run."""

    def __init__(self, out: Path) -> None:
        self.path = out / LOCK_NAME
        self.fd: int | None = None

    def __enter__(self) -> OutLock:
        self.acquire()
        return self

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lock, creating ``out`` if needed.

        Raises:
            MigrationError: another live run holds it (exit 75), or it cannot be created (74).
        """
        try:
            os.makedirs(self.path.parent, exist_ok=True)
        except OSError as exc:
            raise MigrationError(
                f"cannot create {display(self.path.parent)}: {exc.strerror or exc}", EX_OUTPUT
            ) from None
        for _ in range(10):  # a run that removed the file between our open and our flock: open the new one
            fd = self._open()
            try:
                if self._lock(fd) and self._still_there(fd):
                    os.ftruncate(fd, 0)
                    os.write(fd, f"{os.getpid()}\n".encode())
                    self.fd = fd
                    return
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
        raise MigrationError(f"cannot lock {display(self.path)}: it keeps being replaced", EX_LOCKED)

    def _open(self) -> int:
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise MigrationError(
                    f"refusing to use the lock file through the symbolic link {display(self.path)}", EX_OUTPUT
                ) from None
            raise MigrationError(
                f"cannot create the lock file {display(self.path)}: {exc.strerror}", EX_OUTPUT
            ) from None

    def _lock(self, fd: int) -> bool:
        """True once locked; raises the refusal when a live run holds it."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._refuse(_owner(fd))
        except OSError:  # no flock here (some network file systems): the pid decides
            pid = _owner(fd)
            if pid is not None and pid != os.getpid() and pid_alive(pid):
                self._refuse(pid)
        return True

    def _still_there(self, fd: int) -> bool:
        """The locked file is still the one at the path (not removed by a run that just ended)."""
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)

    def _refuse(self, pid: int | None) -> None:
        who = f" (pid {pid})" if pid is not None else ""
        raise MigrationError(
            f"another migration{who} is writing into {display(self.path.parent)}; wait for it to end "
            f"(the lock file {display(self.path)} is taken over once its process is gone)",
            EX_LOCKED,
        )

    def release(self) -> None:
        """Remove the lock file and release it (removed first: a waiting run then locks a new file)."""
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self.fd)
        self.fd = None


def _owner(fd: int) -> int | None:
    """The pid written in the lock file, if any."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
