"""envglot.Converter: the reusable converter for hot loops (same answers as convert, any thread)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import envglot
from envglot import Converter, EnvglotError, ParseError, UnknownDialectError, UnsupportedError
from envglot.dialects import WRITABLE
from envglot.options import UNSET

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*/*.json"))
CASES = [(p, to) for p in EXAMPLES for to in WRITABLE]


def _id(case: tuple[Path, str]) -> str:
    p, to = case
    return f"{p.parent.name}/{p.stem}->{to}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_same_output_as_convert_for_every_kind(case: tuple[Path, str]) -> None:
    path, to = case
    raw = path.read_bytes()
    conv = Converter(to=to, unsupported="ignore")
    expected = envglot.convert(raw, to=to, unsupported="ignore")
    assert conv(raw) == expected
    assert conv.convert_bytes(raw) == expected
    text = conv(raw.decode())
    assert isinstance(text, str) and text == expected.decode()
    doc = json.loads(raw)
    as_dict = conv(doc)
    assert isinstance(as_dict, dict) and as_dict == envglot.convert(doc, to=to, unsupported="ignore")


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_conversion_carries_the_same_diagnostics(case: tuple[Path, str]) -> None:
    path, to = case
    raw = path.read_bytes()
    source = path.parent.name
    got = Converter(to=to, from_=source, unsupported="ignore").conversion(raw)
    want = envglot.conversion(raw, to=to, from_=source, unsupported="ignore")
    assert got == want
    assert got.source == source and got.target == to


def test_thread_safe_many_documents_concurrently() -> None:
    docs = [p.read_bytes() for p in EXAMPLES] * 40
    for to in WRITABLE:
        conv = Converter(to=to, unsupported="ignore")
        sequential = [conv.convert_bytes(d) for d in docs]
        with ThreadPoolExecutor(max_workers=8) as pool:
            concurrent = list(pool.map(conv.convert_bytes, docs))
        assert concurrent == sequential, to
        with ThreadPoolExecutor(max_workers=8) as pool:
            reports = list(pool.map(conv.conversion, docs))
        assert [r.diagnostics for r in reports] == [conv.conversion(d).diagnostics for d in docs]


def test_reuse_is_stateless() -> None:
    doc = (EXAMPLES[0]).read_bytes()
    conv = Converter(to="response-v2", unsupported="ignore")
    first = conv.conversion(doc)
    for _ in range(5):
        again = conv.conversion(doc)
        assert again.output == first.output
        assert again.diagnostics == first.diagnostics  # no accumulation across calls


def test_options_are_applied() -> None:
    doc = b'{"success": true, "value": {"a": 1}}'
    assert Converter(to="result", style="pretty")(doc) == b'{\n  "success": true,\n  "value": {\n    "a": 1\n  }\n}'
    got = Converter(to="dotbot", context={"tool": "search", "tool_version": "2.1.0"})(doc)
    body = json.loads(got)
    assert (body["tool"], body["version"]) == ("search", "2.1.0")


def test_raise_level_raises_per_call_and_keeps_working() -> None:
    conv = Converter(to="response-v2", from_="result", unsupported="raise")
    lossy = b'{"success": true, "value": [1], "instruction": "say it"}'
    with pytest.raises(UnsupportedError) as info:
        conv(lossy)
    assert any(d.path == "$.instruction" for d in info.value.diagnostics)
    assert json.loads(conv(b'{"success": true, "value": {"a": 1}}')) == {
        "success": True,
        "data": {"a": 1},
        "error": None,
        "meta": {"version": "response-v2"},
    }


def test_mcp_wrapper_is_unwrapped_when_detecting() -> None:
    env = (Path(EXAMPLES[0])).read_bytes()
    wire = {"content": [{"type": "text", "text": env.decode()}], "isError": False}
    got = Converter(to="result", unsupported="ignore").conversion(wire)
    assert got.unwrapped
    assert got.output == envglot.convert(env, to="result", unsupported="ignore")


def test_names_and_aliases() -> None:
    conv = Converter(to="v2", from_="adr-003")
    assert (conv.from_, conv.to) == ("result", "response-v2")
    assert repr(conv) == "Converter(from_='result', to='response-v2')"
    assert Converter(to="dotbot").from_ is None


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"to": "response-v3"}, UnknownDialectError),
        ({"to": "result", "from_": "dotbott"}, UnknownDialectError),
        ({"to": "legacy-v1"}, EnvglotError),
        ({"to": "result", "unsupported": "loud"}, EnvglotError),
        ({"to": "result", "style": "tabs"}, EnvglotError),
    ],
)
def test_bad_options_fail_at_construction(kwargs: dict[str, str], error: type[Exception]) -> None:
    with pytest.raises(error):
        Converter(**kwargs)  # type: ignore[arg-type]


def test_bad_input_names_the_path() -> None:
    conv = Converter(to="response-v2", from_="errorcode")
    with pytest.raises(ParseError) as info:
        conv(b'{"success": "yes", "data": null}')
    assert info.value.path == "$.success"
    with pytest.raises(ParseError):
        conv(b"not json")


def test_one_shot_calls_share_a_pipeline_per_options() -> None:
    """convert() reuses the pipeline of earlier calls with the same options (issue 12)."""
    from envglot import pipeline
    from envglot.options import Options

    first = pipeline._pipeline("dotbot", "response-v2", Options(unsupported="ignore"))
    assert pipeline._pipeline("dotbot", "response-v2", Options(unsupported="ignore")) is first
    assert pipeline._pipeline("dotbot", "response-v2", Options(unsupported="ignore", preserve=True)) is not first
    ctx = {"tool": "search"}  # a caller's dict may change between calls: never cached
    with_ctx = Options(unsupported="ignore", context=ctx)
    assert pipeline._pipeline(None, "dotbot", with_ctx) is not pipeline._pipeline(None, "dotbot", with_ctx)


def test_one_shot_calls_are_keyed_by_their_own_arguments_too() -> None:
    """Plain keyword calls skip option resolution: same arguments, same pipeline; an argument
    equal to a valid one but of another type is still refused; overlays are resolved."""
    from envglot import pipeline
    from envglot.mappings import mappings_for

    doc = b'{"success": true, "data": {"n": 1}}'
    envglot.convert(doc, to="result", strict=True, unsupported="ignore")
    plain = [  # this call's key only (earlier tests leave pipelines of other arguments)
        k
        for k in pipeline._PIPELINES
        if k[:8] == (pipeline._ARGUMENTS, "result", None, UNSET, "ignore", UNSET, True, UNSET)
    ]
    assert plain, "the call's own arguments key a pipeline"
    p = pipeline._PIPELINES[plain[0]]
    assert pipeline.one_shot("result", None, None, UNSET, "ignore", UNSET, UNSET, UNSET, True, UNSET) is p
    with pytest.raises(EnvglotError, match="strict must be True or False, not 1"):
        envglot.convert(doc, to="result", strict=1, unsupported="ignore")
    with pytest.raises(EnvglotError, match="style must be"):
        envglot.convert(doc, to="result", style=["pretty"])  # unhashable: resolved, and refused there
    overlay = pipeline.one_shot("result", None, None, UNSET, UNSET, [], UNSET, UNSET, UNSET, UNSET)
    assert overlay.mappings is mappings_for([])


def test_one_shot_context_is_read_on_every_call() -> None:
    doc = b'{"success": true, "value": {"a": 1}}'
    ctx = {"tool": "one"}
    assert json.loads(envglot.convert(doc, to="dotbot", context=ctx))["tool"] == "one"
    ctx["tool"] = "two"
    assert json.loads(envglot.convert(doc, to="dotbot", context=ctx))["tool"] == "two"
    back = envglot.convert(doc, to="dotbot", context=ctx, preserve=True)
    assert json.loads(back)["tool"] == "two"
