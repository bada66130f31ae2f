"""The conversion options, declared, defaulted and validated once: :class:`Options`.

Every entry point (``convert``, ``conversion``, ``read``, ``write``, ``detect``,
``Converter``, ``Result.to``, the ``envglot.mcp`` adapters, ``migrate``/``Migrator``, the
proxy's ``Rewriter`` and the CLI) takes ``options=Options(...)`` and still takes each
option as a keyword. :func:`resolve` is the one function that turns the two into the
value a conversion runs with: a keyword given together with ``options=`` overrides that
field (``convert(doc, to="result", options=opts, style="pretty")`` is
``convert(doc, to="result", options=opts.replace(style="pretty"))``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from .errors import EnvglotError
from .limits import MAX_DEPTH, MAX_DEPTH_CEILING, encode_checked
from .mappings import Mappings
from .policy import Level, Policy, as_policy

__all__ = ["STYLES", "UNSET", "MappingsArg", "Options", "Style", "Unsupported", "resolve"]

Style = Literal["compact", "pretty", "native"]
STYLES: tuple[str, ...] = ("compact", "pretty", "native")
Unsupported = str | Policy
"""An ``unsupported=`` argument: a :class:`~envglot.Level`, a level name or a :class:`~envglot.Policy`."""
MappingsArg = Sequence[str | os.PathLike[str]] | Mappings | None
"""A ``mappings=`` argument: overlay TOML paths, or prebuilt :class:`~envglot.mappings.Mappings`."""


class _Unset:
    """The default of an entry point's option keywords: "not given, take it from ``options``"."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<from options>"

    def __reduce__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""Marks an option keyword the caller did not give (its value comes from ``options=``)."""


class Options(msgspec.Struct, frozen=True, kw_only=True):
    """Every conversion option, with its default, in one immutable value.

    ``Options(unsupported="raise", style="pretty")``; change fields with :meth:`replace`.
    Values are checked when the options are built: a bad one is an
    :class:`~envglot.EnvglotError` naming the option. Options compare equal field by field,
    pickle, and can be shared between threads.

    Attributes:
        unsupported: what to do with loss: a :class:`~envglot.Level` (``IGNORE``, ``WARN``,
            ``RAISE``, or their names ``"ignore"``/``"warn"``/``"raise"``) or a
            :class:`~envglot.Policy` that also chooses which diagnostic kinds count. Always a
            :class:`~envglot.Policy` once built (``Options(unsupported="raise").unsupported
            == Policy(level=Level.RAISE)``). Default ``warn``: one log record per lossy
            conversion on the ``envglot`` logger when logging is configured.
        preserve: carry what the target cannot say as a residue, so converting back restores
            the original document. Default ``False``.
        style: ``"compact"`` (default), ``"pretty"`` (2-space indent) or ``"native"`` (as the
            target dialect's real emitter prints).
        context: values for fields the target requires and the source lacks (``tool``,
            ``tool_version``, ``request_id``, ``timestamp``, ``source``, ...); must be
            JSON-encodable. Default ``None`` (an empty dict is kept as ``None``).
        mappings: overlay TOML files (a path or a sequence of paths, kept as a tuple of
            strings) or prebuilt :class:`~envglot.mappings.Mappings`. Default ``None``: the
            bundled tables.
        strict: refuse a document that carries no dialect's markers instead of reading it as
            a legacy-v1 bare payload. Default ``False``.
        max_depth: the nesting limit (objects and arrays) of an input, from 1 to
            ``envglot.limits.MAX_DEPTH_CEILING``; deeper input is a ParseError. Default
            ``envglot.limits.MAX_DEPTH``.

    The source and target dialects (``to``, ``from_``) are not options: they name the
    conversion, and every entry point takes them as arguments of their own.
    """

    unsupported: Unsupported = Level.WARN
    preserve: bool = False
    style: Style = "compact"
    context: dict[str, Any] | None = None
    mappings: MappingsArg = None
    strict: bool = False
    max_depth: int = MAX_DEPTH

    def __post_init__(self) -> None:
        set_ = msgspec.structs.force_setattr
        policy = as_policy(self.unsupported)
        if policy is not self.unsupported:
            set_(self, "unsupported", policy)
        if self.preserve is not True and self.preserve is not False:
            raise EnvglotError(f"preserve must be True or False, not {self.preserve!r}")
        if self.strict is not True and self.strict is not False:
            raise EnvglotError(f"strict must be True or False, not {self.strict!r}")
        if self.style not in STYLES:
            raise EnvglotError(f"style must be compact, pretty or native, not {self.style!r}")
        md = self.max_depth
        if type(md) is not int or not 0 < md <= MAX_DEPTH_CEILING:
            raise EnvglotError(f"max_depth must be an integer from 1 to {MAX_DEPTH_CEILING}, not {md!r}")
        ctx = self.context
        if ctx is not None:
            if not isinstance(ctx, dict) or not all(isinstance(k, str) for k in ctx):
                raise EnvglotError(f"context must be a dict with string keys, not {type(ctx).__name__}")
            if ctx:
                encode_checked(ctx)  # caller values end up in outputs: they must be encodable
            set_(self, "context", dict(ctx) if ctx else None)
        m = self.mappings
        if m is not None and type(m) is not tuple:
            set_(self, "mappings", _overlays(m))

    @property
    def policy(self) -> Policy:
        """The loss policy (``unsupported``, as a :class:`~envglot.Policy`)."""
        return self.unsupported  # type: ignore[return-value]  # made a Policy in __post_init__

    def replace(self, **changes: Any) -> Options:
        """A copy with ``changes`` applied (checked as when built); an unknown option is an error."""
        unknown = [k for k in changes if k not in self.__struct_fields__]
        if unknown:
            raise EnvglotError(f"unknown option {unknown[0]!r}; options: {', '.join(self.__struct_fields__)}")
        return msgspec.structs.replace(self, **changes) if changes else self

    def tallied(self) -> Options:
        """These options for a caller that counts and shows the diagnostics itself (the CLI, migrate).

        ``raise`` is kept (the conversion refuses the document); ``warn`` becomes ``ignore``,
        so no log record is written per document. The policy's selectors are kept.
        """
        policy = self.policy
        if policy.level is not Level.WARN:
            return self
        return self.replace(unsupported=msgspec.structs.replace(policy, level=Level.IGNORE))


def _overlays(m: object) -> tuple[str, ...] | Mappings | None:
    """A ``mappings=`` value as kept by :class:`Options`: None, Mappings or a tuple of path strings."""
    if isinstance(m, Mappings):
        return m
    if isinstance(m, str | os.PathLike):
        return (os.fspath(m),)
    if isinstance(m, Sequence) and not isinstance(m, bytes):
        paths = tuple(m)
        if all(isinstance(p, str | os.PathLike) for p in paths):
            return tuple(os.fspath(p) for p in paths) or None
    raise EnvglotError(f"mappings must be overlay paths or an envglot Mappings, not {type(m).__name__}")


DEFAULT = Options()
"""The options of a call that gives none."""


_RESOLVED: dict[tuple[object, ...], Options] = {}
"""Options built from keywords alone, by the names, values and types of the keywords given: a
one-shot ``convert(doc, to=..., unsupported="ignore")`` builds and checks its options once."""


def resolve(
    options: Options | None,
    *,
    unsupported: Any = UNSET,
    preserve: Any = UNSET,
    style: Any = UNSET,
    context: Any = UNSET,
    mappings: Any = UNSET,
    strict: Any = UNSET,
    max_depth: Any = UNSET,
) -> Options:
    """The options a call runs with: ``options`` (default :data:`DEFAULT`) with every keyword
    the caller gave (any value but :data:`UNSET`) replacing that field.

    The one place where an entry point's ``options=`` and keywords meet.
    """
    keywords = {
        "unsupported": unsupported,
        "preserve": preserve,
        "style": style,
        "context": context,
        "mappings": mappings,
        "strict": strict,
        "max_depth": max_depth,
    }
    given: dict[str, Any] = {k: v for k, v in keywords.items() if v is not UNSET}
    if options is not None:
        if not isinstance(options, Options):
            raise EnvglotError(f"options must be an envglot.Options, not {type(options).__name__}")
        return options.replace(**given) if given else options
    if not given:
        return DEFAULT
    try:
        values = tuple(given.values())
        key = (*given, *values, *map(type, values))
        found = _RESOLVED.get(key)
    except TypeError:  # an unhashable value (a context dict, a list of overlay paths): not kept
        return Options(**given)
    if found is None:
        found = Options(**given)
        if len(_RESOLVED) >= 256:
            _RESOLVED.clear()
        _RESOLVED[key] = found
    return found
