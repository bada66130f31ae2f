"""Helpers shared by the CLI commands: dialect and policy options, mapping overlays,
``--context``, diagnostics on stderr and in ``--log`` files, and the run's exit status.

Everything here is usable by any command (``migrate`` included): nothing is specific to
one command. Inputs are :mod:`envglot.cli.inputs`, outputs :mod:`envglot.cli.outputs`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import click
import msgspec

from ..canonical import Envelope
from ..diagnostics import Diagnostic
from ..errors import EnvglotError, MappingError, UnknownDialectError, UnsupportedError
from ..excerpt import MESSAGE_LIMIT, excerpt
from ..introspect import struct_fields
from ..limits import MAX_DEPTH, MAX_DEPTH_CEILING
from ..mappings import Mappings, mappings_for
from ..options import Options
from ..policy import Policy
from ..registry import Registry, bundled
from . import exits
from .exits import die
from .outputs import Output, Stdout, output_failed, writer_for

if TYPE_CHECKING:
    from .findings import Findings

__all__ = [
    "DialectType",
    "LogWriter",
    "RunStatus",
    "Stderr",
    "context_keys",
    "error_kind",
    "load_mappings",
    "make_policy",
    "mappings_option",
    "outcome_ok",
    "parse_context",
    "policy_options",
    "registry_of",
    "set_registry",
]

_ANY = msgspec.json.Decoder()
_RAW = msgspec.json.Decoder(msgspec.Raw)
_ENC = msgspec.json.Encoder()


# --- options -----------------------------------------------------------------------------


_REGISTRY_KEY = "envglot.registry"
"""Where a command's context keeps the dialects its ``--mappings`` declare (``click.Context.meta``)."""


def registry_of(ctx: click.Context | None) -> Registry:
    """The dialects a command knows: the bundled ones plus those its ``--mappings`` declare."""
    reg = ctx.meta.get(_REGISTRY_KEY) if ctx is not None else None
    return reg if isinstance(reg, Registry) else bundled()


def set_registry(ctx: click.Context, registry: Registry | None) -> None:
    """Make ``registry`` the one :func:`registry_of` gives for ``ctx`` (``None``: forget it)."""
    if registry is None:
        ctx.meta.pop(_REGISTRY_KEY, None)
    else:
        ctx.meta[_REGISTRY_KEY] = registry


class DialectType(click.ParamType):
    """A dialect name (aliases accepted, normalized); unknown names are usage errors with a did-you-mean.

    The names are the bundled dialects' and those the command's ``--mappings`` declare
    (:func:`registry_of`).

    Args:
        writable: only dialects with a writer (for ``--to``).
        auto: also accept ``auto`` (returned as ``None``: detect per document).
    """

    name = "dialect"

    def __init__(self, *, writable: bool = False, auto: bool = False) -> None:
        self.writable = writable
        self.auto = auto

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str | None:
        if value is None:
            return None
        if self.auto and value == "auto":
            return None
        reg = registry_of(ctx)
        try:
            unit = reg.get(str(value))
        except UnknownDialectError as exc:
            self.fail(str(exc), param, ctx)
        if self.writable and not unit.shape.writable:
            self.fail(
                f"{unit.name} is a read-only source dialect; write one of {', '.join(reg.writable_names())}", param, ctx
            )
        return unit.name

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
        from click.shell_completion import CompletionItem

        reg = registry_of(ctx)
        names = reg.writable_names() if self.writable else reg.names()
        return [CompletionItem(n) for n in (*names, *(("auto",) if self.auto else ())) if n.startswith(incomplete)]

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "DIALECT"


def _declare(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    """Compile the dialects declared among the ``--mappings`` files into this command's registry
    before any other option is parsed (eager), so ``-t NAME`` and ``-f NAME`` know them; exits
    65 on a bad declaration. Nothing is registered for the process."""
    from ..declared import with_declarations

    try:
        set_registry(ctx, with_declarations(value or ())[0])
    except MappingError as exc:
        die(str(exc), exits.EX_DATAERR)
    return value


def mappings_option(f: Any) -> Any:
    """The repeatable ``--mappings FILE`` option (overlay tables or dialect declarations)."""
    return click.option(
        "--mappings",
        "mappings",
        multiple=True,
        metavar="FILE",
        is_eager=True,
        callback=_declare,
        help="Mapping overlay TOML, or a dialect declared in TOML (repeatable; later files win). "
        "See `envglot mappings init` and docs/declared-dialects.md.",
    )(f)


def detection_options(f: Any) -> Any:
    """``--strict-detect`` and ``--max-depth``, shared by the commands that read envelopes."""
    f = click.option(
        "--max-depth",
        type=click.IntRange(min=1, max=MAX_DEPTH_CEILING),
        default=MAX_DEPTH,
        show_default=True,
        help="Refuse input nested deeper than this (objects and arrays).",
    )(f)
    return click.option(
        "--strict-detect",
        is_flag=True,
        help="Refuse documents without any dialect's markers instead of reading them as a legacy-v1 bare payload.",
    )(f)


def unreadable(path: str, what: str = "mapping overlay") -> str | None:
    """Why the file ``path`` cannot be read (missing, unreadable, not a regular file), or None."""
    from ..tomlfile import open_regular

    try:
        os.close(open_regular(path, what))
    except EnvglotError as exc:
        return exc.message
    return None


def load_mappings(paths: Sequence[str]) -> Mappings:
    """The bundled tables plus overlays; exits 66 if an overlay is unreadable, 65 if invalid."""
    for p in paths:
        why = unreadable(p)
        if why is not None:
            die(why, exits.EX_NOINPUT, p)
    try:
        return mappings_for(list(paths))
    except MappingError as exc:
        die(str(exc), exits.EX_DATAERR)


def context_keys() -> tuple[str, ...]:
    """Names accepted by ``--context``: canonical envelope fields and ``workspace.*``."""
    nested = ("workspace", "pagination", "fidelity")
    out: list[str] = []
    for f in struct_fields(Envelope):
        if f.name in ("ok", "payload", "problems", "warnings", "next_steps", "extras", "residue"):
            continue
        if f.name in nested:
            sub = struct_fields(_nested_type(f.name))
            out += [f"{f.name}.{s.name}" for s in sub if s.name != "extra"]
        else:
            out.append(f.name)
    return tuple(out)


def _nested_type(name: str) -> Any:
    from .. import canonical

    return {"workspace": canonical.Workspace, "pagination": canonical.Pagination, "fidelity": canonical.Fidelity}[name]


def parse_context(items: Sequence[str]) -> dict[str, Any] | None:
    """``KEY=VALUE`` (a string) and ``KEY:=JSON`` (any JSON value) pairs as a context dict.

    Raises:
        click.BadParameter: malformed pair, unknown key or invalid JSON.
    """
    if not items:
        return None
    known = context_keys()
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE or KEY:=JSON", param_hint="'--context'")
        parsed: Any = value
        if key.endswith(":"):
            key = key[:-1]
            try:
                parsed = _ANY.decode(value)
            except msgspec.DecodeError as exc:
                raise click.BadParameter(f"{key}:= needs a JSON value: {exc}", param_hint="'--context'") from None
        if key not in known:
            import difflib

            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"
            raise click.BadParameter(f"unknown context key {key!r}{hint}", param_hint="'--context'")
        out[key] = parsed
    return out


# --- diagnostics -------------------------------------------------------------------------


def _bounded(text: str) -> str:
    """An input-derived message or path as printed and logged: at most MESSAGE_LIMIT characters."""
    return excerpt(text, MESSAGE_LIMIT)


def _where(name: str, line: int | None) -> str:
    return f"{name}:{line}: " if line is not None else f"{name}: "


def error_kind(exc: EnvglotError) -> str:
    """The ``kind`` of an error record in ``--log``: the exception class in snake_case."""
    return kind_of_error(type(exc).__name__)


def kind_of_error(class_name: str) -> str:
    """``ParseError`` -> ``parse_error`` (the ``kind`` of an error in ``--log``)."""

    return re.sub(r"(?<!^)(?=[A-Z])", "_", class_name).lower()


class LogWriter:
    """``--log FILE``: one JSON object per line for every diagnostic and error of the run.

    Fields: ``file``, ``line`` (JSON Lines input, else null), ``kind`` (a diagnostic kind,
    or ``parse_error``/``detect_error``/``unsupported_error``/... for errors), ``path``,
    ``message``, ``dialect`` and ``lossy``. Written atomically when the run ends; ``-`` is stdout.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._out: Output
        if path == "-":  # stdout
            self._out = Stdout()
            return
        try:
            self._out = writer_for(path)
        except OSError as exc:
            die(f"cannot write log: {exc.strerror}", exits.EX_IOERR, path)

    def record(
        self, name: str, line: int | None, kind: str, path: str | None, message: str, dialect: str | None, lossy: bool
    ) -> None:
        rec = {
            "file": name,
            "line": line,
            "kind": kind,
            "path": None if path is None else excerpt(path, MESSAGE_LIMIT),
            "message": excerpt(message, MESSAGE_LIMIT),
            "dialect": dialect,
            "lossy": lossy,
        }
        try:
            self._out.write(_ENC.encode(rec) + b"\n")
        except OSError as exc:
            self._failed(exc)

    def close(self) -> None:
        try:
            self._out.commit()
        except OSError as exc:
            self._failed(exc)

    def _failed(self, exc: OSError) -> NoReturn:
        if isinstance(self._out, Stdout):
            output_failed(None, exc)  # a closed pipe ends the run quietly (141)
        die(f"cannot write log: {exc.strerror}", exits.EX_IOERR, self.path)

    def abort(self) -> None:
        """Drop the log (an interrupted run): an existing FILE stays as it was."""
        self._out.abort()


def policy_options(f: Any) -> Any:
    """``--select`` / ``--ignore KIND[:PATH]``: which diagnostics count as loss (see :class:`~envglot.Policy`)."""
    f = click.option(
        "--ignore",
        "ignore",
        multiple=True,
        metavar="KIND[:PATH]",
        help="Never count these diagnostics as loss (repeatable; PATH: a JSON path, below it, or a * glob).",
    )(f)
    return click.option(
        "--select",
        "select",
        multiple=True,
        metavar="KIND[:PATH]",
        help="Count only these diagnostics as loss (repeatable; default: every lossy kind).",
    )(f)


def make_policy(level: str, select: Sequence[str], ignore: Sequence[str]) -> Policy:
    """The :class:`~envglot.Policy` of ``--unsupported/--select/--ignore`` (a bad selector is a usage error)."""
    try:
        return Policy(level=level, select=tuple(select), ignore=tuple(ignore))  # type: ignore[arg-type]
    except EnvglotError as exc:
        raise click.UsageError(str(exc)) from None


def make_options(level: str, select: Sequence[str], ignore: Sequence[str], **fields: Any) -> Options:
    """The one :class:`~envglot.Options` of a command's flags (project configuration included:
    it arrives as the flags' defaults); a bad value is a usage error."""
    policy = make_policy(level, select, ignore)
    try:
        return Options(unsupported=policy, **fields)
    except EnvglotError as exc:
        raise click.UsageError(str(exc)) from None


class Stderr:
    """Human-readable messages on stderr, mirrored into ``--log`` when given.

    By default a run ends with one tally of the diagnostics ``policy`` counts as loss, per
    kind and source path (:meth:`tally`); with ``verbose`` every diagnostic of every record
    is printed as ``[FILE:LINE: ]warning: KIND: $.path: message`` (counted as loss) or
    ``note: KIND: ...`` (the rest). ``quiet`` (``--unsupported ignore``) prints neither.
    Errors print as ``FILE[:LINE]: error: message (at $.path)``.
    """

    __slots__ = ("counts", "documents", "findings", "log", "policy", "quiet", "verbose")

    def __init__(
        self,
        *,
        verbose: bool = False,
        quiet: bool = False,
        log: LogWriter | None = None,
        policy: Policy | None = None,
        findings: Findings | None = None,
    ) -> None:
        self.findings = findings if findings is not None and findings.active else None
        """A machine ``--output-format``: diagnostics and errors go there instead of the text."""
        self.verbose = verbose and self.findings is None
        self.quiet = quiet or self.findings is not None
        self.log = log
        self.policy = policy if policy is not None else Policy()
        self.counts: dict[tuple[str, str], int] = {}
        self.documents = 0
        """Documents with at least one diagnostic counted as loss."""

    def diagnostics(self, name: str, line: int | None, diags: Iterable[Diagnostic]) -> bool:
        """Show or tally one record's diagnostics; True if any counts as loss under the policy."""
        prefix = _where(name, line) if line is not None else ""
        counted = False
        for d in diags:
            if self.log is not None:
                self.log.record(name, line, str(d.kind), d.path, d.message, d.dialect, d.lossy)
            selected = self.policy.selects(d)
            counted |= selected
            if self.findings is not None:
                self.findings.diagnostic(name, line, d, "warning" if selected else "note")
            if selected:
                key = (d.kind.value, _bounded(d.path))
                self.counts[key] = self.counts.get(key, 0) + 1
            if self.verbose and not (selected and self.quiet):
                label = "warning" if selected else "note"
                click.echo(f"{prefix}{label}: {d.kind}: {_bounded(d.path)}: {_bounded(d.message)}", err=True)
        self.documents += counted
        return counted

    def tally(self, documents: int) -> None:
        """The closing tally: documents with loss, then one ``COUNT  KIND  PATH`` line per kind and path."""
        if self.quiet or not self.counts:
            return
        rows = sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))
        width = max(len(k) for (k, _), _ in rows)
        hint = "" if self.verbose else "; -v shows each"
        click.echo(
            f"warning: {self.documents:,} of {documents:,} document{'' if documents == 1 else 's'} "
            f"lost or changed information{hint}:",
            err=True,
        )
        digits = len(f"{rows[0][1]:,}")
        for (kind, path), n in rows:
            click.echo(f"  {n:>{digits},}  {kind:<{width}}  {path}", err=True)

    def note(self, name: str, line: int | None, message: str) -> None:
        """A remark shown only with ``-v`` (not logged)."""
        if self.verbose:
            prefix = _where(name, line) if line is not None else ""
            click.echo(f"{prefix}note: {message}", err=True)

    def refused(self, name: str, line: int | None, exc: UnsupportedError, why: str) -> None:
        """A document refused for loss: each refused diagnostic, then one error line."""
        diags: list[Diagnostic] = [d for d in exc.diagnostics if isinstance(d, Diagnostic)]
        prefix = _where(name, line) if line is not None else ""
        for d in diags:
            if self.log is not None:
                self.log.record(name, line, str(d.kind), d.path, d.message, d.dialect, d.lossy)
            if self.findings is not None:
                self.findings.diagnostic(name, line, d, "error")
            else:
                click.echo(f"{prefix}warning: {d.kind}: {_bounded(d.path)}: {_bounded(d.message)}", err=True)
        exc.located(source=name, line=line)
        if self.log is not None:
            self.log.record(name, line, error_kind(exc), exc.path, exc.message, exc.dialect, True)
        if self.findings is not None:
            self.findings.error(name, line, exc)
            return
        n = len(diags)
        click.echo(f"{_where(name, line)}error: {why}: {n} lossy diagnostic{'' if n == 1 else 's'}", err=True)

    def error(self, name: str, line: int | None, exc: EnvglotError) -> None:
        exc.located(source=name, line=line)
        if self.log is not None:
            self.log.record(name, line, error_kind(exc), exc.path, exc.message, exc.dialect, False)
        if self.findings is not None:
            self.findings.error(name, line, exc)
            return
        message = _bounded(exc.message)
        if exc.path and exc.path not in exc.message:
            message += f" (at {_bounded(exc.path)})"
        click.echo(f"{_where(name, line)}error: {message}", err=True)


class RunStatus:
    """What happened in a run, and the exit code it earns (74 > 66 > 65 > 1 > 0).

    Attributes:
        records: documents read.
        bad: records that are not valid input (exit 65).
        failed: records refused or failing a check (exit 1): lossy with ``--unsupported
            raise``, validation failures.
        lossy: records whose conversion lost information (exit 1 with ``--fail-if-lossy``).
        missing: inputs that could not be read (exit 66).
    """

    __slots__ = ("bad", "failed", "lossy", "missing", "records")

    def __init__(self) -> None:
        self.records = self.bad = self.failed = self.lossy = self.missing = 0

    def exit_code(self, fail_if_lossy: bool = False) -> int:
        if self.missing:
            return exits.EX_NOINPUT
        if self.bad:
            return exits.EX_DATAERR
        if self.failed or (fail_if_lossy and self.lossy):
            return exits.EX_FAILED
        return exits.EX_OK


def outcome_ok(envelope: bytes, dialect: str, mappings: Mappings) -> bool:
    """The success flag of an envelope of ``dialect`` (read through its reader)."""
    from ..api import read

    return read(envelope, dialect, mappings=mappings).ok
