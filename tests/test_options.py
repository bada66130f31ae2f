"""``envglot.Options`` and ``envglot.Level``: defaults, validation, options/keyword equivalence,
the caller's report level, and a level accepted wherever its name was."""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

import envglot
from envglot import EnvglotError, Level, Options, Policy, Report, Result
from envglot import mcp as emcp
from envglot.limits import MAX_DEPTH, MAX_DEPTH_CEILING
from envglot.options import DEFAULT, UNSET, resolve
from golden import cases

LOSSY = next(c for c in cases("dotbot") if c.stem == "real-multi-error").data
"""A dotbot document that loses information as errorcode (checked below)."""
LOSSY_RESULT: Result[Any] = Result(success=False, error="boom", error_type="mystery_type", instruction="tell the user")
"""A Result that loses information as errorcode (checked below)."""


def test_the_fixtures_are_lossy() -> None:
    assert envglot.conversion(LOSSY, to="errorcode", unsupported="ignore").lossy
    rep = Report(Level.IGNORE)
    LOSSY_RESULT.to("errorcode", unsupported="ignore", report=rep)
    assert rep.lossy


# ---- defaults ----------------------------------------------------------------------


def test_defaults() -> None:
    o = Options()
    assert o.unsupported == Policy(level=Level.WARN) and o.policy is o.unsupported
    assert (o.preserve, o.style, o.context, o.mappings, o.strict, o.max_depth) == (
        False,
        "compact",
        None,
        None,
        False,
        MAX_DEPTH,
    )
    assert resolve(None) is DEFAULT and DEFAULT == o


def test_no_options_and_no_keywords_is_the_defaults() -> None:
    doc = next(c for c in cases("errorcode")).data
    assert envglot.convert(doc, to="response-v2") == envglot.convert(doc, to="response-v2", options=Options())
    assert envglot.Converter("response-v2").options == Options()


def test_values_are_normalized_once() -> None:
    raising = Options(unsupported="raise")
    assert raising == Options(unsupported=Level.RAISE) == Options(unsupported=Policy(level="raise"))
    assert Options(unsupported="raise").policy.level is Level.RAISE
    assert Options(mappings="a.toml").mappings == ("a.toml",)
    assert Options(mappings=[Path("a.toml"), "b.toml"]).mappings == ("a.toml", "b.toml")
    assert Options(mappings=[]).mappings is None
    assert Options(context={}).context is None
    ctx = {"tool": "t"}
    o = Options(context=ctx)
    ctx["tool"] = "changed later"
    assert o.context == {"tool": "t"}  # a copy: the options do not change behind the caller's back


def test_options_are_immutable_comparable_and_picklable() -> None:
    o = Options(unsupported=Policy(level="raise", select=("code_mapped",)), context={"tool": "x"}, max_depth=40)
    with pytest.raises(AttributeError):
        o.style = "pretty"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(o)) == o
    assert hash(Options(style="pretty")) == hash(Options(style="pretty"))


def test_replace() -> None:
    o = Options(style="pretty")
    assert o.replace() is o
    p = o.replace(unsupported="raise", preserve=True)
    assert (p.style, p.policy.level, p.preserve) == ("pretty", Level.RAISE, True)
    assert o.style == "pretty" and o.policy.level is Level.WARN  # the original is unchanged
    with pytest.raises(EnvglotError, match="unknown option 'colour'"):
        o.replace(colour="red")
    with pytest.raises(EnvglotError, match="style must be"):
        o.replace(style="fancy")  # checked as when built


# ---- validation --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("unsupported", "loud", "unsupported must be one of ignore, warn, raise"),
        ("unsupported", None, "unsupported must be one of"),
        ("preserve", "yes", "preserve must be True or False"),
        ("preserve", 1, "preserve must be True or False"),
        ("strict", None, "strict must be True or False"),
        ("style", "fancy", "style must be compact, pretty or native"),
        ("max_depth", 0, "max_depth must be an integer from 1"),
        ("max_depth", MAX_DEPTH_CEILING + 1, "max_depth must be an integer from 1"),
        ("max_depth", True, "max_depth must be an integer from 1"),
        ("max_depth", "10", "max_depth must be an integer from 1"),
        ("context", ["tool"], "context must be a dict with string keys"),
        ("context", {1: "x"}, "context must be a dict with string keys"),
        ("context", {"tool": object()}, r"not a JSON value \(at \$\.tool\)"),
        ("mappings", 42, "mappings must be overlay paths"),
        ("mappings", [1, 2], "mappings must be overlay paths"),
    ],
)
def test_a_bad_value_is_an_envglot_error(field: str, value: Any, message: str) -> None:
    with pytest.raises(EnvglotError, match=message):
        Options(**{field: value})
    with pytest.raises(EnvglotError, match=message):  # the keyword form is checked by the same code
        envglot.convert(LOSSY, to="result", **{field: value})
    with pytest.raises(EnvglotError, match=message):  # and so is a keyword given over options
        envglot.Converter("result", options=Options(), **{field: value})


def test_options_must_be_options() -> None:
    with pytest.raises(EnvglotError, match=r"options must be an envglot\.Options"):
        envglot.convert(LOSSY, to="result", options={"style": "pretty"})  # type: ignore[arg-type]


# ---- options= and keywords give the same bytes -------------------------------------

PAIRS = [
    ("dotbot", "real-multi-error", "response-v2"),
    ("dotbot", "real-multi-error", "errorcode"),
    ("errorcode", None, "code-graph"),
    ("code-graph", None, "result"),
    ("legacy-v1", "a-found-false-error", "response-v2"),
    ("response-v2", None, "dotbot"),
]
KEYWORD_SETS: list[dict[str, Any]] = [
    {},
    {"unsupported": "ignore"},
    {"unsupported": Level.IGNORE, "style": "pretty"},
    {"preserve": True, "unsupported": "ignore", "style": "native"},
    {"context": {"tool": "lookup", "request_id": "req-1"}, "unsupported": Policy(level="ignore")},
    {"strict": True, "max_depth": 64, "unsupported": "ignore"},
]


def _doc(dialect: str, stem: str | None) -> bytes:
    return next(c for c in cases(dialect) if stem is None or c.stem == stem).data


@pytest.mark.parametrize(("src", "stem", "dst"), PAIRS)
@pytest.mark.parametrize("kw", KEYWORD_SETS, ids=lambda kw: ",".join(kw) or "none")
def test_keywords_and_options_give_the_same_bytes(src: str, stem: str | None, dst: str, kw: dict[str, Any]) -> None:
    doc = _doc(src, stem)
    opts = Options(**kw)
    by_kw = envglot.conversion(doc, to=dst, **kw)
    by_opts = envglot.conversion(doc, to=dst, options=opts)
    assert by_kw.output == by_opts.output and by_kw.diagnostics == by_opts.diagnostics
    assert envglot.convert(doc, to=dst, **kw) == envglot.convert(doc, to=dst, options=opts) == by_kw.output
    assert envglot.Converter(dst, options=opts).convert_bytes(doc) == by_kw.output
    assert envglot.Converter(dst, src, **kw).convert_bytes(doc) == envglot.Converter(dst, src, options=opts)(doc)
    assert envglot.Converter(dst, **kw).options == opts


@pytest.mark.parametrize("kw", KEYWORD_SETS[1:], ids=lambda kw: ",".join(kw))
def test_a_keyword_given_with_options_overrides_that_field(kw: dict[str, Any]) -> None:
    other = Options(unsupported="raise", style="compact", preserve=False, context={"tool": "other"}, max_depth=300)
    expected = envglot.conversion(LOSSY, to="response-v2", options=other.replace(**kw))
    got = envglot.conversion(LOSSY, to="response-v2", options=other, **kw)
    assert got.output == expected.output and got.diagnostics == expected.diagnostics
    assert envglot.Converter("response-v2", options=other, **kw).options == other.replace(**kw)


def test_the_other_entry_points_take_options() -> None:
    opts = Options(unsupported="ignore", style="pretty", context={"tool": "lookup"})
    kw: dict[str, Any] = {"unsupported": "ignore", "style": "pretty", "context": {"tool": "lookup"}}
    env = envglot.read(LOSSY, options=opts)
    assert env == envglot.read(LOSSY)
    assert envglot.write(env, "errorcode", options=opts) == envglot.write(env, "errorcode", **kw)
    assert envglot.detect(LOSSY, options=Options(strict=True)) == envglot.detect(LOSSY, strict=True) == "dotbot"
    assert LOSSY_RESULT.to("response-v2", options=opts) == LOSSY_RESULT.to("response-v2", **kw)
    wire = emcp.wrap(LOSSY)
    assert emcp.unwrap(wire, "errorcode", options=opts) == emcp.unwrap(wire, "errorcode", **kw)
    assert emcp.wrap(LOSSY, "errorcode", options=opts) == emcp.wrap(LOSSY, "errorcode", unsupported="ignore")
    assert emcp.unwrap_envelope(wire, options=opts) == emcp.unwrap_envelope(wire)


def test_emits_takes_options() -> None:
    def lookup() -> bytes:
        return LOSSY

    by_opts = emcp.emits("errorcode", output="envelope", timing=False, options=Options(unsupported="ignore"))(lookup)
    by_kw = emcp.emits("errorcode", output="envelope", timing=False, unsupported="ignore")(lookup)
    assert by_opts() == by_kw()
    refusing = emcp.emits("errorcode", output="envelope", timing=False, options=Options(unsupported=Level.RAISE))
    # a refused conversion becomes an error envelope (written with at most warn), never an exception
    assert refusing(lookup)()["success"] is False


def test_migrator_and_migrate_take_options(tmp_path: Path) -> None:
    opts = Options(unsupported="raise", context={"tool": "t"})
    mig = envglot.Migrator("errorcode", options=opts)
    assert mig.options == opts and mig.unsupported == "raise"
    assert mig.record(LOSSY).status == "rejected"
    assert envglot.Migrator("errorcode", unsupported="raise", context={"tool": "t"}).options == opts
    again = pickle.loads(pickle.dumps(mig))
    assert again.options == opts and again.to == "errorcode"
    src = tmp_path / "in.jsonl"
    src.write_bytes(LOSSY + b"\n")
    by_opts = envglot.migrate([src], to="errorcode", check=True, jobs=1, options=Options(unsupported="raise"))
    by_kw = envglot.migrate([src], to="errorcode", check=True, jobs=1, unsupported="raise")
    assert by_opts.rejected == by_kw.rejected == 1
    with pytest.raises(EnvglotError, match="takes overlay paths"):
        envglot.Migrator("errorcode", options=Options(mappings=envglot.load_mappings()))


def test_migrate_reports_a_bad_option_as_a_usage_error(tmp_path: Path) -> None:
    from envglot.migration import MigrationError

    with pytest.raises(MigrationError, match="style must be") as ei:
        envglot.migrate([tmp_path], to="errorcode", check=True, style="fancy")  # type: ignore[arg-type]
    assert ei.value.exit_code == 2


def test_the_proxy_rewriter_takes_options() -> None:
    from envglot.proxy.rewrite import Rewriter

    wire = emcp.wrap(LOSSY)
    by_opts = Rewriter("errorcode", options=Options(unsupported="raise"), timing=False).result(wire, "lookup")
    by_kw = Rewriter("errorcode", timing=False).result(wire, "lookup")
    assert by_opts.result == by_kw.result  # the proxy never refuses: unsupported is always ignore
    legacy = emcp.wrap(_doc("legacy-v1", "a-found-false-error"))  # carries no tool name
    plain = Rewriter("code-graph", timing=False).result(legacy, "lookup")
    own = Rewriter("code-graph", options=Options(context={"tool": "renamed"}), timing=False).result(legacy, "lookup")
    assert b'"tool":"lookup"' in _envelope_of(plain.result)  # the per-call tool name, as before
    assert b'"tool":"renamed"' in _envelope_of(own.result)  # the caller's own context value wins


def _envelope_of(result: dict[str, Any]) -> bytes:
    return emcp.unwrap(result)


# ---- the caller's report level is never overwritten ------------------------------


def _entry_points() -> list[tuple[str, Callable[[Report, Options], object]]]:
    env = envglot.read(LOSSY)
    wire = emcp.wrap(LOSSY)
    return [
        ("convert", lambda r, o: envglot.convert(LOSSY, to="errorcode", options=o, report=r)),
        ("write", lambda r, o: envglot.write(env, "errorcode", options=o, report=r, source="dotbot")),
        ("Result.to", lambda r, o: LOSSY_RESULT.to("errorcode", options=o, report=r)),
        ("mcp.unwrap", lambda r, o: emcp.unwrap(wire, "errorcode", options=o, report=r)),
        ("mcp.wrap", lambda r, o: emcp.wrap(LOSSY, "errorcode", options=o, report=r)),
    ]


@pytest.mark.parametrize("name", [n for n, _ in _entry_points()])
def test_the_caller_report_level_is_never_overwritten(name: str) -> None:
    call = dict(_entry_points())[name]
    mine = Report(Level.WARN)
    with pytest.raises(envglot.UnsupportedError):  # the call's options refuse ...
        call(mine, Options(unsupported="raise"))
    assert mine.level is Level.WARN and mine.policy == Policy()  # ... the caller's report keeps its level
    mine = Report(Policy(level="raise", select=("field_dropped",)))
    call(mine, Options(unsupported=Level.IGNORE))  # the call ignores loss: nothing raised
    assert mine.policy == Policy(level="raise", select=("field_dropped",)) and mine.lossy


def test_reading_never_touches_the_report_level() -> None:
    for level in Level:
        mine = Report(level)
        envglot.read(b"\xef\xbb\xbf" + LOSSY, options=Options(unsupported="raise"), report=mine)
        emcp.unwrap_envelope(emcp.wrap(LOSSY), options=Options(unsupported="raise"), report=mine)
        Result(success=False, error="x", error_type="weird").to_envelope(report=mine)
        assert mine.level is level and len(mine) > 0


def test_internal_level_changes_act_on_a_copy() -> None:
    """The CLI and migrate count loss themselves (``tallied``), emits answers an exception with
    at most warn: neither changes the caller's options."""
    opts = Options(unsupported=Policy(level="warn", select=("code_mapped",)))
    tallied = opts.tallied()
    assert opts.policy.level is Level.WARN
    assert tallied.policy == Policy(level=Level.IGNORE, select=("code_mapped",))
    assert Options(unsupported="raise").tallied() == Options(unsupported="raise")
    mig = envglot.Migrator("errorcode", options=opts)
    assert mig.options is opts and mig.options.policy.level is Level.WARN
    refusing = Options(unsupported="raise")
    emcp.emits("errorcode", output="envelope", options=refusing)(lambda: 1 / 0)()
    assert refusing.policy.level is Level.RAISE


# ---- Level is accepted wherever a level name was ----------------------------------


def test_level_is_a_str_enum() -> None:
    assert [str(level) for level in Level] == ["ignore", "warn", "raise"]
    assert Level.RAISE == "raise" and Level("warn") is Level.WARN  # type: ignore[comparison-overlap]
    by_level: dict[str, int] = {Level.IGNORE: 1}
    assert by_level["ignore"] == 1  # equal and hashed as its name
    assert Policy(level="ignore").level is Level.IGNORE  # a name becomes the member
    assert Report("raise").level is Level.RAISE
    assert msgspec.json.encode(Policy(level=Level.RAISE)) == msgspec.json.encode(Policy(level="raise"))


@pytest.mark.parametrize("level", list(Level), ids=str)
def test_level_is_accepted_everywhere(level: Level, caplog: pytest.LogCaptureFixture) -> None:
    by_name = str(level)
    refuses = level is Level.RAISE
    calls: list[Callable[[Any], object]] = [
        lambda u: envglot.convert(LOSSY, to="errorcode", unsupported=u),
        lambda u: envglot.conversion(LOSSY, to="errorcode", unsupported=u).output,
        lambda u: envglot.Converter("errorcode", unsupported=u).convert_bytes(LOSSY),
        lambda u: envglot.write(envglot.read(LOSSY), "errorcode", unsupported=u),
        lambda u: LOSSY_RESULT.to("errorcode", unsupported=u),
        lambda u: emcp.unwrap(emcp.wrap(LOSSY), "errorcode", unsupported=u),
        lambda u: emcp.wrap(LOSSY, "errorcode", unsupported=u),
        lambda u: envglot.convert(LOSSY, to="errorcode", unsupported=Policy(level=u)),
        lambda u: envglot.convert(LOSSY, to="errorcode", report=Report(u), unsupported=u),
    ]
    caplog.set_level(logging.WARNING, logger="envglot")
    for call in calls:
        if refuses:
            with pytest.raises(envglot.UnsupportedError):
                call(level)
            with pytest.raises(envglot.UnsupportedError):
                call(by_name)
        else:
            assert call(level) == call(by_name)
    assert bool(caplog.records) is (level is Level.WARN)
    assert (envglot.Migrator("errorcode", unsupported=level).record(LOSSY).status == "rejected") is refuses
    assert envglot.Migrator("errorcode", unsupported=level).options == Options(unsupported=by_name)


def test_unset_is_not_a_value() -> None:
    assert repr(UNSET) == "<from options>"
    assert pickle.loads(pickle.dumps(UNSET)) is UNSET
    assert resolve(None, style=UNSET) is DEFAULT
