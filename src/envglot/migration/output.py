"""Where one file's output goes in the local driver: an atomic temporary, stdout, or nowhere."""

from __future__ import annotations

from typing import Any, BinaryIO

from .constants import Mode
from .deferred import Deferred
from .files import AtomicOutput, Cleaner
from .inputs import InputLimits, open_input, reopened
from .tally import Tally
from .walk import Job


class Sink:
    """Where one file's output goes: an atomic temp file, stdout, or nowhere (dry run).

    An output file is only created at the first chunk that changes something: until then
    the output is the input's own bytes, so nothing is written (an unchanged file is then
    copied, or left in place). At that first change the unchanged part is copied from the
    input, checked against a digest of what was read the first time (:class:`~.deferred.Deferred`,
    as a Dask piece's output starts).
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
        self.output: Deferred[AtomicOutput] = Deferred(self._open, self._reopen)
        """The output file, opened at the first change (nothing written before)."""
        self.stream: BinaryIO | None = None
        self.kept: bytearray | None = bytearray() if keep and mode == "check" else None
        """A dry run's output, kept for ``on_output`` (``--check --diff``)."""
        self.to_file = mode != "check" and job.dst is not None
        """The output is a file (``--out`` or in place), created at the first change."""
        if mode != "check" and job.dst is None:
            assert stdout is not None, "only stdout mode has inputs without a destination"
            self.stream = stdout
        self.tally = Tally()
        """The file's counts so far."""

    @property
    def atomic(self) -> AtomicOutput | None:
        """The output file, once started."""
        return self.output.out

    def write(self, b: bytes, changed: bool, tmp: str | None = None) -> None:
        """Write a chunk's output (``changed``: it differs from the chunk's input bytes); ``tmp``:
        a worker wrote it (changed) to this temporary, taken over or appended and removed."""
        output = self.output
        if tmp is not None:
            assert self.to_file and self.job.dst is not None, "a worker writes a file's output only"
            if output.out is None and not output.unchanged.size:  # the worker's temporary starts the output: no copy
                perm = self.job.perm if self.job.perm >= 0 else None
                output.out = AtomicOutput.adopt(tmp, self.job.dst, perm)
                return
            (output.out if output.out is not None else output.start()).append_file(tmp)
            return
        if self.stream is not None:
            self.stream.write(b)
            return
        if self.kept is not None:
            self.kept += b
        if self.to_file:  # stdin cannot be read again: its output is written as it comes
            output.write(b, changed or self.job.src is None)

    def _open(self) -> AtomicOutput:
        job = self.job
        assert job.dst is not None
        return AtomicOutput(job.dst, job.gz, self.cleaned, -1 if job.gz else job.size)

    def _reopen(self) -> list[Any]:
        assert self.job.src is not None
        return reopened(open_input(self.job.src), self.limits, self.job.gz)
