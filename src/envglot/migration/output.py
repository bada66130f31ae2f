"""Where one file's output goes in the local driver: an atomic temporary, stdout, or nowhere."""

from __future__ import annotations

from typing import Any, BinaryIO

from .constants import Mode
from .files import AtomicOutput, Cleaner, Unchanged
from .inputs import InputLimits, open_gzip, open_input
from .tally import Tally
from .walk import Job


class Sink:
    """Where one file's output goes: an atomic temp file, stdout, or nowhere (dry run).

    An output file is only created at the first chunk that changes something: until then
    the output is the input's own bytes, so nothing is written (an unchanged file is then
    copied, or left in place). At that first change the unchanged part is copied from the
    input, checked against a digest of what was read the first time.
    """

    def __init__(
        self,
        job: Job,
        mode: Mode,
        cleaned: Cleaner,
        stdout: BinaryIO | None,
        limits: InputLimits,
        keep: bool = False,
    ) -> None:
        self.job = job
        self.cleaned = cleaned
        self.limits = limits
        self.atomic: AtomicOutput | None = None
        self.stream: BinaryIO | None = None
        self.kept: bytearray | None = bytearray() if keep and mode == "check" else None
        """A dry run's output, kept for ``on_output`` (``--check --diff``)."""
        self.to_file = mode != "check" and job.dst is not None
        """The output is a file (``--out`` or in place), created at the first change."""
        if mode != "check" and job.dst is None:
            assert stdout is not None, "only stdout mode has inputs without a destination"
            self.stream = stdout
        self.unchanged = Unchanged()
        """The output so far while nothing changed: the input's own bytes, not written."""
        self.tally = Tally()
        """The file's counts so far."""
        self.omitted = 0
        """Records rejected without their bytes (too long): the only copy is the input."""

    def write(self, b: bytes, changed: bool, tmp: str | None = None) -> None:
        """Write a chunk's output (``changed``: it differs from the chunk's input bytes); ``tmp``:
        a worker wrote it (changed) to this temporary, taken over or appended and removed."""
        if tmp is not None:
            assert self.to_file and self.job.dst is not None, "a worker writes a file's output only"
            if self.atomic is None:
                if not self.unchanged.size:  # the worker's temporary starts the output: no copy
                    perm = self.job.perm if self.job.perm >= 0 else None
                    self.atomic = AtomicOutput.adopt(tmp, self.job.dst, perm)
                    return
                self.atomic = self._start()
            self.atomic.append_file(tmp)
            return
        if self.stream is not None:
            self.stream.write(b)
            return
        if self.kept is not None:
            self.kept += b
        if self.atomic is None:
            if not self.to_file:
                return
            if not changed:
                self.unchanged.add(b)
                return
            self.atomic = self._start()
        self.atomic.write(b)

    def _start(self) -> AtomicOutput:
        """The output file, holding the unchanged part read again from the input.

        Raises:
            InputChangedError: the input cannot be read again, or its bytes differ.
        """
        job = self.job
        assert job.dst is not None and job.src is not None
        src = job.src
        out = AtomicOutput(job.dst, job.gz, self.cleaned, -1 if job.gz else job.size)

        def reopen() -> list[Any]:
            raw = open_input(src)
            return [open_gzip(raw, self.limits), raw] if job.gz else [raw]

        try:
            self.unchanged.copy(reopen, out.write)
        except BaseException:
            out.abort()
            raise
        return out
