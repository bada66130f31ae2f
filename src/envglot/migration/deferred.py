"""An output started at its first change (a piece's, :mod:`.partitions`): until then it is the input's own
bytes, passed over (:class:`Unchanged`); then it is opened and that part copied from the input
read again, checked (:class:`Deferred`)."""

from __future__ import annotations

import contextlib
import hashlib
import zlib
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from .files import read_error


class InputChangedError(Exception):
    """An input read again to copy its unchanged part cannot be read, or its bytes differ (it fails: 66)."""


class Unchanged:
    """The leading part of an output that is its input's own bytes: not written as it passes.

    It is counted and digested as it passes; once something changes, :meth:`copy` writes it
    from the input read again, and checks that it is what was read the first time.
    """

    def __init__(self, size: int = 0, digest: bytes | None = None) -> None:
        """``size`` and ``digest``: a part passed over elsewhere (a worker), as :meth:`digest` gave it."""
        self.size = size
        self.hash = hashlib.blake2b(digest_size=16)
        self.known = digest

    def add(self, b: bytes) -> None:
        """Pass over output bytes that are the input's own."""
        self.size += len(b)
        self.hash.update(b)

    def digest(self) -> bytes:
        """The digest of the bytes passed over."""
        return self.known if self.known is not None else self.hash.digest()

    def copy(self, open_: Callable[[], list[Any]], write: Callable[[bytes], object]) -> None:
        """Write the unchanged part, read again through ``open_()`` (the reader first, then what it wraps).

        Raises:
            InputChangedError: the input cannot be opened or read, or its bytes differ.
            OSError: from ``write`` (the output's error).
        """
        if not self.size:
            return
        streams: list[Any] = []
        try:
            try:
                streams = open_()
            except (OSError, EOFError, zlib.error) as exc:
                raise InputChangedError(read_error(exc)) from None
            again = hashlib.blake2b(digest_size=16)
            left = self.size
            while left > 0:
                try:
                    block = streams[0].read(min(left, 1024 * 1024))
                except (OSError, EOFError, zlib.error) as exc:
                    raise InputChangedError(read_error(exc)) from None
                if not block:
                    break
                left -= len(block)
                again.update(block)
                write(block)
            if left or again.digest() != self.digest():
                raise InputChangedError("the file changed while it was being migrated")
        finally:
            for f in streams:
                with contextlib.suppress(Exception):
                    f.close()


class Writer(Protocol):
    """An output being written: a piece's temporary."""

    def write(self, b: bytes, /) -> object: ...

    def abort(self) -> None: ...


W = TypeVar("W", bound=Writer)


class Deferred(Generic[W]):
    """An output opened at its first change.

    Until then the output is the input's own bytes, passed over (:class:`Unchanged`: counted
    and digested, not written). At the first change :meth:`start` opens it (``open_``) and
    copies that part into it from the input read again (``reopen``, as :meth:`Unchanged.copy`
    takes it), checked.
    """

    def __init__(self, open_: Callable[[], W], reopen: Callable[[], list[Any]]) -> None:
        self.open_ = open_
        self.reopen = reopen
        self.unchanged = Unchanged()
        self.out: W | None = None
        """The output, once started (or set by the caller: a worker's temporary taken over)."""

    def write(self, b: bytes, changed: bool) -> None:
        """Pass over ``b`` while nothing changed (``changed``: ``b`` differs from its input bytes), else write it."""
        out = self.out
        if out is None:
            if not changed:
                self.unchanged.add(b)
                return
            out = self.start()
        out.write(b)

    def start(self) -> W:
        """Open the output, holding the unchanged part passed over so far (aborted if that fails).

        Raises:
            InputChangedError: the input cannot be read again, or its bytes differ.
            OSError: the output cannot be opened or written.
        """
        out = self.open_()
        try:
            self.unchanged.copy(self.reopen, out.write)
        except BaseException:
            out.abort()
            raise
        self.out = out
        return out
