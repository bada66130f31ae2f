"""Dialect detection: the probes of every dialect of a registry, run in priority order.

Each dialect declares its probes (``Dialect.probes``; a bundled one in ``[declare.probes]``
of its table, the test functions in its module); this module adds the two
transport wrappers (JSON-RPC and MCP), decodes the document's top level once into
:class:`~envglot.dialect.Facts`, and returns the first probe that names evidence. The order
is documented in ``docs/python-api.md`` ("Detection")."""

from __future__ import annotations

import functools

import msgspec
from msgspec import Raw, Struct

from .dialect import Facts, Probe
from .errors import DetectError
from .registry import Registry, bundled

__all__ = [
    "JSONRPC",
    "JSONRPC_MARKER",
    "MCP",
    "MCP_MARKERS",
    "Detection",
    "classify",
    "classify_members",
    "detect_bytes",
    "forced_detection",
    "probe_table",
    "top_level",
]

MCP = "mcp"
"""Pseudo-dialect returned for an MCP CallToolResult wrapper (unwrapped by the callers)."""
JSONRPC = "jsonrpc"
"""Pseudo-dialect returned for a JSON-RPC 2.0 response (unwrapped or refused by the callers)."""


class Detection(Struct, frozen=True):
    """A dialect name and the evidence it was recognized by.

    ``evidence`` is ``None`` only for legacy-v1's marker-less shape: an object with no key
    any dialect defines, read as a bare payload (see ``docs/python-api.md``, "Evidence").
    """

    dialect: str
    evidence: str | None
    unwrapped: bool = False
    """True when the document was taken out of an MCP CallToolResult or JSON-RPC response."""


_WRAPPER_KEYS = ("content", "structuredContent", "isError", "jsonrpc", "result", "error")
MCP_MARKERS = ("content", "structuredContent")
"""The members one of which an MCP CallToolResult holds (:func:`_mcp` requires one)."""
JSONRPC_MARKER = "jsonrpc"
"""The member a JSON-RPC response holds (:func:`_jsonrpc` requires it)."""


def _jsonrpc(f: Facts) -> str | None:
    """A JSON-RPC 2.0 response (``jsonrpc`` with ``result`` or ``error``)."""
    return "jsonrpc" if f.has(JSONRPC_MARKER) and (f.has("result") or f.has("error")) and not f.has("success") else None


def _mcp(f: Facts) -> str | None:
    """An MCP CallToolResult (``content``/``structuredContent``, no envelope keys)."""
    if f.has("success") or f.has("data"):
        return None
    return next((k for k in MCP_MARKERS if f.has(k)), None)


_TRANSPORT = (
    (
        Probe(
            30,
            _jsonrpc,
            "a **JSON-RPC response**: `jsonrpc` with `result` (unwrapped, then detected again) or `error` "
            "(refused: a `ParseError` naming its code and message, never read as a payload)",
        ),
        JSONRPC,
    ),
    (
        Probe(
            40,
            _mcp,
            "an **MCP CallToolResult**: `content`/`structuredContent`, no `success`/`data`: unwrapped, then "
            "detected again (one level only: a wrapper inside a wrapper is a `ParseError`)",
        ),
        MCP,
    ),
)


class _Plan(Struct, frozen=True):
    known: frozenset[str]
    probes: tuple[tuple[Probe, str], ...]
    fallback: str | None


_TOP = msgspec.json.Decoder(dict[str, Raw])


@functools.lru_cache(maxsize=64)
def _plan(registry: Registry) -> _Plan:
    """Built once per registry: every top-level key a dialect (or a wrapper) defines, and
    every probe in priority order."""
    keys: set[str] = set(_WRAPPER_KEYS)
    probes: list[tuple[Probe, str, bool]] = [(p, name, False) for p, name in _TRANSPORT]
    fallback = None
    for d in registry:
        keys |= d.keys
        top = d.shape.residue.split(".")
        if len(top) == 2:
            keys.add(top[1])
        probes += [(p, d.name, d.declared or d.plugin is not None) for p in d.probes]
        if d.fallback:
            fallback = d.name
    probes.sort(key=lambda pnd: (pnd[2], pnd[0].priority))  # declared and plugin dialects after every bundled one
    return _Plan(frozenset(keys), tuple((p, name) for p, name, _ in probes), fallback)


def probe_table(registry: Registry | None = None) -> list[tuple[int, str, str]]:
    """``(priority, dialect, what the probe looks for)`` in the order detection tries them,
    plus the fallback (for ``docs/python-api.md``); ``registry`` defaults to the bundled one."""
    plan = _plan(registry if registry is not None else bundled())
    rows = [(p.priority, name, p.doc) for p, name in plan.probes]
    if plan.fallback is not None:
        rows.append(
            (
                max(p.priority for p, _ in plan.probes) + 1,
                plan.fallback,
                "none: any other JSON object is read as a bare payload (evidence `None`)",
            )
        )
    return rows


def detect_bytes(buf: bytes | memoryview | str, registry: Registry | None = None) -> str:
    """Name the dialect of one JSON document (``"mcp"``/``"jsonrpc"`` for a transport wrapper).

    See :func:`classify` for the precedence.
    """
    return classify(buf, registry).dialect


def classify(buf: bytes | memoryview | str, registry: Registry | None = None) -> Detection:
    """The dialect of one JSON document and the evidence it was recognized by.

    Every probe of every bundled dialect, plus the JSON-RPC (priority 30) and MCP (40)
    wrappers, in priority order, then every declared dialect's (in their priority order); the
    first that names evidence wins. An object no probe
    claims goes to the fallback dialect (a bare payload, evidence ``None``). The dialects are
    ``registry``'s (default: the bundled ones, :func:`~envglot.registry.bundled`).
    """
    return classify_members(top_level(buf), registry)


def top_level(buf: bytes | memoryview | str) -> dict[str, Raw]:
    """The top-level members of an object document, their values skipped in C (the last of a
    repeated key); :class:`DetectError` for anything else, as :func:`classify` raises it."""
    try:
        return _TOP.decode(buf)
    except msgspec.ValidationError:  # valid JSON, but not an object
        raise DetectError("a response envelope must be a JSON object", path="$") from None
    except msgspec.DecodeError as exc:
        raise DetectError(f"invalid JSON: {exc}", path="$") from None


def classify_members(present: dict[str, Raw], registry: Registry | None = None) -> Detection:
    """:func:`classify` of a document whose top-level members (:func:`top_level`) are ``present``,
    by ``registry``'s dialects (default: the bundled ones)."""
    plan = _plan(registry if registry is not None else bundled())
    return _first(_facts(present, plan), plan)


def _facts(present: dict[str, Raw], plan: _Plan) -> Facts:
    return Facts(present, frozenset(present) if plan.known.issuperset(present) else None)


def _first(facts: Facts, plan: _Plan) -> Detection:
    """The first probe of ``plan`` that names evidence in ``facts``, else the fallback."""
    try:
        for probe, name in plan.probes:
            evidence = probe.test(facts)
            if evidence is not None:
                return Detection(name, evidence)
    except msgspec.DecodeError as exc:  # pragma: no cover - members were valid JSON when decoded
        raise DetectError(f"invalid JSON: {exc}", path="$") from None
    if plan.fallback is None:
        raise DetectError("no dialect recognizes this object", path="$")
    return Detection(plan.fallback, None)


class _Needs(Struct, frozen=True):
    """Top-level key sets, one of which a document holds in full: the one-key sets as one set
    (one C-level test), the others apart."""

    single: frozenset[str]
    multi: tuple[frozenset[str], ...]

    @classmethod
    def of(cls, needs: set[frozenset[str]]) -> _Needs:
        fewest = {s for s in needs if not any(t < s for t in needs)}  # a set holding another adds nothing
        single = frozenset(k for s in fewest if len(s) == 1 for k in s)
        return cls(single, tuple(sorted((s for s in fewest if len(s) > 1), key=sorted)))

    def met(self, present: dict[str, Raw]) -> bool:
        """Whether ``present`` holds one of the key sets."""
        if not self.single.isdisjoint(present):
            return True
        for s in self.multi:
            if present.keys() >= s:
                return True
        return False


class _Forced(Struct, frozen=True):
    """What the probes' declared needs (:attr:`~envglot.dialect.Probe.needs`) say about a document
    read as one forced dialect; ``None``: a probe concerned declares none."""

    rivals: _Needs | None
    """The needs of every other dialect's probe."""
    own: tuple[tuple[Probe, _Needs | None], ...]
    """The dialect's own probes in detection order, each with the needs of the other dialects'
    probes detection runs before it."""


@functools.lru_cache(maxsize=256)
def _forced(registry: Registry, dialect: str) -> _Forced:
    """Built once per registry and dialect."""
    before: set[frozenset[str]] | None = set()
    own: list[tuple[Probe, _Needs | None]] = []
    for probe, name in _plan(registry).probes:
        if name == dialect:
            own.append((probe, None if before is None else _Needs.of(before)))
        elif name not in (MCP, JSONRPC):  # a wrapper's detection names no other dialect either
            before = None if before is None or probe.needs is None else before | set(probe.needs)
    return _Forced(None if before is None else _Needs.of(before), tuple(own))


def forced_detection(buf: bytes, present: dict[str, Raw] | None, registry: Registry, dialect: str) -> Detection | None:
    """:func:`classify` of ``buf`` for a document read as the forced source ``dialect`` (``present``:
    its top-level members, when the caller has them); ``None`` when the probes' declared needs
    (:attr:`~envglot.dialect.Probe.needs`) prove that detection names ``dialect``, a transport
    wrapper or no dialect by evidence: no other dialect's probe can fire, or one of ``dialect``'s
    own fires before any other dialect's could. A probe that declares no needs (a plugin's)
    leaves the question to detection."""
    if present is None:
        return classify(buf, registry)
    forced = _forced(registry, dialect)
    if forced.rivals is not None and not forced.rivals.met(present):
        return None
    plan = _plan(registry)
    facts = _facts(present, plan)
    for probe, before in forced.own:
        if before is None or before.met(present):  # another dialect's probe may fire first
            break
        try:
            if probe.test(facts) is not None:
                return None
        except msgspec.DecodeError:  # pragma: no cover - members were valid JSON when decoded
            break
    return _first(facts, plan)
