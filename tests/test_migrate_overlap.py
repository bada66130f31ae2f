"""``-j 1`` reads a file a block ahead and writes a chunk's output behind the next chunk's conversion,
in two threads (``migration/overlap.py``): the same outputs, report, rejects and per-record details
as the same calls made one after the other, and the same error where one of them fails (a write's
before the next read's)."""

from __future__ import annotations

import errno
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envglot.migration import Migrator, migrate, overlap, partitions, pieceout
from envglot.migration.executors import Inline

sys.path.insert(0, str(Path(__file__).parent))

from migrate_corpus import mixed_records

CHUNK = 4096


def _input(root: Path) -> Path:
    """A file of many chunks: records of every example, corrupt lines, blank lines, CRLF, a last
    line without its terminator."""
    lines = []
    for i, (_, rec) in enumerate(mixed_records(900, pad=60)):
        if i % 37 == 5:
            lines.append(b"not json " + str(i).encode())
        if i % 53 == 7:
            lines.append(b"   ")
        lines.append(rec + (b"\r" if i % 41 == 3 else b""))
    path = root / "in" / "mixed.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\n".join(lines))
    assert path.stat().st_size > 40 * CHUNK
    return path


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _facts(rep: Any) -> dict[str, Any]:
    d = rep.to_dict()
    for k in ("elapsed_s", "records_per_s", "mb_per_s", "rejects_file", "temp_files_removed"):
        d.pop(k)
    d["changed"] = [{k: v for k, v in c.items() if k != "output"} for c in d["changed"]]
    return d


def _run(
    src: Path, out: Path, overlaps: bool, monkeypatch: pytest.MonkeyPatch, **kw: Any
) -> tuple[Any, list[tuple[str, int | None, Any]]]:
    """A ``-j 1`` migration with the threads (``overlaps``) or without; the details handed over."""
    details: list[tuple[str, int | None, Any]] = []
    with monkeypatch.context() as m:
        m.setattr(Inline, "overlaps", overlaps)
        rep = migrate(
            [src],
            out=out,
            jobs=1,
            chunk_bytes=CHUNK,
            rejects=out.parent / f"{out.name}.rejects.jsonl",
            on_diagnostic=lambda f, line, d: details.append((f, line, d)),
            **kw,
        )
    return rep, details


def _threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads the overlap starts, as they start."""
    started: list[str] = []
    real = threading.Thread.start

    def start(self: threading.Thread) -> None:
        started.append(self.name)
        real(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    return started


def test_the_threads_write_what_the_calls_one_after_the_other_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _input(tmp_path)
    started = _threads(monkeypatch)
    rep, details = _run(src, tmp_path / "a", True, monkeypatch)
    assert started == ["envglot-read-ahead", "envglot-write-behind"]
    started.clear()
    ref, ref_details = _run(src, tmp_path / "b", False, monkeypatch)
    assert started == []
    assert rep.exit_code == ref.exit_code == 1 and rep.rejected > 20 and rep.converted > 800
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    assert (tmp_path / "a.rejects.jsonl").read_bytes() == (tmp_path / "b.rejects.jsonl").read_bytes()
    assert _facts(rep) == _facts(ref)
    assert details == ref_details and len(details) > 1000
    assert not [t for t in threading.enumerate() if t.name.startswith("envglot-")]  # both joined


def test_a_dry_run_and_a_file_of_one_chunk_start_no_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _input(tmp_path)
    started = _threads(monkeypatch)
    rep = migrate([src], check=True, jobs=1, chunk_bytes=CHUNK)
    assert started == ["envglot-read-ahead"] and rep.records > 900
    started.clear()
    migrate([src], out=tmp_path / "out", jobs=1)  # one chunk (1 MiB): nothing to overlap
    assert started == []


def _failing(after: int, exc: Callable[[], BaseException], real: Callable[..., Any]) -> Callable[..., Any]:
    """``real`` that raises ``exc()`` from its call number ``after`` on."""
    calls = [0]

    def call(*args: Any) -> Any:
        calls[0] += 1
        if calls[0] >= after:
            raise exc()
        return real(*args)

    return call


def _failing_run(
    src: Path, out: Path, overlaps: bool, fails: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, list[tuple[str, int | None, Any]]]:
    """:func:`_run` with the output's 5th write failing (disk full), the input's 6th read (EIO), or both."""
    with monkeypatch.context() as m:
        if fails in ("write", "both"):
            full = _failing(5, lambda: pieceout.WriteError("No space left on device"), pieceout.TempWriter.write)
            m.setattr(pieceout.TempWriter, "write", full)
        if fails in ("read", "both"):
            real_stream = partitions._stream

            def stream(spec: Any, mig: Migrator, piece: Any, fh: Any, *rest: Any) -> None:
                class Failing:
                    read = staticmethod(_failing(6, lambda: OSError(errno.EIO, "Input/output error"), fh.read))

                real_stream(spec, mig, piece, Failing(), *rest)

            m.setattr(partitions, "_stream", stream)
        return _run(src, out, overlaps, monkeypatch)


@pytest.mark.parametrize("fails", ["write", "read", "both"])
def test_an_error_is_the_one_the_calls_one_after_the_other_raise(
    fails: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write failing at chunk 5 (disk full), the input's read failing at its 6th block (EIO), or
    both: the file fails with the first error in the calls' order (the write's, 74, when both
    fail), no temporary is left, and the details handed over are those of the chunks written —
    with the threads as without."""
    src = _input(tmp_path)
    rep, details = _failing_run(src, tmp_path / "out", True, fails, monkeypatch)
    ref, ref_details = _failing_run(src, tmp_path / "ref", False, fails, monkeypatch)
    code = 66 if fails == "read" else 74
    for r in (rep, ref):
        assert [f.exit_code for f in r.failed] == [code] and r.exit_code == code
        assert ("Input/output error" if fails == "read" else "No space left on device") in r.failed[0].error
    assert rep.failed[0].error == ref.failed[0].error.replace("/ref/", "/out/")
    assert rep.stopped == (ref.stopped or "").replace("/ref/", "/out/") or rep.stopped is ref.stopped is None
    assert not [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert details == ref_details
    assert details and max(line or 0 for _, line, _ in details) < 250  # the chunks before the failing one


def test_read_ahead_hands_back_blocks_end_and_error_in_order() -> None:
    blocks = [b"ab", b"cd", b"e"]

    class Source:
        def read(self, size: int) -> bytes:
            assert size == 2
            if not blocks:
                raise OSError(errno.EIO, "gone")
            return blocks.pop(0)

    ahead = overlap.ReadAhead(Source(), 2)
    try:
        assert [ahead.read(2), ahead.read(2), ahead.read(2)] == [b"ab", b"cd", b"e"]
        with pytest.raises(OSError, match="gone"):
            ahead.read(2)
        assert ahead.read(2) == b""
    finally:
        ahead.close()
    assert not ahead.thread.is_alive()


def test_read_ahead_closed_early_stops_its_thread() -> None:
    class Endless:
        def read(self, size: int) -> bytes:
            return b"x" * size

    ahead = overlap.ReadAhead(Endless(), 8)
    assert ahead.read(8) == b"x" * 8
    ahead.close()
    assert not ahead.thread.is_alive()


def test_write_behind_raises_a_writes_error_when_waited_for() -> None:
    written: list[bytes] = []

    class Sink:
        def write(self, b: bytes, changed: bool) -> None:
            if b == b"bad":
                raise OSError(errno.ENOSPC, "full")
            written.append(b)

    behind = overlap.WriteBehind(Sink())
    try:
        behind.write(b"one", True)
        behind.wait()
        behind.write(b"bad", True)
        with pytest.raises(OSError, match="full"):
            behind.wait()
        behind.wait()  # nothing in flight: no error twice
    finally:
        behind.close()
    assert written == [b"one"] and not behind.thread.is_alive()
