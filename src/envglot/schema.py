"""JSON Schema (2020-12) of each dialect's wire envelope, generated with ``msgspec.json.schema``.

``json_schema(dialect)`` describes the dialect module's ``Envelope`` Struct with its
components under ``$defs``; ``json_schema(dialect, inline=True)`` resolves every
``$ref`` so the result is one self-contained object schema, usable as an MCP tool's
``outputSchema`` (root ``"type": "object"``, no ``$ref``, no ``$defs``).

legacy-v1 has no single wire Struct (its tools returned free-form dicts), so its schema
is built from ``legacy_v1.LegacyV1Envelope``: the keys the dialect reader interprets, every
one optional, other keys allowed.
"""

from __future__ import annotations

import copy
import functools
import operator
import os
import types
import typing
from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import Raw, Struct

from .errors import EnvglotError
from .introspect import struct_fields
from .mappings import Mappings, mappings_for

__all__ = [
    "NOT_EMBEDDED",
    "SCHEMA_DIALECT",
    "embed_schema",
    "embedded_payload",
    "hoist",
    "inline_refs",
    "json_schema",
    "struct_schema",
]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
"""The ``$schema`` every generated schema declares (MCP's default dialect)."""


def _absent() -> Raw:
    return Raw(b"")


def _shadow_type(tp: Any, cache: dict[type, type]) -> Any:
    """``tp`` with every Struct class replaced by its schema-safe shadow."""
    if isinstance(tp, type) and issubclass(tp, Struct):
        return _shadow_struct(tp, cache)
    origin = typing.get_origin(tp)
    if origin is None:
        return tp
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return tp
    new = tuple(_shadow_type(a, cache) for a in args)
    if new == args:
        return tp
    if origin is types.UnionType or origin is typing.Union:
        return functools.reduce(operator.or_, new)
    return origin[new if len(new) > 1 else new[0]]


def _shadow_struct(cls: type[Struct], cache: dict[type, type]) -> type:
    """A copy of ``cls`` whose ``Raw`` defaults become factories (``msgspec`` cannot encode a Raw default).

    Name, docstring, wire names and ``forbid_unknown_fields`` are kept, so the generated
    schema is the one of ``cls``; the placeholder default is simply not shown.
    """
    hit = cache.get(cls)
    if hit is not None:
        return hit
    hints = typing.get_type_hints(cls)
    info = cls.__struct_config__
    specs: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    rename: dict[str, str] = {}
    for f in struct_fields(cls):
        ftype = _shadow_type(hints[f.name], cache)
        rename[f.name] = f.encode_name
        if f.default is msgspec.NODEFAULT and f.default_factory is msgspec.NODEFAULT:
            specs.append((f.name, ftype))
        elif isinstance(f.default, Raw):
            specs.append((f.name, ftype, msgspec.field(default_factory=_absent)))
        elif f.default is not msgspec.NODEFAULT:
            specs.append((f.name, ftype, f.default))
        else:
            specs.append((f.name, ftype, msgspec.field(default_factory=f.default_factory)))
    shadow = msgspec.defstruct(
        cls.__name__,
        specs,
        namespace={"__doc__": cls.__doc__},
        rename=rename,
        forbid_unknown_fields=info.forbid_unknown_fields,
        kw_only=True,
    )
    cache[cls] = shadow
    return shadow


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Resolve every local ``$ref`` (``#/$defs/Name``) into a copy of its definition.

    Raises:
        EnvglotError: a definition refers to itself (directly or not), which cannot be inlined.
    """
    defs: dict[str, Any] = schema.get("$defs", {})

    def resolve(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref[len("#/$defs/") :]
                if name in seen:
                    raise EnvglotError(f"schema component {name!r} is recursive and cannot be inlined")
                target = resolve(copy.deepcopy(defs[name]), (*seen, name))
                rest = {k: resolve(v, seen) for k, v in node.items() if k not in ("$ref", "$defs")}
                return {**target, **rest}
            return {k: resolve(v, seen) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [resolve(v, seen) for v in node]
        return node

    out = resolve(schema, ())
    assert isinstance(out, dict)
    return out


def json_schema(
    dialect: str, inline: bool = False, *, mappings: Sequence[str | os.PathLike[str]] | Mappings | None = None
) -> dict[str, Any]:
    """The JSON Schema (2020-12) of ``dialect``'s wire envelope.

    Args:
        dialect: a dialect name (or alias) as ``envglot dialects`` lists them.
        inline: resolve every ``$ref`` into one self-contained schema whose root is
            ``{"type": "object", ...}`` (what an MCP ``outputSchema`` must be).
        mappings: overlay paths or :class:`~envglot.mappings.Mappings` whose declared
            dialects may be named (default: the bundled dialects).

    Raises:
        UnknownDialectError: ``dialect`` is not a dialect name.
    """
    reg = (mappings if isinstance(mappings, Mappings) else mappings_for(mappings)).registry
    return struct_schema(reg.get(dialect).schema_type(), inline)


def struct_schema(struct: type[Struct], inline: bool = False) -> dict[str, Any]:
    """The JSON Schema (2020-12) of a wire Struct (``inline`` as :func:`json_schema`'s); a fresh dict."""
    out: dict[str, Any] = msgspec.json.decode(_schema_json(struct, inline))
    return out


@functools.lru_cache(maxsize=64)
def _schema_json(envelope: type, inline: bool) -> bytes:
    """:func:`json_schema` of a wire Struct as JSON, made once per Struct (the proxy asks per tool)."""
    schema = msgspec.json.schema(_shadow_struct(envelope, {}))
    if inline:
        schema = inline_refs(schema)
    return msgspec.json.encode({"$schema": SCHEMA_DIALECT, **schema})


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def hoist(schema: dict[str, Any], taken: set[str], root: str = "Payload") -> tuple[dict[str, Any], dict[str, Any]]:
    """``schema`` as components of another document: ``({"$ref": ...}, new $defs)``.

    Its ``$defs`` (and draft-07 ``definitions``) and the schema itself become definitions
    named without colliding with ``taken`` (``Name``, then ``Name_2`` ...); every local
    ``$ref`` is rewritten to match (``#/$defs/X...`` to the renamed ``X``, any other
    ``#...`` to the hoisted root); ``$schema`` and ``$id`` of the root are dropped.

    Raises:
        EnvglotError: a ``$ref`` that is not local (``#...``) or names a definition the
            schema does not have: the result would not be self-contained.
    """
    names: dict[str, str] = {}

    def fresh(name: str) -> str:
        base, n = name or "Def", 2
        while name in taken or not name:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        return name

    own = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    root_name = fresh(str(schema.get("title") or root).replace("/", "_"))
    for name in own:
        names[name] = fresh(name)

    def ref(value: str) -> str:
        if not value.startswith("#"):
            raise EnvglotError(f"the schema refers outside itself ($ref {value!r}): it cannot be made self-contained")
        pointer = value[1:]
        if pointer and not pointer.startswith("/"):  # "#name": an $anchor, which moves with its schema
            return value
        for prefix in ("/$defs/", "/definitions/"):
            if pointer.startswith(prefix):
                name, sep, rest = pointer[len(prefix) :].partition("/")
                target = names.get(_unescape(name))
                if target is None:
                    raise EnvglotError(f"$ref {value!r} names a definition the schema does not have")
                return f"#/$defs/{_escape(target)}{sep}{rest}"
        return f"#/$defs/{_escape(root_name)}{pointer}"

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: (ref(v) if k == "$ref" and isinstance(v, str) else walk(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    body = {k: v for k, v in schema.items() if k not in ("$defs", "definitions", "$schema", "$id")}
    defs = {root_name: walk(body)}
    defs.update({names[name]: walk(value) for name, value in own.items()})
    return {"$ref": f"#/$defs/{_escape(root_name)}"}, defs


def _refers(node: Any) -> bool:
    """Whether a schema has a ``$ref`` anywhere."""
    if isinstance(node, dict):
        return "$ref" in node or any(_refers(v) for v in node.values())
    return isinstance(node, list) and any(_refers(v) for v in node)


def _resolved(node: Any, own: dict[str, Any]) -> Any:
    """``node`` with local ``$ref``s to the definitions ``own`` followed (a bounded number of steps)."""
    for _ in range(len(own) + 1):
        ref = node.get("$ref") if isinstance(node, dict) else None
        if not isinstance(ref, str) or "type" in node:
            break
        node = own.get(_unescape(ref.rpartition("/")[2]), {})
    return node


def _own_defs(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema.get("definitions", {}), **schema.get("$defs", {})}


def _root_type(schema: dict[str, Any]) -> Any:
    """The ``type`` of a schema's root, following local ``$ref``s to its definitions."""
    node = _resolved(schema, _own_defs(schema))
    return node.get("type") if isinstance(node, dict) else None


def _admits_null(schema: dict[str, Any]) -> bool:
    """Whether ``null`` may be valid under ``schema`` as far as its root says (``type``,
    ``const``, ``enum``, ``anyOf``/``oneOf`` branches; an unconstrained root admits it)."""
    own = _own_defs(schema)

    def admits(node: Any, depth: int) -> bool:
        node = _resolved(node, own)
        if not isinstance(node, dict) or depth > 32:
            return True
        if "type" in node:
            t = node["type"]
            return t == "null" or (isinstance(t, list) and "null" in t)
        if "const" in node:
            return node["const"] is None
        if isinstance(node.get("enum"), list):
            return None in node["enum"]
        for key in ("anyOf", "oneOf"):
            if isinstance(node.get(key), list):
                return any(admits(b, depth + 1) for b in node[key])
        return True

    return admits(schema, 0)


_EMPTY_OBJECT = {"type": "object", "maxProperties": 0}
"""What an object-payload dialect writes for a null payload: ``{}``."""


def _value_wrapper(member: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"value": member}, "required": ["value"], "additionalProperties": False}


def _as_written(member: dict[str, Any], payload: dict[str, Any], whole: bool) -> list[dict[str, Any]]:
    """The schemas (any one of them) of what a dialect whose payload is always an object writes
    for a payload of schema ``payload`` (``member``: its schema where it is placed, its ``$ref``s
    hoisted): an object as it is, a null as ``{}``, any other value as ``{"value": ...}``
    (``envglot.wire.object_payload``); where the whole document is the payload (``whole``,
    google-rpc's resource) an object may be wrapped too (one that would not read back as
    itself)."""
    root = _root_type(payload)
    objects = root == "object" or root is None or (isinstance(root, list) and "object" in root)
    if root == "object" and not whole:
        return [member]
    out: list[dict[str, Any]] = []
    if objects:
        out.append(member if root == "object" else {"allOf": [member, {"type": "object"}]})
    out.append(_value_wrapper(member))
    if root != "object" and _admits_null(payload):
        out.append(copy.deepcopy(_EMPTY_OBJECT))
    return out


def _written_payload(branches: list[Any], defs: dict[str, Any] | None, whole: bool) -> Any:
    """The payload schema :func:`_as_written` made ``branches`` from, or :data:`NOT_EMBEDDED`."""
    candidates: list[Any] = []
    for b in branches:
        if isinstance(b, dict) and set(b) == {"type", "properties", "required", "additionalProperties"}:
            inner = b["properties"].get("value") if isinstance(b["properties"], dict) else None
            if isinstance(inner, dict):
                candidates.append(inner)
    if len(branches) == 1 and isinstance(branches[0], dict):
        candidates.append(branches[0])
    for member in candidates:
        payload = {**member, "$defs": defs} if defs else member
        if _as_written(member, payload, whole) == branches:
            return member
    return NOT_EMBEDDED


def embed_schema(
    envelope: dict[str, Any],
    at: str,
    payload: dict[str, Any],
    *,
    ok: str | None = None,
    wrap_value: bool = False,
    failure: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``envelope`` (a self-contained schema) with ``payload`` placed at the member ``at``.

    ``at`` and ``ok`` are ``$.a.b`` paths. When ``ok`` names a boolean member, the payload
    schema applies when it is ``true`` (``if``/``then``: a failure still validates against
    the envelope alone); otherwise the member becomes ``anyOf`` the payload schema and
    what it was. ``at == "$"`` (a success is the payload itself, google-rpc's resource):
    the document is ``anyOf`` the payload schema and ``failure`` (the failure document's
    self-contained schema), under ``envelope``'s title. ``wrap_value`` (dialects whose payload
    is always an object): what is placed is what the writer writes for such a payload
    (:func:`_as_written`: ``anyOf`` the object, ``{"value": ...}`` and ``{}`` where the payload
    schema admits them). ``payload`` is hoisted (:func:`hoist`); the result is a fresh dict.

    Raises:
        ValueError: ``at == "$"`` without ``failure``.
    """
    out: dict[str, Any]
    if at == "$":
        if failure is None:
            raise ValueError("a payload that is the whole document needs the failure document's schema")
        out = {k: envelope[k] for k in ("$schema", "title") if k in envelope}
        out["type"] = "object"
    else:
        out = copy.deepcopy(envelope)
    if _refers(payload) or "$defs" in payload or "definitions" in payload:
        defs: dict[str, Any] = out.setdefault("$defs", {})
        member, new_defs = hoist(payload, set(defs))
        defs.update(new_defs)
    else:  # nothing to hoist: the schema goes where it is used
        member = {k: copy.deepcopy(v) for k, v in payload.items() if k not in ("$schema", "$id")}
    written = _as_written(member, payload, at == "$") if wrap_value else [member]
    if at == "$" and failure is not None:
        out["anyOf"] = [*written, {k: copy.deepcopy(v) for k, v in failure.items() if k != "$schema"}]
        return out
    member = written[0] if len(written) == 1 else {"anyOf": written}
    keys = at.removeprefix("$.").split(".")
    ok_keys = ok.removeprefix("$.").split(".") if ok is not None else None
    flag = out.get("properties", {}).get(ok_keys[0], {}) if ok_keys is not None and len(ok_keys) == 1 else {}
    if ok_keys is not None and flag.get("type") == "boolean":
        then: dict[str, Any] = member
        for key in reversed(keys):
            then = {"properties": {key: then}}
        out["if"] = {"properties": {ok_keys[0]: {"const": True}}, "required": [ok_keys[0]]}
        out["then"] = then
        return out
    node = out
    for key in keys[:-1]:
        node = node.setdefault("properties", {}).setdefault(key, {})
    props = node.setdefault("properties", {})
    props[keys[-1]] = {"anyOf": [member, props.get(keys[-1], {})]}
    return out


def _untitled(node: Any) -> Any:
    """A schema without its ``title`` annotations (a property named ``title`` stays)."""
    if isinstance(node, list):
        return [_untitled(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _untitled(sub) for name, sub in value.items()}
        else:
            out[key] = _untitled(value)
    return out


NOT_EMBEDDED = object()
"""What :func:`embedded_payload` answers for a schema that is not an envelope's."""


def embedded_payload(
    schema: dict[str, Any],
    envelope: dict[str, Any],
    at: str,
    *,
    failure: dict[str, Any] | None = None,
    wrap_value: bool = False,
) -> Any:
    """What :func:`embed_schema` placed at ``at`` when it made ``schema`` from ``envelope``
    (and ``failure``, when ``at == "$"``; ``wrap_value`` as it was given): the payload schema
    (with the ``$defs`` it uses), ``None`` when ``schema`` is ``envelope`` itself, or
    :data:`NOT_EMBEDDED` when ``schema``
    is neither. Titles are annotations, not constraints: ``schema`` may have lost them
    (FastMCP prunes them).
    """
    if failure is not None:
        failure = _untitled({k: v for k, v in failure.items() if k != "$schema"})
    schema, envelope = _untitled(schema), _untitled(envelope)
    if schema == envelope:
        return None
    keys = at.removeprefix("$.").split(".")
    rest = {k: v for k, v in schema.items() if k not in ("if", "then", "$defs")}
    defs = schema.get("$defs")
    if at == "$":  # the document is anyOf the payload and the failure document
        head = {k: v for k, v in schema.items() if k not in ("anyOf", "$defs")}
        branches = schema.get("anyOf")
        if failure is None or head != {"$schema": envelope.get("$schema"), "type": "object"}:
            return NOT_EMBEDDED
        if not (isinstance(branches, list) and len(branches) >= 2 and branches[-1] == failure):
            return NOT_EMBEDDED
        node: Any = {"anyOf": branches[:-1]} if len(branches) > 2 else branches[0]
    elif "then" in schema and rest == envelope:
        node = schema["then"]
        for key in keys:
            node = node.get("properties", {}).get(key) if isinstance(node, dict) else None
    else:  # anyOf at the member
        node = rest
        for key in keys:
            node = node.get("properties", {}).get(key) if isinstance(node, dict) else None
        plain: Any = envelope
        for key in keys:
            plain = plain.get("properties", {}).get(key) if isinstance(plain, dict) else None
        branches = node.get("anyOf") if isinstance(node, dict) else None
        if not (isinstance(branches, list) and len(branches) == 2 and branches[1] == (plain or {})):
            return NOT_EMBEDDED
        outside = copy.deepcopy(rest)
        target = outside
        for key in keys[:-1]:
            target = target["properties"][key]
        target["properties"][keys[-1]] = plain
        if outside != envelope:
            return NOT_EMBEDDED
        node = branches[0]
    if not isinstance(node, dict):
        return NOT_EMBEDDED
    if wrap_value:
        whole = at == "$"
        found = _written_payload([node], defs, whole)
        if found is NOT_EMBEDDED and set(node) == {"anyOf"} and isinstance(node["anyOf"], list):
            found = _written_payload(node["anyOf"], defs, whole)
        if found is NOT_EMBEDDED:
            return NOT_EMBEDDED
        node = found
    return {**node, "$defs": defs} if defs else node
