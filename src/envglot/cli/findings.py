"""``--output-format text|json|sarif|github``: diagnostics, violations and errors for machines.

One module for every command that reports findings (``convert``, ``validate``, ``migrate``).
``text`` is each command's own human output; the other formats replace it:

- ``json``: one JSON array of objects ``{file, line, path, rule, severity, message}``;
- ``sarif``: one SARIF 2.1.0 log whose rules are derived from the catalogues (every
  diagnostic kind of :class:`~envglot.diagnostics.Kind`, every dialect's contract, every
  :class:`~envglot.errors.EnvglotError` class), help text from their docstrings;
- ``github``: GitHub Actions workflow commands (``::warning file=…,line=…,title=…::…``),
  one per finding, printed as they come.

``line`` is the line of the JSON Lines record (1 for a whole-file document).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Literal
from urllib.parse import quote

import click
import msgspec

from ..diagnostics import Diagnostic, Kind, kind_help
from ..errors import EnvglotError
from ..excerpt import MESSAGE_LIMIT, excerpt
from .common import kind_of_error
from .inputs import STDIN_NAME
from .outputs import echo

__all__ = [
    "FORMATS",
    "Finding",
    "Findings",
    "Severity",
    "output_format_option",
    "rules",
]

FORMATS = ("text", "json", "sarif", "github")
"""The names ruff uses for the same formats."""
Severity = Literal["error", "warning", "note"]
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
CONTRACT_PREFIX = "contract/"
"""A violation's rule: ``contract/<dialect>`` (``contract/json`` when the input is not JSON)."""


class Finding(msgspec.Struct, frozen=True):
    """One diagnostic, violation or error at a place in an input."""

    file: str
    line: int
    """JSON Lines record line; 1 for a whole-file document."""
    path: str | None
    """JSON path in the document (``None`` when the error concerns the whole input)."""
    rule: str
    """A diagnostic kind, ``contract/<dialect>``, or an error kind (``parse_error``)."""
    severity: Severity
    message: str


def _doc(obj: Any) -> str:
    text = (obj.__doc__ or "").strip()
    return " ".join(text.split("\n\n")[0].split())


def _error_classes() -> Iterator[type[EnvglotError]]:
    """The error classes of :mod:`envglot.errors` (the ones a record can fail with), by name."""
    seen: list[type[EnvglotError]] = [EnvglotError]
    i = 0
    while i < len(seen):
        seen.extend(c for c in seen[i].__subclasses__() if c not in seen)
        i += 1
    return iter(sorted((c for c in seen if c.__module__ == EnvglotError.__module__), key=lambda c: c.__name__))


def rules() -> tuple[tuple[str, str, Severity], ...]:
    """Every rule a finding can name: ``(id, help text, default severity)``, derived from the catalogues."""
    from ..dialect import registered
    from ..migration.constants import INTERNAL_ERROR

    out: list[tuple[str, str, Severity]] = [(k.value, kind_help()[k], "warning") for k in Kind]
    out += [
        (f"{CONTRACT_PREFIX}{d.name}", f"Breaks the {d.name} contract: {d.description}", "error") for d in registered()
    ]
    out.append((f"{CONTRACT_PREFIX}json", "The input is not JSON (no dialect's contract applies).", "error"))
    out += [(kind_of_error(c.__name__), _doc(c), "error") for c in _error_classes()]
    out.append((kind_of_error(INTERNAL_ERROR), "A record rejected by a bug in envglot, not by bad input.", "error"))
    return tuple(out)


def _escape(text: str, prop: bool = False) -> str:
    """Escape a workflow command's message (``prop``: a property value, which also escapes ``:`` and ``,``)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


_GITHUB = {"error": "error", "warning": "warning", "note": "notice"}


def github_line(f: Finding) -> str:
    """One workflow command: ``::warning file=F,line=L,title=RULE::PATH: message``."""
    props = f"file={_escape(f.file, True)},line={f.line},title={_escape(f.rule, True)}"
    text = f"{f.path}: {f.message}" if f.path else f.message
    return f"::{_GITHUB[f.severity]} {props}::{_escape(text)}"


def _uri(name: str) -> str:
    return quote(name.replace("\\", "/"), safe="/")


def sarif_log(findings: list[Finding], version: str) -> dict[str, Any]:
    """A SARIF 2.1.0 log of ``findings`` (one run, the rules of :func:`rules` plus any unknown one met)."""
    table = list(rules())
    index = {r[0]: i for i, r in enumerate(table)}
    for f in findings:
        if f.rule not in index:  # an error class outside the package (never expected; still reported)
            index[f.rule] = len(table)
            table.append((f.rule, f.rule.replace("_", " "), f.severity))
    results = []
    for f in findings:
        location: dict[str, Any] = {}
        if f.file != STDIN_NAME:
            location["physicalLocation"] = {
                "artifactLocation": {"uri": _uri(f.file)},
                "region": {"startLine": f.line},
            }
        if f.path:
            location["logicalLocations"] = [{"fullyQualifiedName": f.path, "kind": "member"}]
        result: dict[str, Any] = {
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": f.severity,
            "message": {"text": f"{f.path}: {f.message}" if f.path else f.message},
        }
        if location:
            result["locations"] = [location]
        results.append(result)
    driver = {
        "name": "envglot",
        "version": version,
        "informationUri": "https://pypi.org/project/envglot/",
        "rules": [
            {
                "id": rid,
                "shortDescription": {"text": text},
                "help": {"text": text},
                "defaultConfiguration": {"level": level},
            }
            for rid, text, level in table
        ],
    }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{"tool": {"driver": driver}, "results": results}]}


class Findings:
    """Collects the findings of a run and prints them in ``fmt`` (``github`` as they come).

    ``echo`` prints one line of output (the command's stdout, or stderr when stdout
    carries converted documents). Text is the command's own business: :attr:`active` is
    False for it and nothing is collected.
    """

    def __init__(self, fmt: str, echo: Callable[[str], None]) -> None:
        self.fmt = fmt
        self.echo = echo
        self.items: list[Finding] = []

    @property
    def active(self) -> bool:
        """True for a machine format (the text output is then replaced)."""
        return self.fmt != "text"

    def add(self, file: str, line: int | None, path: str | None, rule: str, severity: Severity, message: str) -> None:
        """Record one finding (messages and paths are cut to the usual length)."""
        if not self.active:
            return
        f = Finding(
            file=file,
            line=1 if line is None else line,
            path=None if path is None else excerpt(path, MESSAGE_LIMIT),
            rule=rule,
            severity=severity,
            message=excerpt(message, MESSAGE_LIMIT),
        )
        if self.fmt == "github":
            self.echo(github_line(f))
        else:
            self.items.append(f)

    def diagnostic(self, file: str, line: int | None, d: Diagnostic, severity: Severity) -> None:
        self.add(file, line, d.path, d.kind.value, severity, d.message)

    def error(self, file: str, line: int | None, exc: EnvglotError) -> None:
        self.add(file, line, exc.path, kind_of_error(type(exc).__name__), "error", exc.message)

    def close(self) -> None:
        """Print the collected findings (``json``, ``sarif``); ``github`` has printed them already."""
        from .. import __version__

        if self.fmt == "json":
            self.echo(msgspec.json.format(msgspec.json.encode(self.items), indent=2).decode())
        elif self.fmt == "sarif":
            self.echo(msgspec.json.format(msgspec.json.encode(sarif_log(self.items, __version__)), indent=2).decode())


def output_format_option(f: Any) -> Any:
    """``--output-format text|json|sarif|github`` (default ``text``)."""
    return click.option(
        "--output-format",
        "output_format",
        type=click.Choice(FORMATS),
        default="text",
        show_default=True,
        help="How diagnostics, violations and errors are printed: text for people, json (one array), "
        "sarif (SARIF 2.1.0, for code scanning) or github (workflow commands: annotations).",
    )(f)


def stream_echo(to_stderr: bool) -> Callable[[str], None]:
    """An ``echo`` for :class:`Findings`: stdout (write errors end the run with 74), or stderr."""
    if to_stderr:
        return lambda line: click.echo(line, err=True)
    return echo
