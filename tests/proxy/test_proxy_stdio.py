"""The proxy between the fixture upstream and the SDK's real client, over stdio."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

import envglot
from envelopes import detected_as
from envglot.dialects import WRITABLE
from envglot.mcp import output_schema
from envglot.proxy import META_KEY

from .conftest import EXPECTED_ERROR, error_flag, output_schema_of, stdio_session, structured, upstream_cmd

jsonschema = pytest.importorskip("jsonschema")
LIMIT = 25  # seconds per test, processes included


def _check_result(result: Any, target: str, schema: dict[str, Any], is_error: bool) -> dict[str, Any]:
    """The result carries a ``target`` envelope valid against ``schema``, in both places, with ``isError``."""
    doc = structured(result)
    assert isinstance(doc, dict)
    jsonschema.validate(doc, schema)
    assert detected_as(json.dumps(doc).encode(), target)  # or a success read with from_ (marked_success)
    assert error_flag(result) is is_error
    assert envglot.read(doc, target).ok is (not is_error)
    assert json.loads(result.content[0].text) == doc
    return doc


async def _every_tool(target: str, log: Path) -> None:
    async with stdio_session(["proxy", "-t", target, "--prefix", "fx", "--", *upstream_cmd()], log) as s:
        listed = (await s.list_tools()).tools
        names = {t.name for t in listed}
        assert {f"fx_{t}" for t in EXPECTED_ERROR} <= names
        assert all(n.startswith("fx_") for n in names)
        for tool in listed:
            if tool.name.removeprefix("fx_") in EXPECTED_ERROR:  # no schema of their own: the envelope's
                assert output_schema_of(tool) == output_schema(target)
                assert "$ref" not in json.dumps(output_schema_of(tool))
        for name, is_error in EXPECTED_ERROR.items():
            result = await s.call_tool(f"fx_{name}", {})
            _check_result(result, target, output_schema(target), is_error)
            assert result.meta is None or META_KEY not in result.meta  # not without --annotate


@pytest.mark.parametrize("targets", [WRITABLE[:3], WRITABLE[3:]], ids=lambda t: "+".join(t))
def test_every_result_is_the_target_dialect(targets: tuple[str, ...], tmp_path: Path) -> None:
    """One proxy per writable target, run side by side (each spawns its own upstream)."""

    async def run() -> None:
        with anyio.fail_after(LIMIT):
            async with anyio.create_task_group() as tg:
                for target in targets:
                    tg.start_soon(_every_tool, target, tmp_path / f"{target}.log")

    anyio.run(run)
    for target in targets:
        log = (tmp_path / f"{target}.log").read_text()
        lines = [ln for ln in log.splitlines() if ln.startswith("envglot proxy: call ")]
        assert len(lines) == len(EXPECTED_ERROR), log  # one log line per call
        assert any("source=dotbot" in ln and f"target={target}" in ln for ln in lines)
        assert any("source=none" in ln and "synthesized" in ln for ln in lines)


def test_no_envelope_is_wrapped_without_flipping_is_error(tmp_path: Path) -> None:
    async def run() -> None:
        with anyio.fail_after(LIMIT):
            async with stdio_session(
                ["proxy", "-t", "result", "--annotate", "--", *upstream_cmd()], tmp_path / "l"
            ) as s:
                ok = await s.call_tool("plain", {"text": "just words"})
                doc = _check_result(ok, "result", output_schema("result"), False)
                assert doc["value"] == {"text": "just words"}
                bad = await s.call_tool("plain_error", {"text": "disk on fire"})
                doc = _check_result(bad, "result", output_schema("result"), True)
                assert doc["error"] == "disk on fire"
                kinds = [d["kind"] for d in bad.meta[META_KEY]]
                assert "synthesized" in kinds

    anyio.run(run)


def test_annotate_puts_diagnostics_in_meta(tmp_path: Path) -> None:
    async def run() -> None:
        with anyio.fail_after(LIMIT):
            args = ["proxy", "-t", "response-v2", "--annotate", "--", *upstream_cmd()]
            async with stdio_session(args, tmp_path / "l") as s:
                result = await s.call_tool("dotbot_error", {})
                diags = result.meta[META_KEY]
                assert {"kind": "code_mapped", "path": "$.errors[0].code"}.items() <= diags[-1].items()
                assert all(set(d) <= {"kind", "path", "message", "dialect"} for d in diags)

    anyio.run(run)


def test_crash_mid_call_gives_a_failure_and_other_upstreams_keep_serving(tmp_path: Path) -> None:
    cmd = upstream_cmd()
    config = tmp_path / "proxy.toml"
    config.write_text(
        'target = "errorcode"\ntimeout = 15\n'
        + "".join(f"[[upstream]]\nprefix = {p!r}\ncommand = {cmd[0]!r}\nargs = [{cmd[1]!r}]\n" for p in ("a", "b"))
    )
    schema = output_schema("errorcode")

    async def run() -> None:
        with anyio.fail_after(LIMIT):
            async with stdio_session(["proxy", "--upstreams", str(config)], tmp_path / "l") as s:
                names = {t.name for t in (await s.list_tools()).tools}
                assert {"a_crash", "b_crash", "a_graph_ok", "b_graph_ok"} <= names
                crashed = await s.call_tool("a_crash", {})
                doc = _check_result(crashed, "errorcode", schema, True)
                assert doc["error"]["retryable"] is True
                assert "closed the connection" in doc["error"]["message"]
                # the other upstream is untouched, and the crashed one is restarted on its next call
                _check_result(await s.call_tool("b_graph_ok", {}), "errorcode", schema, False)
                _check_result(await s.call_tool("a_dotbot_ok", {}), "errorcode", schema, False)

    anyio.run(run)


def test_timeout_is_a_retryable_unavailable_failure(tmp_path: Path) -> None:
    """--timeout bounds the upstream's start-up too: 8 s, for an SDK server starting on a loaded machine."""

    async def run() -> None:
        with anyio.fail_after(LIMIT + 15):
            args = ["proxy", "-t", "errorcode", "--timeout", "8", "--", *upstream_cmd()]
            async with stdio_session(args, tmp_path / "l") as s:
                result = await s.call_tool("slow", {"seconds": 30})
                doc = _check_result(result, "errorcode", output_schema("errorcode"), True)
                assert doc["error"]["retryable"] is True
                assert "no answer within 8 s" in doc["error"]["message"]
                assert envglot.read(doc, "errorcode").problems[0].category == "unavailable"
                _check_result(await s.call_tool("graph_ok", {}), "errorcode", output_schema("errorcode"), False)

    anyio.run(run)


def test_unknown_tool_stays_a_protocol_error(tmp_path: Path) -> None:
    from envglot.proxy.sdk import ProtocolError, error_code

    async def run() -> None:
        with anyio.fail_after(LIMIT):
            async with stdio_session(
                ["proxy", "-t", "result", "--prefix", "fx", "--", *upstream_cmd()], tmp_path / "l"
            ) as s:
                with pytest.raises(ProtocolError) as exc:
                    await s.call_tool("fx_no_such_tool", {})
                assert error_code(exc.value) == -32602
                with pytest.raises(ProtocolError):
                    await s.call_tool("dotbot_ok", {})  # unprefixed names are not published

    anyio.run(run)


def test_prompts_and_resources_are_forwarded(tmp_path: Path) -> None:
    cmd = upstream_cmd()
    config = tmp_path / "proxy.toml"
    config.write_text(
        'target = "result"\n'
        + "".join(f"[[upstream]]\nprefix = {p!r}\ncommand = {cmd[0]!r}\nargs = [{cmd[1]!r}]\n" for p in ("a", "b"))
    )

    async def run() -> None:
        with anyio.fail_after(LIMIT):
            async with stdio_session(["proxy", "--upstreams", str(config)], tmp_path / "l") as s:
                prompts = {p.name for p in (await s.list_prompts()).prompts}
                assert {"a_review", "b_review"} <= prompts
                got = await s.get_prompt("b_review", {"path": "src/x.py"})
                assert "Review src/x.py" in got.messages[0].content.text
                uris = [str(r.uri) for r in (await s.list_resources()).resources]
                assert uris == ["fixture://readme"]  # listed by both upstreams, published once
                read = await s.read_resource("fixture://readme")
                assert read.contents[0].text == "fixture upstream for envglot proxy tests"

    anyio.run(run)
