"""The loss policy: ``unsupported=`` levels and ``envglot.Policy``, one log record, preserve."""

from __future__ import annotations

import logging
import pickle

import pytest

import envglot
from envglot import Kind, Policy
from envglot.diagnostics import DISCARD, listening, report_for
from golden import cases

LOSSY = next(c for c in cases("dotbot") if c.stem == "real-multi-error").data


def _lossy(to: str = "errorcode") -> list[envglot.Diagnostic]:
    return [d for d in envglot.conversion(LOSSY, to=to, unsupported="ignore").diagnostics if d.lossy]


def test_select_refuses_only_the_selected_kind() -> None:
    kinds = {d.kind for d in _lossy()}
    assert {Kind.CODE_MAPPED, Kind.FIELD_DROPPED} <= kinds
    with pytest.raises(envglot.UnsupportedError) as exc:
        envglot.convert(LOSSY, to="errorcode", unsupported=Policy(level="raise", select=("code_mapped",)))
    assert {d.kind for d in exc.value.diagnostics} == {Kind.CODE_MAPPED}


def test_ignore_by_kind_and_path_lets_the_rest_count() -> None:
    lossy = _lossy()
    others = [d for d in lossy if not (d.kind == Kind.FIELD_DROPPED and d.path == "$.summary")]
    with pytest.raises(envglot.UnsupportedError) as exc:
        envglot.convert(LOSSY, to="errorcode", unsupported=Policy(level="raise", ignore=("field_dropped:$.summary",)))
    assert exc.value.diagnostics == others
    every = tuple(sorted({str(d.kind) for d in lossy}))
    out = envglot.convert(LOSSY, to="errorcode", unsupported=Policy(level="raise", ignore=every))
    assert out == envglot.convert(LOSSY, to="errorcode", unsupported="ignore")


@pytest.mark.parametrize(
    ("selector", "path", "hit"),
    [
        ("field_dropped:$.audit", "$.audit.host", True),
        ("field_dropped:$.audit", "$.auditor", False),
        ("field_dropped:$.errors", "$.errors[0].path", True),
        ("field_dropped:$.errors[*].path", "$.errors[3].path", True),
        ("field_dropped:$.errors[*].path", "$.errors[3].code", False),
        ("field_dropped", "$.anything", True),
        ("code_mapped", "$.anything", False),
    ],
)
def test_selector_paths(selector: str, path: str, hit: bool) -> None:
    d = envglot.Diagnostic(kind=Kind.FIELD_DROPPED, path=path, message="m")
    assert Policy(level="raise", select=(selector,)).refuses(d) is hit


@pytest.mark.parametrize(
    "kwargs",
    [
        {"level": "loud"},
        {"select": ("no_such_kind",)},
        {"ignore": ("field_dropped:summary",)},
        {"select": "code_mapped"},
    ],
)
def test_a_bad_policy_is_an_envglot_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(envglot.EnvglotError):
        Policy(**kwargs)  # type: ignore[arg-type]


def test_selecting_a_note_kind_refuses_it_and_notes_are_not_lossy_by_default() -> None:
    doc = b'{"success": true, "value": {"n": 1}}'
    conv = envglot.conversion(doc, to="code-graph", unsupported="raise")
    assert {d.kind for d in conv.diagnostics} >= {Kind.SYNTHESIZED} and not conv.lossy
    with pytest.raises(envglot.UnsupportedError):
        envglot.convert(doc, to="code-graph", unsupported=Policy(level="raise", select=("synthesized",)))


def test_the_caller_report_level_is_never_overwritten() -> None:
    report = envglot.Report("warn")
    with pytest.raises(envglot.UnsupportedError):
        envglot.convert(LOSSY, to="errorcode", unsupported="raise", report=report)
    assert report.level == "warn"
    report = envglot.Report("raise")
    envglot.convert(LOSSY, to="errorcode", unsupported="ignore", report=report)
    assert report.level == "raise" and report.lossy


def test_policy_pickles_and_hashes() -> None:
    p = Policy(level="raise", select=("code_mapped",), ignore=("field_dropped:$.summary",))
    assert pickle.loads(pickle.dumps(p)) == p and hash(p) == hash(
        Policy(**{f: getattr(p, f) for f in p.__struct_fields__})
    )
    assert envglot.Converter("errorcode", unsupported=p).policy is p


def test_nobody_listening_means_nothing_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    lg = logging.getLogger("envglot")
    monkeypatch.setattr(lg, "disabled", False)
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    monkeypatch.setattr(lg, "handlers", [])
    assert not listening()
    assert report_for("warn") is DISCARD
    assert report_for("raise") is not DISCARD
    lg.addHandler(logging.NullHandler())
    try:
        assert listening() and report_for("warn") is not DISCARD
        monkeypatch.setattr(lg, "level", logging.ERROR)
        lg.manager._clear_cache()  # type: ignore[attr-defined]
        assert not listening()
    finally:
        lg.handlers.clear()
        lg.manager._clear_cache()  # type: ignore[attr-defined]
    # the conversion itself is unchanged, and diagnostics stay available on Conversion
    assert envglot.convert(LOSSY, to="errorcode") == envglot.convert(LOSSY, to="errorcode", unsupported="ignore")
    assert envglot.conversion(LOSSY, to="errorcode").lossy


def test_converter_logs_one_record_per_call(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="envglot")
    conv = envglot.Converter("errorcode", context={"tool": "t1"})
    for _ in range(3):
        conv(LOSSY)
    records = [r for r in caplog.records if r.name == "envglot"]
    assert len(records) == 3
    assert all(r.tool == "solution-health-check" for r in records)  # type: ignore[attr-defined]


def test_notes_only_log_one_info_record(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="envglot")
    envglot.convert(b'{"success": true, "value": {"n": 1}}', to="code-graph", context={"tool": "lookup"})
    (r,) = [r for r in caplog.records if r.name == "envglot"]
    assert r.levelno == logging.INFO and "(tool lookup)" in r.getMessage() and "synthesized" in r.getMessage()


PAIRS = [("dotbot", "response-v2"), ("dotbot", "errorcode"), ("code-graph", "result"), ("response-v2", "dotbot")]


@pytest.mark.parametrize(("src", "dst"), PAIRS)
def test_preserve_counts_what_the_residue_carries_as_not_lost(src: str, dst: str) -> None:
    for case in cases(src):
        plain = envglot.conversion(case.data, from_=src, to=dst, unsupported="ignore")
        kept = envglot.conversion(case.data, from_=src, to=dst, preserve=True, unsupported="raise")
        back = envglot.conversion(kept.output, from_=dst, to=src, preserve=True, unsupported="ignore")
        assert envglot.convert(back.output, from_=src, to=src, unsupported="ignore") == envglot.convert(
            case.data, from_=src, to=src, unsupported="ignore"
        ), case.stem
        assert not kept.lossy
        assert [d.kind for d in kept.diagnostics if d.carried] == [d.kind for d in plain.diagnostics if d.lossy]


def test_emits_logs_one_record_per_call_naming_the_tool(caplog: pytest.LogCaptureFixture) -> None:
    import envglot.mcp as emcp

    @emcp.emits("errorcode", output="wire", timing=False)
    def search_docs(query: str) -> envglot.Result[list[str]]:
        return envglot.Result.ok([query], message="1 document found")

    caplog.set_level(logging.INFO, logger="envglot")
    for q in ("a", "b"):
        search_docs(q)
    records = [r for r in caplog.records if r.name == "envglot"]
    assert len(records) == 2
    assert all("(tool search_docs)" in r.getMessage() for r in records)
    assert all(r.tool == "search_docs" for r in records)  # type: ignore[attr-defined]


def test_report_level_is_settable_and_validated() -> None:
    report = envglot.Report()
    report.level = "raise"
    assert report.policy == Policy(level="raise")
    with pytest.raises(envglot.EnvglotError):
        report.level = "loud"
