"""Every public entry point on one input, and the properties each outcome must satisfy.

A :class:`Probe` is one entry point with fixed options (``convert`` to dotbot with
preserve and ``unsupported="raise"``, ``mcp.wrap`` to result, ``Migrator.record``...).
Running it on an :class:`Input` returns :class:`Failure` records; a failure's ``group``
names the entry point, what went wrong and where (the innermost envglot frame of an
exception, the head of a message), so a campaign counts each bug once and keeps its
smallest reproducer. The properties:

- only ``EnvglotError`` (or a subclass) is raised (``Migrator.record`` and ``validate``
  document that they raise nothing for bad data: there, nothing at all);
- every output is valid UTF-8 JSON holding no lone surrogate, and validates as a
  document of its target (``envglot.validate(output, dialect=target)``);
- the same input and options give the same bytes (each call is made twice);
- the outcome never flips: if the input (or its MCP ``isError``, or a JSON-RPC ``error``)
  says failure, the output says failure; the proxy's ``Rewriter.result`` answers a failure
  for a CallToolResult flagged ``isError`` and for one whose envelope the core refuses;
- a crafted ``_envglot`` residue in the input changes nothing: with preserve off the
  output equals the output of the input without it; with preserve on, equal once the
  residues of both outputs are removed.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

import envglot
from envglot import EnvglotError, mcp
from envglot import inspect as envinfo
from envglot.diagnostics import DISCARD
from envglot.dialect import get_dialect, registered, writable_names
from envglot.limits import check_input
from envglot.pipeline import locate
from envglot.proxy.rewrite import Rewriter

from .mutator import BOM, Case, says_failure
from .tree import parse, to_python

__all__ = ["PROBES", "SDK_PROBES", "TARGETS", "Failure", "Input", "Probe", "by_name", "calls", "run_all"]

TARGETS = writable_names()
LEVELS = ("ignore", "warn", "raise")

_LOGGERS = (logging.getLogger("envglot"), logging.getLogger("envglot.mcp"))
"""Silenced during each call: the "warn" level logs every diagnostic, emits logs every failure."""


@dataclass
class Input:
    """One input as every probe sees it."""

    data: bytes
    tree: Any = None
    """The tree behind ``data`` when ``data`` is exactly its serialization (no framing)."""
    twin: bytes | None = None
    """``data`` without its crafted residue, if it has one."""
    fails: bool = False
    """The input says failure (see :func:`fuzz.mutator.says_failure`)."""
    unbommed: bytes | None = None
    """For an input that is a document behind a UTF-8 BOM: the document alone."""
    checked: dict[tuple[bytes, str, str], Any] = field(default_factory=dict)
    """Outputs already checked for this input (many probes give the same bytes)."""
    own_violations: dict[tuple[str, bool], frozenset[str]] = field(default_factory=dict)
    """Paths where the input itself breaks a target's contract (see :func:`_inherited`), per target."""

    @classmethod
    def of(cls, case: Case) -> Input:
        tree = None if case.framed else case.tree
        fails = not case.framed and says_failure(case.tree) and _envglot_parses(case.data)
        inp = cls(case.data, tree, case.twin_data, fails)
        if case.prefix == BOM and not case.tail and case.cut is None:
            inp.unbommed = case.data[len(BOM) :]
            inp.fails = says_failure(case.tree) and _envglot_parses(inp.unbommed)
        return inp

    @classmethod
    def from_bytes(cls, data: bytes, twin: bytes | None = None) -> Input:
        try:
            tree = parse(data)
        except (ValueError, RecursionError):
            return cls(data, None, twin, False)
        return cls(data, tree, twin, says_failure(tree) and _envglot_parses(data))


def _envglot_parses(data: bytes) -> bool:
    """True if the input is JSON as envglot reads it (msgspec refuses lone surrogate escapes,
    which Python's parser takes): only then does the input say anything, failure included."""
    try:
        envglot.detect(data)
    except EnvglotError as exc:
        return "invalid JSON" not in exc.message and "invalid UTF-8" not in exc.message
    return True


_CALLS = [0]


def calls() -> int:
    """Entry-point calls made so far in this process."""
    return _CALLS[0]


@dataclass
class Failure:
    """One property broken by one probe on one input."""

    group: str
    probe: str
    detail: str
    data: bytes


_HEX = re.compile(r"0x[0-9a-f]+|(?<![A-Za-z-])\d+")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")


def _head(msg: str, n: int = 70) -> str:
    """A message head with numbers and quoted text blanked, so one bug is one group."""
    return _QUOTED.sub("'…'", _HEX.sub("N", msg.splitlines()[0] if msg else ""))[:n]


def _where(exc: BaseException) -> str:
    """``module:function:line`` of the innermost envglot frame of an exception."""
    where = "?"
    for fr in traceback.extract_tb(exc.__traceback__):
        if "/envglot/" in fr.filename and "/tests/" not in fr.filename:
            where = f"{fr.filename.rsplit('/envglot/', 1)[1]}:{fr.name}"
    return where


class _Broken(Exception):  # noqa: N818 - a broken property, not an error of the code under test
    """A property failed (raised inside a probe, turned into a Failure).

    ``group`` is what identifies the bug (defaults to the detail's head); ``detail`` may
    add what varies between inputs (the target, a value).
    """

    def __init__(self, kind: str, detail: str, group: str | None = None) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.group = group if group is not None else _head(detail, 90)


# ---- output checks ----------------------------------------------------------------------

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _json(out: bytes, what: str = "output") -> Any:
    """The output parsed strictly: UTF-8, JSON, no NaN/Infinity, no lone surrogate."""
    if not isinstance(out, bytes | bytearray):
        raise _Broken("output-type", f"{what} is a {type(out).__name__}, not bytes")
    try:
        text = bytes(out).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Broken("output-not-utf8", f"{what} is not UTF-8: {exc.reason} at byte {exc.start}") from None
    try:
        doc = json.loads(text, parse_constant=_no_constant, parse_int=_int)
    except ValueError as exc:
        raise _Broken("output-not-json", f"{what} is not JSON: {exc}") from None
    except RecursionError:
        return None  # deeper than Python's json parser goes: not the subject here
    if _SURROGATE.search(json.dumps(doc, ensure_ascii=False)):
        raise _Broken("output-lone-surrogate", f"{what} holds a lone surrogate escape")
    return doc


def _int(token: str) -> int | str:
    """An integer Python can hold; a longer one (valid JSON, passed through exactly) stays text."""
    return int(token) if len(token) < 4000 else token


def _no_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def _is_failure(doc: Any, target: str) -> bool:
    """The ``target`` document (decoded) says failure: its dialect's outcome flag (``Dialect.failed``)."""
    if not isinstance(doc, dict):
        return False
    try:  # through failed(): an outcome may be a range of values (an override), not one flag value
        return get_dialect(target).failed(msgspec.json.encode(doc))
    except (EnvglotError, msgspec.MsgspecError):  # an outcome failed() cannot read says nothing of failure
        return False


def _check_doc(out: bytes, target: str, inp: Input, what: str = "output") -> Any:
    """Valid JSON, a valid document of ``target``, and the input's failure kept (memoized per input)."""
    key = (bytes(out) if isinstance(out, bytes | bytearray) else b"", target, what)
    if key[0] and key in inp.checked:
        found = inp.checked[key]
        if isinstance(found, _Broken):
            raise _Broken(found.kind, found.detail, found.group)
        return found
    try:
        doc = _check_doc_once(out, target, inp, what)
    except _Broken as b:
        inp.checked[key] = b
        raise
    inp.checked[key] = doc
    return doc


def _check_doc_once(out: bytes, target: str, inp: Input, what: str) -> Any:
    doc = _json(out, what)
    try:
        violations = envglot.validate(out, dialect=target)
    except EnvglotError as exc:
        raise _Broken(
            "output-invalid", f"validate({what}) raised {type(exc).__name__}: {exc}", f"validate raised on {target}"
        ) from None
    for v in violations:
        if v.path in _inherited(inp, target, what == "dict output"):
            continue  # the input, already a target document, broke the same rule: passed through, not made
        raise _Broken(
            "output-invalid",
            f"{what} breaks the {target} contract: {v.path}: {v.message[:200]}",
            f"{target} {_head(v.path, 40)}: {_head(v.message, 60)}",
        )
    if inp.fails and doc is not None and not _is_failure(doc, target):
        raise _Broken(
            "outcome-flip",
            f"the input says failure, the {target} {what} says success",
            "input failure written as success",
        )
    return doc


def _inherited(inp: Input, target: str, dict_form: bool) -> frozenset[str]:
    """The paths where the input, already a ``target`` document, breaks that contract itself
    (judged on its dict form when its bytes are not readable: a dict probe's input).

    Computed once per input and target: an input breaking a rule in thousands of places
    would otherwise be validated again for each violation of each output.
    """
    key = (target, dict_form)
    found = inp.own_violations.get(key)
    if found is None:
        found = inp.own_violations[key] = _own_violations(inp.data, target, inp.tree if dict_form else None)
    return found


def _own_violations(data: bytes, target: str, tree: Any = None) -> frozenset[str]:
    if tree is not None:
        try:
            envglot.detect(data)
        except EnvglotError:
            try:
                data = msgspec.json.encode(to_python(tree))
            except Exception:
                return frozenset()
    try:
        if envglot.detect(data) != target:
            return frozenset()
        # the envelope inside a transport wrapper (MCP, JSON-RPC) is what was passed through
        data = locate(check_input(data)[0], True, False, DISCARD)[0]
        mine = envglot.validate(data, dialect=target)
    except Exception:
        return frozenset()
    return frozenset(v.path for v in mine)


def _strip_residue(out: bytes) -> Any:
    """The output without a residue at any registered dialect's residue slot (``Shape.residue``)."""
    doc = json.loads(out, parse_int=_int)
    for where in sorted({d.shape.residue for d in registered()}):
        *parents, key = where.removeprefix("$.").split(".")
        node: Any = doc
        for seg in parents:
            node = node.get(seg) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(key, None)
    return doc


# ---- probes -----------------------------------------------------------------------------

Call = Callable[[bytes], Any]


@dataclass
class Probe:
    """One entry point with fixed options."""

    name: str
    call: Call
    """Runs the entry point on the input bytes and returns what it gave."""
    check: Callable[[Any, Input], None]
    """Checks one result (raises :class:`_Broken`)."""
    code: str
    """A Python expression calling the entry point on ``D`` (the input bytes)."""
    raises_nothing: bool = False
    """The entry point documents that bad data never raises (not even EnvglotError)."""
    twin: str | None = None
    """``"exact"`` or ``"residue"``: compare with the output for the residue-free twin."""
    deterministic: bool = True

    def run(self, inp: Input, repeat: bool = True) -> list[Failure]:
        """Failures of this probe on ``inp``; ``repeat=False`` skips the second (determinism) call."""
        try:
            return self._run(inp, repeat)
        except _Broken as b:
            return [Failure(f"{b.kind}: {b.group}", self.name, b.detail, inp.data)]

    @property
    def family(self) -> str:
        """The entry point without its options (groups span options)."""
        return self.name.split("[", 1)[0]

    def _call(self, data: bytes) -> tuple[Any, BaseException | None]:
        _CALLS[0] += 1
        for log in _LOGGERS:
            log.disabled = True
        try:
            return self.call(data), None
        except (RecursionError, MemoryError) as exc:
            return None, exc
        except Exception as exc:
            return None, exc
        finally:
            for log in _LOGGERS:
                log.disabled = False

    def _bom(self, inp: Input, out: Any, exc: BaseException | None) -> None:
        """A UTF-8 BOM is accepted (issue 10): the document behind it converts the same."""
        plain, plain_exc = self._call(inp.unbommed or b"")
        if plain_exc is None and exc is not None:
            raise _Broken("bom-refused", f"a document converts; behind a UTF-8 BOM it raises {type(exc).__name__}")
        if plain_exc is None and exc is None and plain != out:
            raise _Broken("bom-changed-output", "a UTF-8 BOM changed the output")

    def _exc(self, exc: BaseException, inp: Input) -> list[Failure]:
        if isinstance(exc, EnvglotError) and not self.raises_nothing:
            return []
        kind = "raised" if not isinstance(exc, EnvglotError) else "raised-documented-never"
        msg = f"{type(exc).__name__}: {exc}"
        detail = f"{kind} {msg[:300]}"
        return [Failure(f"{kind}: {type(exc).__name__} at {_where(exc)}", self.name, detail, inp.data)]

    def _run(self, inp: Input, repeat: bool) -> list[Failure]:
        out, exc = self._call(inp.data)
        if self.twin is not None and inp.unbommed is not None:
            self._bom(inp, out, exc)
        if exc is not None:
            return self._exc(exc, inp)
        self.check(out, inp)
        if self.deterministic and repeat:
            again, exc2 = self._call(inp.data)
            if exc2 is not None or again != out:
                raise _Broken("nondeterministic", "the same input and options gave different results")
        if self.twin is not None and inp.twin is not None:
            other, exc3 = self._call(inp.twin)
            if exc3 is not None:
                raise _Broken("residue-changed-outcome", "the input converts, the same without its residue does not")
            if self.twin == "exact" and other != out:
                raise _Broken("residue-changed-output", "a residue changed the output with preserve off")
            if self.twin == "residue" and _strip_residue(other) != _strip_residue(out):
                raise _Broken(
                    "residue-changed-output", "a residue changed the output (residues removed) with preserve on"
                )
        return []


def _check_target(target: str) -> Callable[[Any, Input], None]:
    def check(out: Any, inp: Input) -> None:
        _check_doc(out, target, inp)

    return check


def _check_str(target: str) -> Callable[[Any, Input], None]:
    def check(out: Any, inp: Input) -> None:
        if not isinstance(out, str):
            raise _Broken("output-type", f"str in, {type(out).__name__} out")
        try:
            raw = out.encode("utf-8")
        except UnicodeEncodeError:
            raise _Broken("output-not-utf8", "the str output holds a lone surrogate") from None
        _check_doc(raw, target, inp)

    return check


_NOT_PYTHON = object()


def _as_python(data: bytes) -> Any:
    """The input as plain Python (a dict with lone surrogates, huge ints, inf), or ``_NOT_PYTHON``."""
    try:
        return to_python(parse(data))
    except (ValueError, RecursionError):
        return _NOT_PYTHON


def _check_detect(out: Any, inp: Input) -> None:
    if out not in envglot.DIALECTS:
        raise _Broken("bad-result", f"detect returned {out!r}, not a dialect name")


def _check_violations(out: Any, inp: Input) -> None:
    if not isinstance(out, list) or not all(isinstance(v, envglot.Violation) for v in out):
        raise _Broken("bad-result", "validate did not return a list of Violations")
    for v in out:
        try:
            str(v).encode("utf-8")
        except UnicodeEncodeError:
            raise _Broken("message-not-utf8", "a violation message cannot be printed as UTF-8") from None


def _check_envelope(env: Any, inp: Input) -> None:
    if not isinstance(env, envglot.Envelope):
        raise _Broken("bad-result", f"read returned a {type(env).__name__}")
    if inp.fails and env.ok:
        raise _Broken(
            "outcome-flip", "the input says failure, the canonical envelope says ok", "input failure read as ok"
        )


def _conversion(target: str) -> Call:
    def call(data: bytes) -> bytes:
        return envglot.conversion(data, to=target, unsupported="ignore").output

    return call


def _read_write(target: str) -> Call:
    def call(data: bytes) -> bytes:
        return envglot.write(envglot.read(data), target, unsupported="ignore")

    return call


def _check_wrap(target: str | None) -> Callable[[Any, Input], None]:
    def check(w: Any, inp: Input) -> None:
        if not isinstance(w, dict):
            raise _Broken("bad-result", f"wrap returned a {type(w).__name__}")
        sc = w.get("structuredContent")
        text = w["content"][0]["text"] if w.get("content") else None
        if not isinstance(text, str):
            raise _Broken("bad-result", "wrap gave no text block")
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:
            raise _Broken("output-not-utf8", "the wrapped text holds a lone surrogate") from None
        if target is not None:
            doc = _check_doc(raw, target, inp, "wrapped envelope")
            if json.loads(raw, parse_int=_int) != sc:
                raise _Broken("wrap-mismatch", "structuredContent and the text block differ")
            if w.get("isError") is not _is_failure(doc, target):
                raise _Broken("wrap-mismatch", "isError disagrees with the wrapped envelope")
        if inp.fails and w.get("isError") is not True:
            raise _Broken(
                "outcome-flip",
                "the input says failure, the CallToolResult says isError false",
                "input failure written as success",
            )

    return check


def _emits(target: str, output: str) -> Call:
    returns: list[bytes] = [b""]
    """What the tool returns on its next call (decorated once: decorating is a server's start-up cost)."""

    @mcp.emits(target, output=output, timing=False, unsupported="ignore")  # type: ignore[arg-type]
    def tool() -> bytes:
        return returns[0]

    def call(data: bytes) -> Any:
        returns[0] = data
        result = tool()
        if output == "sdk":  # read by attribute: pydantic's own serializer stops at 255 levels
            blocks = [{"type": c.type, "text": getattr(c, "text", None)} for c in result.content]
            v2 = hasattr(result, "structured_content")  # SDK 2.x names; 1.x camelCase (only read if 1.x)
            sc = result.structured_content if v2 else getattr(result, "structuredContent", None)
            flag = result.is_error if v2 else getattr(result, "isError", None)
            return {"content": blocks, "structuredContent": sc, "isError": flag}
        return result

    return call


def _unwrap_to(target: str) -> Call:
    def call(data: bytes) -> bytes:
        return mcp.unwrap(data, target, unsupported="ignore")

    return call


def _upstream_text(data: bytes) -> str:
    """The input as an upstream's text block carries it (undecodable bytes as lone surrogates)."""
    return data.decode("utf-8", "surrogateescape")


def _rewrite(target: str, is_error: bool) -> Call:
    """The proxy's ``Rewriter.result`` on a CallToolResult whose text block is the input."""
    rw = Rewriter(target, timing=False)

    def call(data: bytes) -> Any:
        wire = {"content": [{"type": "text", "text": _upstream_text(data)}], "isError": is_error}
        return rw.result(wire, "tool").result

    return call


def _refused(data: bytes) -> bool:
    """The input is a document (JSON object text) the core refuses to read."""
    text = _upstream_text(data).lstrip().removeprefix("\ufeff").lstrip()
    if not text.startswith("{"):
        return False
    try:
        envglot.read(text.encode("utf-8"))
    except UnicodeEncodeError:
        return True
    except EnvglotError:
        return True
    return False


def _check_rewrite(target: str, is_error: bool) -> Callable[[Any, Input], None]:
    """The proxy answers a valid target CallToolResult; it is a failure when the upstream's
    ``isError`` is true, when the envelope says failure and when the core refuses the envelope."""
    wrap_check = _check_wrap(target)

    def check(w: Any, inp: Input) -> None:
        wrap_check(w, inp)
        if w.get("isError") is True:
            return
        if is_error:
            raise _Broken("outcome-flip", "the upstream's isError true answered as a success", "isError true flipped")
        if _refused(inp.data):
            raise _Broken(
                "outcome-flip",
                "the core refuses the upstream's envelope, the proxy answers a success",
                "refusal flipped",
            )

    return check


def _inspect(data: bytes) -> tuple[Any, ...]:
    return (
        envinfo.category(data),
        envinfo.is_retryable(data),
        envinfo.http_status(data),
        envinfo.primary_problem(data),
    )


def _check_inspect(out: Any, inp: Input) -> None:
    cat, _, status, _ = out
    if inp.fails and (cat is None or status == 200):
        raise _Broken("outcome-flip", "the input says failure, inspect says success", "input failure read as ok")


def _migrator(target: str, preserve: bool, level: str) -> Call:
    m = envglot.Migrator(to=target, preserve=preserve, unsupported=level)

    def call(data: bytes) -> Any:
        return m.record(data)

    return call


def _check_outcome(target: str) -> Callable[[Any, Input], None]:
    def check(o: Any, inp: Input) -> None:
        if o.status == "rejected":
            if o.error_type == "InternalError":
                raise _Broken("internal-error-reject", f"a bug became a reject: {_head(o.error or '', 80)}")
            return
        if o.output is None or b"\n" in o.output:
            raise _Broken("bad-result", "a converted record has no output or a newline in it")
        _check_doc(o.output, target, inp, "migrated record")

    return check


def _dict_convert(target: str) -> Call:
    """convert() on the dict form (lone surrogates, huge ints, inf): the input tree as Python."""

    def call(data: bytes) -> Any:
        doc = _as_python(data)
        if not isinstance(doc, dict):
            return None
        return envglot.convert(doc, to=target, unsupported="ignore")

    return call


def _check_dict(target: str) -> Callable[[Any, Input], None]:
    def check(out: Any, inp: Input) -> None:
        if out is None:
            return
        if not isinstance(out, dict):
            raise _Broken("output-type", f"dict in, {type(out).__name__} out")
        try:
            json.dumps(out, ensure_ascii=False, allow_nan=False).encode("utf-8")
            # a dict has no one spelling: code-graph's approxTokens counts envglot's own (msgspec's)
            raw = msgspec.json.encode(out)
        except (ValueError, UnicodeEncodeError) as exc:
            raise _Broken("output-not-utf8", f"the dict output cannot be JSON UTF-8: {type(exc).__name__}") from None
        _check_doc(raw, target, inp, "dict output")

    return check


def _result_probe(data: bytes) -> Any:
    """Result.ok / Result.failure built from the input's values (any Python the tree holds)."""
    tree = _as_python(data)
    if tree is _NOT_PYTHON:
        return None
    fields = tree if isinstance(tree, dict) else {"value": tree}
    message = fields.get("message") if isinstance(fields.get("message"), str) else "m"
    ok = envglot.Result.ok(fields.get("value", fields), message=message)
    err = envglot.Result.failure(
        fields.get("error") if isinstance(fields.get("error"), str) else "failed",
        fields.get("error_type") if isinstance(fields.get("error_type"), str) else "internal",
        error_data=fields.get("error_data") if isinstance(fields.get("error_data"), dict) else None,
    )
    return tuple(r.to(t, unsupported="ignore") for r in (ok, err) for t in TARGETS)


def _check_result(outs: Any, inp: Input) -> None:
    if outs is None:
        return
    fake = Input(b"", None, None, False)
    for i, out in enumerate(outs):
        target = TARGETS[i % len(TARGETS)]
        doc = _check_doc(out, target, fake, "Result output")
        if i >= len(TARGETS) and doc is not None and not _is_failure(doc, target):
            raise _Broken("outcome-flip", "Result.failure written as a success")


def _probes() -> list[Probe]:
    probes: list[Probe] = [
        Probe("detect", envglot.detect, _check_detect, "envglot.detect(D)"),
        Probe("validate", envglot.validate, _check_violations, "envglot.validate(D)", raises_nothing=True),
        Probe("read", envglot.read, _check_envelope, "envglot.read(D)", deterministic=False),
        Probe("inspect", _inspect, _check_inspect, "envglot.inspect.category(D)"),
        Probe("mcp.unwrap", mcp.unwrap, lambda out, inp: _json(out) and None, "envglot.mcp.unwrap(D)"),
        Probe("mcp.wrap", mcp.wrap, _check_wrap(None), "envglot.mcp.wrap(D)"),
        Probe("Result", _result_probe, _check_result, "<Result.ok/failure from the values of D>"),
    ]
    for t in TARGETS:
        for preserve in (False, True):
            for level in LEVELS:
                opts = f"to={t!r}, preserve={preserve}, unsupported={level!r}"
                probes.append(
                    Probe(
                        f"convert[{opts}]",
                        functools.partial(envglot.convert, to=t, preserve=preserve, unsupported=level),
                        _check_target(t),
                        f"envglot.convert(D, {opts})",
                        twin=("residue" if preserve else "exact") if level == "ignore" else None,
                    )
                )
        conv = envglot.Converter(to=t, unsupported="ignore")
        probes += [
            Probe(
                f"validate[dialect={t!r}]",
                functools.partial(envglot.validate, dialect=t),
                _check_violations,
                f"envglot.validate(D, dialect={t!r})",
                raises_nothing=True,
            ),
            Probe(
                f"conversion[to={t!r}]",
                _conversion(t),
                _check_target(t),
                f"envglot.conversion(D, to={t!r}, unsupported='ignore')",
            ),
            Probe(
                f"read+write[to={t!r}]",
                _read_write(t),
                _check_target(t),
                f"envglot.write(envglot.read(D), {t!r}, unsupported='ignore')",
            ),
            Probe(
                f"Converter.__call__[to={t!r}]",
                conv,
                _check_target(t),
                f"envglot.Converter(to={t!r}, unsupported='ignore')(D)",
                twin="exact",
            ),
            Probe(
                f"Converter.__call__(str)[to={t!r}]",
                (lambda c: lambda d: c(d.decode("utf-8", "surrogateescape")))(conv),
                _check_str(t),
                f"envglot.Converter(to={t!r}, unsupported='ignore')(D.decode('utf-8', 'surrogateescape'))",
            ),
            Probe(
                f"Converter.convert_bytes[to={t!r}]",
                conv.convert_bytes,
                _check_target(t),
                f"envglot.Converter(to={t!r}, unsupported='ignore').convert_bytes(D)",
            ),
            Probe(
                f"Converter.conversion[to={t!r}]",
                (lambda c: lambda d: c.conversion(d).output)(conv),
                _check_target(t),
                f"envglot.Converter(to={t!r}, unsupported='ignore').conversion(D)",
            ),
            Probe(
                f"convert(dict)[to={t!r}]",
                _dict_convert(t),
                _check_dict(t),
                f"envglot.convert(<D as a dict>, to={t!r}, unsupported='ignore')",
            ),
            Probe(
                f"mcp.unwrap[to={t!r}]",
                _unwrap_to(t),
                _check_target(t),
                f"envglot.mcp.unwrap(D, {t!r}, unsupported='ignore')",
            ),
            Probe(
                f"mcp.wrap[dialect={t!r}]",
                functools.partial(mcp.wrap, dialect=t, unsupported="ignore"),
                _check_wrap(t),
                f"envglot.mcp.wrap(D, {t!r}, unsupported='ignore')",
            ),
            Probe(
                f"mcp.emits[wire,{t!r}]",
                _emits(t, "wire"),
                _check_wrap(t),
                f"envglot.mcp.emits({t!r}, output='wire', unsupported='ignore')(lambda: D)()",
            ),
            *(
                Probe(
                    f"proxy.Rewriter.result[{t!r},isError={flag}]",
                    _rewrite(t, flag),
                    _check_rewrite(t, flag),
                    f"envglot.proxy.rewrite.Rewriter({t!r}, timing=False).result("
                    f"{{'content': [{{'type': 'text', 'text': D.decode('utf-8', 'surrogateescape')}}], "
                    f"'isError': {flag}}}, 'tool').result",
                )
                for flag in (False, True)
            ),
            Probe(
                f"Migrator.record[to={t!r}]",
                _migrator(t, False, "warn"),
                _check_outcome(t),
                f"envglot.Migrator(to={t!r}).record(D)",
                raises_nothing=True,
            ),
            Probe(
                f"Migrator.record[to={t!r},preserve,raise]",
                _migrator(t, True, "raise"),
                _check_outcome(t),
                f"envglot.Migrator(to={t!r}, preserve=True, unsupported='raise').record(D)",
                raises_nothing=True,
            ),
        ]
    return probes


PROBES: list[Probe] = _probes()
SDK_PROBES: list[Probe] = [
    Probe(
        f"mcp.emits[sdk,{t!r}]",
        _emits(t, "sdk"),
        _check_wrap(t),
        f"envglot.mcp.emits({t!r}, unsupported='ignore')(lambda: D)()",
    )
    for t in TARGETS
]
"""``emits`` with SDK output (pydantic validation: slow, so run on a sample)."""


def by_name() -> dict[str, Probe]:
    return {p.name: p for p in PROBES + SDK_PROBES}


def run_all(inp: Input, probes: list[Probe] | None = None, repeat: bool = True) -> list[Failure]:
    """Every probe on one input."""
    out: list[Failure] = []
    for p in probes if probes is not None else PROBES:
        out += p.run(inp, repeat)
    return out
