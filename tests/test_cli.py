"""The installed ``envglot`` command, run in a subprocess on the bundled examples and on bad input."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import msgspec
import pytest

import envglot
from envglot import detect
from envglot.cli import main
from envglot.cli.commands import MODULES, every_command
from envglot.transport import wrap_bytes

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DOTBOT_OK = EXAMPLES / "dotbot" / "structure-ok.json"
DOTBOT_ERR = EXAMPLES / "dotbot" / "register-error.json"
EC_RATE = EXAMPLES / "errorcode" / "rate-limited.json"
V2_ERR = EXAMPLES / "response-v2" / "validation-error.json"


def envglot_exe() -> str:
    """The ``envglot`` script of this interpreter's environment (else the one on PATH)."""
    beside = Path(sys.executable).with_name("envglot")
    if beside.exists():
        return str(beside)
    found = shutil.which("envglot")
    assert found, "envglot is not installed (pip install -e .)"
    return found


EXE = envglot_exe()


def run(
    *args: str | os.PathLike[str], stdin: bytes = b"", cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "ENVGLOT_MAPPINGS_DIR"} | {"COLUMNS": "100"}
    return subprocess.run([EXE, *map(str, args)], input=stdin, capture_output=True, cwd=cwd, env=env, timeout=60)


def compact(path: Path) -> bytes:
    return msgspec.json.encode(msgspec.json.decode(path.read_bytes()))


def err_lines(p: subprocess.CompletedProcess[bytes]) -> list[str]:
    return p.stderr.decode().splitlines()


# --- convert -----------------------------------------------------------------------------


def test_stdin_to_stdout_with_warnings_on_stderr() -> None:
    p = run("convert", "-t", "response-v2", stdin=DOTBOT_OK.read_bytes())
    assert p.returncode == 0, p.stderr
    assert p.stdout.endswith(b"}\n") and p.stdout.count(b"\n") == 1
    assert detect(p.stdout) == "response-v2"
    assert msgspec.json.decode(p.stdout)["data"]["solution_root"] == "C:\\repos\\Axiome"
    lines = err_lines(p)
    assert lines[0] == "warning: 1 of 1 document lost or changed information; -v shows each:"
    assert "  1  field_dropped  $.audit.host" in lines
    assert all(line.startswith("  1  field_dropped  $.") for line in lines[1:])
    verbose = run("convert", "-t", "response-v2", "-v", stdin=DOTBOT_OK.read_bytes())
    assert "warning: field_dropped: $.audit.host: host has no place in response-v2" in err_lines(verbose)


def test_dash_reads_stdin_and_output_is_deterministic() -> None:
    a = run("convert", "-", "-t", "code-graph", stdin=EC_RATE.read_bytes())
    b = run("convert", EC_RATE, "-t", "code-graph")
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout


def test_output_file_is_written_atomically(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    p = run("convert", DOTBOT_OK, "-t", "errorcode", "-o", out, "--pretty")
    assert p.returncode == 0, p.stderr
    assert p.stdout == b""
    assert msgspec.json.decode(out.read_bytes())["success"] is True
    assert out.read_bytes().startswith(b'{\n  "success": true')
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out.json"]  # no temporary file left


def test_output_through_a_symlink_and_into_a_fifo(tmp_path: Path) -> None:
    """A symlink keeps pointing at the rewritten file; a FIFO (like /dev/null) is written in place."""
    real = tmp_path / "real.json"
    real.write_bytes(b"old\n")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert run("convert", DOTBOT_OK, "-t", "errorcode", "-o", link, "--unsupported", "ignore").returncode == 0
    assert link.is_symlink() and detect(real.read_bytes()) == "errorcode"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    p = run("convert", DOTBOT_OK, "-t", "errorcode", "-o", fifo, "--unsupported", "ignore")
    reader.join(timeout=30)
    assert p.returncode == 0 and detect(got[0]) == "errorcode"
    assert fifo.is_fifo()


def test_bad_input_leaves_existing_output_untouched(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_bytes(b"previous\n")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"schema_id": "dotbot-mcp-response@1", "status": 3}')
    p = run("convert", bad, "-t", "errorcode", "-o", out)
    assert p.returncode == 65
    assert out.read_bytes() == b"previous\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["bad.json", "out.json"]
    (line,) = err_lines(p)
    assert line.startswith(f"{bad}: error: not a valid dotbot envelope")
    assert "(at $" in line


def test_jsonl_bad_line_in_the_middle(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(compact(DOTBOT_OK) + b"\n" + b'{"success": tru\n' + b"\n" + compact(EC_RATE) + b"\n")
    p = run("convert", src, "-t", "response-v2", "--unsupported", "ignore")
    assert p.returncode == 65
    lines = p.stdout.splitlines()
    assert len(lines) == 2
    first, second = (msgspec.json.decode(x) for x in lines)
    assert first["success"] is True and "solution_root" in first["data"]  # input order kept
    assert second["success"] is False and second["error"] == "X API rate limit exceeded"
    errs = err_lines(p)
    assert errs[0].startswith(f"{src}:2: error: invalid JSON")
    assert errs[-1] == f"{src}: 1 of 3 records not converted"


def test_jsonl_detected_by_content_and_forced_by_flag(tmp_path: Path) -> None:
    two = compact(DOTBOT_OK) + b"\n" + compact(DOTBOT_ERR) + b"\n"
    p = run("convert", "-t", "result", "--unsupported", "ignore", "--pretty", "-v", stdin=two)
    assert p.returncode == 0
    assert len(p.stdout.splitlines()) == 2  # compact, one per line, despite --pretty
    assert "note: JSON Lines output is one compact document per line; --pretty ignored" in err_lines(p)
    one = run("convert", "-t", "result", "--unsupported", "ignore", "--jsonl", stdin=compact(DOTBOT_OK) + b"\n")
    assert one.returncode == 0 and len(one.stdout.splitlines()) == 1
    name = tmp_path / "one.ndjson"
    name.write_bytes(b"[1]\n")
    named = run("convert", name, "-t", "result")
    assert named.returncode == 65
    assert err_lines(named)[0].startswith(f"{name}:1: error:")


def test_pretty_single_document_is_one_document() -> None:
    p = run("convert", "-t", "dotbot", "--unsupported", "ignore", stdin=EC_RATE.read_bytes())
    assert p.returncode == 0
    assert detect(p.stdout) == "dotbot"


def test_missing_input_exits_66() -> None:
    p = run("convert", "no/such/file.json", "-t", "dotbot")
    assert p.returncode == 66
    assert err_lines(p) == ["no/such/file.json: error: cannot read input: No such file or directory"]


@pytest.mark.parametrize("target", ["missing-dir/out.json", "."])
def test_unwritable_output_exits_74(tmp_path: Path, target: str) -> None:
    p = run("convert", DOTBOT_OK, "-t", "errorcode", "-o", target, cwd=tmp_path)
    assert p.returncode == 74
    assert "error: cannot write output" in p.stderr.decode()
    assert p.stdout == b""


def test_unknown_dialect_is_a_usage_error_with_a_suggestion() -> None:
    p = run("convert", DOTBOT_OK, "-t", "respons-v2")
    assert p.returncode == 2
    assert "unknown dialect 'respons-v2'; did you mean 'response-v2'?" in p.stderr.decode()
    ro = run("convert", DOTBOT_OK, "-t", "legacy-v1")
    assert ro.returncode == 2
    assert "legacy-v1 is a read-only source dialect" in ro.stderr.decode()
    for cmd in (["validate", "-f", "dotbt", DOTBOT_OK], ["schema", "dotbt"], ["codes", "X", "--dialect", "dotbt"]):
        q = run(*cmd)
        assert q.returncode == 2 and "did you mean 'dotbot'?" in q.stderr.decode(), cmd


def test_fail_if_lossy_still_writes_output() -> None:
    p = run("convert", DOTBOT_OK, "-t", "response-v2", "--fail-if-lossy")
    assert p.returncode == 1
    assert detect(p.stdout) == "response-v2"
    assert err_lines(p)[-1] == "error: 1 lossy document(s) (--fail-if-lossy)"
    same = run("convert", DOTBOT_OK, "-t", "dotbot", "--fail-if-lossy")
    assert same.returncode == 0 and same.stderr == b""


def test_unsupported_raise_on_json_lines_skips_only_lossy_records() -> None:
    lines = compact(DOTBOT_OK) + b"\n" + compact(DOTBOT_OK) + b"\n"
    p = run("convert", "-t", "dotbot", "--unsupported", "raise", "--jsonl", stdin=lines)
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 2
    mixed = compact(DOTBOT_OK) + b"\n" + compact(EC_RATE) + b"\n"
    q = run("convert", "-f", "auto", "-t", "errorcode", "--unsupported", "raise", stdin=mixed)
    assert q.returncode == 1
    assert msgspec.json.decode(q.stdout) == msgspec.json.decode(compact(EC_RATE))
    errs = err_lines(q)
    assert errs[-2].startswith("<stdin>:1: error: lossy conversion refused")
    assert errs[-1] == "<stdin>: 1 of 2 records not converted"


def test_unsupported_levels() -> None:
    ignore = run("convert", DOTBOT_OK, "-t", "response-v2", "--unsupported", "ignore")
    assert ignore.returncode == 0 and ignore.stderr == b""
    refuse = run("convert", DOTBOT_OK, "-t", "response-v2", "--unsupported", "raise")
    assert refuse.returncode == 1
    assert refuse.stdout == b""
    errs = err_lines(refuse)
    assert errs[-1] == f"{DOTBOT_OK}: error: lossy conversion refused (--unsupported raise): 6 lossy diagnostics"
    assert len(errs) == 7


def test_verbose_shows_notes() -> None:
    quiet = run("convert", EC_RATE, "-t", "code-graph")
    loud = run("convert", EC_RATE, "-t", "code-graph", "-v")
    assert not any(line.startswith("note:") for line in err_lines(quiet))
    notes = [line for line in err_lines(loud) if line.startswith("note:")]
    assert "note: detected errorcode" in notes
    assert "note: synthesized: $.data.tool: code-graph requires a tool name; wrote 'unknown' (by rule)" in notes


def test_context_values() -> None:
    p = run(
        "convert", EC_RATE, "-t", "code-graph", "--context", "workspace.root=/src/app", "--context", 'tool:="x_post"'
    )
    assert p.returncode == 0
    data = msgspec.json.decode(p.stdout)["data"]
    assert data["workspace"] == {"root": "/src/app", "repoName": "app"}
    assert data["tool"] == "x_post"
    bad = run("convert", EC_RATE, "-t", "code-graph", "--context", "workspace.rot=/x")
    assert bad.returncode == 2 and "did you mean 'workspace.root'?" in bad.stderr.decode()


def test_log_file_has_one_json_object_per_diagnostic(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(compact(DOTBOT_OK) + b"\n" + b"[1]\n")
    log = tmp_path / "log.jsonl"
    p = run("convert", src, "-t", "response-v2", "--log", log, "--unsupported", "ignore")
    assert p.returncode == 65
    records = [msgspec.json.decode(line) for line in log.read_bytes().splitlines()]
    assert len(records) == 7
    assert all(set(r) == {"file", "line", "kind", "path", "message", "dialect", "lossy"} for r in records)
    assert records[0] == {
        "file": str(src),
        "line": 1,
        "kind": "field_dropped",
        "path": "$.summary",
        "message": "summary has no place in response-v2",
        "dialect": "response-v2",
        "lossy": True,
    }
    assert records[-1]["line"] == 2 and records[-1]["kind"] == "detect_error"


def test_wrap_mcp_mirrors_failure_in_is_error() -> None:
    p = run("convert", V2_ERR, "-t", "errorcode", "--wrap", "mcp", "--unsupported", "ignore")
    assert p.returncode == 0
    wire = msgspec.json.decode(p.stdout)
    assert wire["isError"] is True
    assert wire["structuredContent"]["error"]["code"] == "validation_error"
    assert msgspec.json.decode(wire["content"][0]["text"]) == wire["structuredContent"]
    ok = run("convert", DOTBOT_OK, "-t", "errorcode", "--wrap", "mcp", "--unsupported", "ignore")
    assert msgspec.json.decode(ok.stdout)["isError"] is False


def test_call_tool_result_input_is_unwrapped() -> None:
    wrapped = wrap_bytes(DOTBOT_ERR.read_bytes(), is_error=True)
    p = run("convert", "-t", "response-v2", "-v", "--unsupported", "ignore", stdin=wrapped)
    assert p.returncode == 0
    assert msgspec.json.decode(p.stdout)["data"]["error_code"] == "NOT_FOUND"
    assert "note: unwrapped an MCP CallToolResult; read the envelope as dotbot" in err_lines(p)
    mismatch = run("convert", "-t", "response-v2", "-v", stdin=wrap_bytes(DOTBOT_ERR.read_bytes(), is_error=False))
    note = "note: status_mismatch: $.isError: MCP isError=false but the envelope says failure; the failure wins"
    assert note in err_lines(mismatch)
    d = run("detect", "-v", stdin=wrapped)
    assert d.stdout == b"dotbot\n"
    assert err_lines(d) == ["note: unwrapped an MCP CallToolResult"]


def test_mapping_overlay_changes_the_reading(tmp_path: Path) -> None:
    doc = msgspec.json.decode(DOTBOT_ERR.read_bytes())
    doc["errors"][0]["code"] = "SPEC_MISSING"
    src = tmp_path / "in.json"
    src.write_bytes(msgspec.json.encode(doc))
    overlay = tmp_path / "dotbot.toml"
    overlay.write_text('dialect = "dotbot"\n[codes.SPEC_MISSING]\ncategory = "not_found"\n')
    plain = run("convert", src, "-t", "response-v2", "--unsupported", "ignore")
    with_overlay = run("convert", src, "-t", "response-v2", "--unsupported", "ignore", "--mappings", overlay)
    assert msgspec.json.decode(plain.stdout)["data"]["error_type"] == "internal"
    assert msgspec.json.decode(with_overlay.stdout)["data"]["error_code"] == "NOT_FOUND"
    missing = run("convert", src, "-t", "response-v2", "--mappings", tmp_path / "nope.toml")
    assert missing.returncode == 66
    overlay.write_text('dialect = "dotbot"\n[codes.SPEC_MISSING]\ncategory = "lost"\n')
    broken = run("convert", src, "-t", "response-v2", "--mappings", overlay)
    assert broken.returncode == 65
    assert "[codes.SPEC_MISSING]" in broken.stderr.decode()


def test_empty_input_is_bad_data() -> None:
    p = run("convert", "-t", "dotbot", stdin=b"")
    assert p.returncode == 65
    assert err_lines(p)[0].startswith("<stdin>: error: invalid JSON")


# --- detect, validate, codes, schema, dialects, mappings ----------------------------------


def test_detect_names_files_when_several(tmp_path: Path) -> None:
    assert run("detect", DOTBOT_OK).stdout == b"dotbot\n"
    p = run("detect", DOTBOT_OK, EC_RATE, tmp_path / "gone.json")
    assert p.returncode == 66
    assert p.stdout.decode().splitlines() == [f"{DOTBOT_OK}: dotbot", f"{EC_RATE}: errorcode"]
    assert "gone.json: error: cannot read input" in p.stderr.decode()


def test_detect_jsonl_one_line_per_record() -> None:
    data = compact(DOTBOT_OK) + b"\n" + compact(V2_ERR) + b"\nnot json\n"
    p = run("detect", stdin=data)
    assert p.returncode == 65
    assert p.stdout == b"dotbot\nresponse-v2\n"
    assert err_lines(p)[0].startswith("<stdin>:3: error: invalid JSON")


def test_validate_clean_and_violating(tmp_path: Path) -> None:
    clean = run("validate", DOTBOT_OK)
    assert (clean.returncode, clean.stdout.decode()) == (0, f"{DOTBOT_OK}: valid dotbot\n")
    doc = msgspec.json.decode(DOTBOT_OK.read_bytes())
    doc["status"] = "error"
    doc["audit"]["duration_ms"] = 4.5
    bad = tmp_path / "bad.json"
    bad.write_bytes(msgspec.json.encode(doc))
    p = run("validate", bad)
    assert p.returncode == 1
    assert p.stdout.decode().splitlines() == [
        f"{bad}: $.audit.duration_ms: expected an integer, got number",
        f"{bad}: $.status: status 'error' disagrees with errors/warnings (computed 'ok')",
        f"{bad}: 2 violations of the dotbot contract",
    ]


def test_schema_inline_is_an_object_schema() -> None:
    p = run("schema", "response-v2", "--inline")
    assert p.returncode == 0
    s = msgspec.json.decode(p.stdout)
    assert s["type"] == "object" and b"$ref" not in p.stdout


def test_codes_lookup_and_crosswalk() -> None:
    p = run("codes", "x_rate_limited", "--json")
    assert p.returncode == 0
    (entry,) = msgspec.json.decode(p.stdout)
    assert entry["equivalents"]["response-v2"] == "RATE_LIMIT_EXCEEDED"
    walk = run("codes", "--from", "errorcode", "--to", "code-graph")
    lines = walk.stdout.decode().splitlines()
    assert lines[0].split() == ["errorcode", "category", "code-graph", "code-graph", "category"]
    assert len(lines) == 1 + len(msgspec.json.decode(run("codes", "--from", "errorcode", "--json").stdout))
    unknown = run("codes", "x_rate_limted")
    assert unknown.returncode == 1
    assert "did you mean 'x_rate_limited'?" in unknown.stderr.decode()
    assert run("codes").returncode == 2


def test_dialects_lists_every_dialect() -> None:
    p = run("dialects")
    names = [line.split()[0] for line in p.stdout.decode().splitlines()]
    assert names == list(envglot.DIALECTS)
    modes = {line.split()[0]: line.split()[1] for line in p.stdout.decode().splitlines()}
    assert modes == {d.name: "read/write" if d.shape.writable else "read" for d in envglot.dialect.registered()}


def test_mappings_init_then_check(tmp_path: Path) -> None:
    overlay = tmp_path / "v2.toml"
    assert run("mappings", "init", "response-v2", "-o", overlay).returncode == 0
    assert overlay.read_text().startswith("# envglot mapping overlay for the 'response-v2' dialect.")
    again = run("mappings", "init", "response-v2", "-o", overlay)
    assert again.returncode == 2 and "use --force" in again.stderr.decode()
    bad = tmp_path / "bad.toml"
    bad.write_text('dialect = "dotbot"\n[codes.X]\ncategory = "nope"\n')
    p = run("mappings", "check", overlay, bad, tmp_path / "missing.toml")
    assert p.returncode == 66
    assert p.stdout.decode() == f"{overlay}: ok\n"
    errs = err_lines(p)
    assert errs[0].startswith(f"{bad}: error: ") and "[codes.X]" in errs[0]
    assert errs[1].startswith(f"{tmp_path / 'missing.toml'}: error: cannot read")
    assert run("mappings", "check", bad).returncode == 65


def _commands() -> list[list[str]]:
    out: list[list[str]] = [[]]
    for name, cmd in every_command(main).items():
        out.append([name])
        sub = getattr(cmd, "commands", {})
        out += [[name, s] for s in sorted(sub)]
    return out


def test_each_command_is_registered_by_the_module_listed_for_it() -> None:
    """``commands.MODULES`` names each command's module: importing the CLI imports none of them, and
    each module registers exactly the commands listed for it."""
    code = (
        "import sys\nfrom envglot.cli import main\n"
        "assert not [m for m in sys.modules if m.endswith('_cmd')], sorted(sys.modules)\n"
        "assert main.commands == {}, main.commands"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    every = every_command(main)
    assert sorted(every) == sorted(MODULES) == main.list_commands(None)  # type: ignore[arg-type]
    for name, cmd in every.items():
        assert cmd.callback is not None and cmd.callback.__module__ == f"envglot.cli.{MODULES[name]}", name


def test_a_command_imports_only_its_own_module(tmp_path: Path) -> None:
    """``envglot migrate`` imports neither the other commands' modules nor a process pool for ``-j 1``."""
    src = tmp_path / "a.jsonl"
    src.write_bytes(DOTBOT_OK.read_bytes().replace(b"\n", b"") + b"\n")
    code = (
        "import sys\nfrom envglot.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    argv = ["migrate", str(src), "--out", str(tmp_path / "out"), "-j", "1", "-q"]
    loaded = set(
        subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True).stdout.split()
    )
    assert "envglot.cli.migrate_cmd" in loaded and (tmp_path / "out" / "a.jsonl").exists()
    assert not {m for m in loaded if m.endswith("_cmd")} - {"envglot.cli.migrate_cmd"}
    assert not {"concurrent.futures.process", "multiprocessing"} & loaded


@pytest.mark.parametrize("cmd", _commands(), ids=lambda c: " ".join(c) or "envglot")
def test_every_help_exits_0(cmd: list[str]) -> None:
    p = run(*cmd, "--help")
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode().startswith("Usage: envglot")


def test_version() -> None:
    p = run("--version")
    assert p.returncode == 0 and p.stdout.decode().startswith("envglot, version ")
