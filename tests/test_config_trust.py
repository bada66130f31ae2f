"""Config is data the user chose (issue 23, items 3 and 10; issue 29's `envglot config`).

Planted configuration files (owned by another user, writable by others, in a parent
directory), the keys no configuration may set, TOML bombs through every loader (``--mappings``,
envglot.toml, the proxy's ``--upstreams``), and ``envglot config``. Each hostile case must end
in a clean error with its exit code, never a traceback, a block or an unbounded read.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import envglot
import envglot.crosswalk
from envglot.cli import main
from envglot.cli.commands import every_command
from envglot.cli.config import COMMAND_LINE_ONLY
from envglot.errors import EnvglotError, MappingError
from envglot.tomlfile import MAX_TOML_BYTES, MAX_TOML_DEPTH, key_line, parse_toml, read_regular

ROOT = Path(__file__).resolve().parents[1]
OK = ROOT / "examples" / "result" / "ok.json"
ACME = ROOT / "examples" / "declared" / "acme.toml"
ENVGLOT = shutil.which("envglot", path=str(Path(sys.executable).parent)) or shutil.which("envglot")
NOBODY = 65534
as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
EC_OK = b'{"success":true,"data":["docs/guide.md","docs/api.md"]}\n'
RESULT_OK = b'{"success":true,"value":["docs/guide.md","docs/api.md"]'


def run(cwd: Path, *args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    if ENVGLOT is None:
        pytest.skip("the envglot executable is not installed")
    full = {k: v for k, v in os.environ.items() if k not in ("ENVGLOT_CONFIG", "ENVGLOT_MAPPINGS_DIR")}
    full.update(env or {})
    return subprocess.run([ENVGLOT, *map(str, args)], cwd=cwd, capture_output=True, timeout=60, env=full)


def clean(r: subprocess.CompletedProcess[bytes]) -> str:
    """stderr, asserted free of Python tracebacks."""
    err = r.stderr.decode()
    assert "Traceback" not in err, err
    return err


# --------------------------------------------------------------------------- planted configuration files


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``tmp/a/b`` to run from, holding ok.json; a config is planted in ``tmp`` (two levels up)."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    shutil.copy(OK, tmp_path / "a" / "b" / "ok.json")
    return tmp_path


PLANTED = 'to = "errorcode"\nunsupported = "ignore"\n'


def _ignored(r: subprocess.CompletedProcess[bytes], path: Path, why: str) -> None:
    """The planted file changed nothing: convert ran without a configuration and said why."""
    err = clean(r)
    assert r.returncode == 2 and b"Missing option '-t'" in r.stderr, err
    assert f"envglot: ignoring config {path}: {why}" in err, err
    assert "name it with --config or ENVGLOT_CONFIG" in err
    assert "using config" not in err


@as_root
def test_a_config_owned_by_another_user_is_ignored(tree: Path) -> None:
    planted = tree / "envglot.toml"
    planted.write_text(PLANTED)
    os.chown(planted, NOBODY, NOBODY)
    _ignored(run(tree / "a" / "b", "convert", "ok.json"), planted, f"owned by uid {NOBODY}, not by you (uid 0)")


@pytest.mark.parametrize("mode", [0o666, 0o664, 0o646])
def test_a_config_writable_by_others_is_ignored(tree: Path, mode: int) -> None:
    planted = tree / "envglot.toml"
    planted.write_text(PLANTED)
    planted.chmod(mode)
    _ignored(run(tree / "a" / "b", "convert", "ok.json"), planted, "writable by others than its owner")


@as_root
def test_a_planted_pyproject_table_is_ignored_and_one_without_the_table_passed_over(tree: Path) -> None:
    py = tree / "a" / "pyproject.toml"
    py.write_text(f"[tool.envglot]\n{PLANTED}")
    os.chown(py, NOBODY, NOBODY)
    _ignored(run(tree / "a" / "b", "convert", "ok.json"), py, f"owned by uid {NOBODY}")
    py.write_text('[project]\nname = "theirs"\n')  # not a configuration: passed over silently
    os.chown(py, NOBODY, NOBODY)
    (tree / "envglot.toml").write_text(PLANTED)  # ours, further up
    r = run(tree / "a" / "b", "convert", "ok.json")
    assert (r.returncode, r.stdout) == (0, EC_OK), r.stderr
    assert r.stderr.decode() == f"envglot: using config {tree / 'envglot.toml'}\n"


@as_root
def test_a_symlink_planted_by_another_user_is_ignored(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    ours = tmp_path_factory.mktemp("mine") / "envglot.toml"
    ours.write_text(PLANTED)
    link = tree / "envglot.toml"
    link.symlink_to(ours)
    os.lchown(link, NOBODY, NOBODY)
    _ignored(run(tree / "a" / "b", "convert", "ok.json"), link, f"owned by uid {NOBODY}")


@as_root
def test_a_file_named_explicitly_is_the_users_choice(tree: Path) -> None:
    theirs = tree / "theirs.toml"
    theirs.write_text(PLANTED)
    os.chown(theirs, NOBODY, NOBODY)
    theirs.chmod(0o666)
    for args, env in (((f"--config={theirs}",), None), ((), {"ENVGLOT_CONFIG": str(theirs)})):
        r = run(tree / "a" / "b", *args, "convert", "ok.json", env=env)
        assert (r.returncode, r.stdout, r.stderr) == (0, EC_OK, b""), r.stderr


def test_environment_variable_rules(tree: Path) -> None:
    cfg = tree / "c.toml"
    cfg.write_text(PLANTED)
    env = {"ENVGLOT_CONFIG": str(cfg)}
    assert run(tree / "a" / "b", "--no-config", "convert", "ok.json", env=env).returncode == 2  # --no-config wins
    other = tree / "d.toml"
    other.write_text('to = "result"\n')
    r = run(tree / "a" / "b", "--config", other, "convert", "ok.json", env=env)  # the option wins
    assert r.returncode == 0 and r.stdout.startswith(RESULT_OK), r.stderr
    assert run(tree / "a" / "b", "convert", "ok.json", env={"ENVGLOT_CONFIG": ""}).returncode == 2  # empty: unset
    missing = run(tree / "a" / "b", "convert", "ok.json", env={"ENVGLOT_CONFIG": str(tree / "nope.toml")})
    assert missing.returncode == 2 and b"ENVGLOT_CONFIG" in missing.stderr and b"no such file" in missing.stderr


def test_a_found_config_is_announced_once_and_quiet_with_q(tree: Path) -> None:
    (tree / "envglot.toml").write_text(PLANTED)
    r = run(tree / "a" / "b", "convert", "ok.json")
    assert r.stderr.decode() == f"envglot: using config {tree / 'envglot.toml'}\n"
    out = tree / "out"
    r = run(tree / "a" / "b", "migrate", "-q", ".", "--out", out)
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    r = run(tree / "a" / "b", "migrate", ".", "--out", tree / "out2")
    assert r.stderr.decode().count("using config") == 1


def test_a_fifo_named_envglot_toml_is_passed_over(tree: Path) -> None:
    os.mkfifo(tree / "a" / "envglot.toml")
    r = run(tree / "a" / "b", "convert", "ok.json", "-t", "result")
    assert r.returncode == 0 and r.stderr == b"", r.stderr


# --------------------------------------------------------------------------- keys a configuration may not set

REFUSED = [
    ("[convert]\noutput = 'x.json'\n", 2, "[convert] output: --output is command-line only"),
    ("[convert]\nlog = 'x.log'\n", 2, "[convert] log: --log is command-line only"),
    ("log = 'x.log'\n", 1, "log: --log is command-line only"),
    ("output = 'x.json'\n", 1, "output: --output is command-line only"),
    ("[migrate]\nout = 'elsewhere'\n", 2, "[migrate] out: --out is command-line only"),
    ("[migrate]\nin-place = true\n", 2, "[migrate] in-place: --in-place is command-line only"),
    ("[migrate]\nrejects = '/tmp/r.jsonl'\n", 2, "[migrate] rejects: --rejects is command-line only"),
    ("[migrate]\nreport = 'r.json'\n", 2, "[migrate] report: --report is command-line only"),
    ("[migrate]\nlog = 'm.log'\n", 2, "[migrate] log: --log is command-line only"),
    ("[proxy]\nlisten = '127.0.0.1:8931'\n", 2, "[proxy] listen: --listen is command-line only"),
    ("[proxy]\nupstreams = 'p.toml'\n", 2, "[proxy] upstreams: --upstreams is command-line only"),
    ("[proxy]\nconfig = 'p.toml'\n", 2, "[proxy] config: envglot proxy has no option --config"),
]


@pytest.mark.parametrize(("text", "line", "says"), REFUSED, ids=[r[2].split(":")[0] for r in REFUSED])
@pytest.mark.parametrize("where", ["envglot.toml", "pyproject.toml"])
def test_a_command_line_only_key_is_an_error_naming_file_line_and_key(
    tree: Path, text: str, line: int, says: str, where: str
) -> None:
    if where == "pyproject.toml":  # one line more: [tool.envglot] comes first
        text = "[tool.envglot]\n" + text.replace("[", "[tool.envglot.")
        says = says.replace("[", "[tool.envglot.") if says.startswith("[") else f"[tool.envglot] {says}"
        line += 1
    cfg = tree / where
    cfg.write_text(text)
    r = CliRunner().invoke(main, ["--config", str(cfg), "convert", str(tree / "a" / "b" / "ok.json"), "-t", "result"])
    assert r.exit_code == 2, r.output
    assert f"{cfg}:{line}: {says}" in r.output, r.output


def test_command_line_only_names_real_parameters() -> None:
    """Every name in COMMAND_LINE_ONLY is a parameter of some command (no stale entry)."""
    names = {p.name for c in every_command(main).values() for p in c.params}
    assert COMMAND_LINE_ONLY <= names


# --------------------------------------------------------------------------- TOML bombs through every loader

DEEP = "x = " + "[" * 3000 + "]" * 3000 + "\n"
DEEP_INLINE = "x = " + "{a=" * 3000 + "1" + "}" * 3000 + "\n"
DEEP_KEY = "x" + ".a" * 3000 + " = 1\n"
HUGE = "# " + "x" * (MAX_TOML_BYTES + 10) + "\n"
BIG_PRIORITY = ACME.read_text().replace("priority = ", "priority = 73786976294838206464 #")
NAN = "timeout = nan\n"


@pytest.fixture
def bombs(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in {
        "deep": DEEP,
        "deep-inline": DEEP_INLINE,
        "deep-key": DEEP_KEY,
        "huge": HUGE,
        "priority": BIG_PRIORITY,
    }.items():
        (tmp_path / f"{name}.toml").write_text(text)
        out[name] = tmp_path / f"{name}.toml"
    os.mkfifo(tmp_path / "fifo.toml")
    out["fifo"] = tmp_path / "fifo.toml"
    out["zero"] = Path("/dev/zero")
    out["dir"] = tmp_path
    return out


MAPPINGS_BOMBS = [
    ("deep", 65, "more than 16 nested arrays or tables"),
    ("deep-inline", 65, "more than 16 nested arrays or tables"),
    ("deep-key", 65, "a dotted key of more than 16 parts"),
    ("huge", 65, "larger than 524,288 bytes"),
    ("priority", 65, "the integer 73786976294838206464 is outside TOML's range"),
    ("fifo", 66, "it is a FIFO, not a regular file"),
    ("zero", 66, "it is a character device, not a regular file"),
    ("dir", 66, "it is a directory, not a regular file"),
]


@pytest.mark.parametrize(("bomb", "code", "says"), MAPPINGS_BOMBS, ids=[b[0] for b in MAPPINGS_BOMBS])
def test_toml_bombs_through_mappings(tmp_path: Path, bombs: dict[str, Path], bomb: str, code: int, says: str) -> None:
    t = time.monotonic()
    r = run(tmp_path, "convert", "--mappings", bombs[bomb], "-t", "result", OK)
    err = clean(r)
    assert r.returncode == code, err
    assert says in err and str(bombs[bomb]) in err, err
    assert time.monotonic() - t < 30


@pytest.mark.parametrize("bomb", ["deep", "deep-key", "huge", "fifo", "zero"])
def test_toml_bombs_through_mappings_check_and_the_api(bombs: dict[str, Path], bomb: str) -> None:
    r = CliRunner().invoke(main, ["mappings", "check", str(bombs[bomb])])
    assert r.exit_code in (65, 66) and "Traceback" not in r.output and str(bombs[bomb]) in r.output, r.output
    with pytest.raises(MappingError, match=r"regular file|nested|larger"):
        envglot.convert(OK.read_bytes(), to="result", mappings=[bombs[bomb]])


CONFIG_BOMBS = [
    ("deep", "more than 16 nested arrays or tables"),
    ("deep-key", "a dotted key of more than 16 parts"),
    ("huge", "larger than 524,288 bytes"),
    ("fifo", "it is a FIFO, not a regular file"),
    ("zero", "it is a character device, not a regular file"),
]


@pytest.mark.parametrize(("bomb", "says"), CONFIG_BOMBS, ids=[b[0] for b in CONFIG_BOMBS])
def test_toml_bombs_through_the_configuration(tmp_path: Path, bombs: dict[str, Path], bomb: str, says: str) -> None:
    r = run(tmp_path, "--config", bombs[bomb], "convert", "-t", "result", OK)
    assert r.returncode == 2 and says in clean(r), r.stderr


@pytest.mark.parametrize("bomb", ["deep", "deep-key", "huge"])
def test_toml_bombs_in_a_found_configuration(tmp_path: Path, bombs: dict[str, Path], bomb: str) -> None:
    (tmp_path / "run").mkdir()
    shutil.copy(bombs[bomb], tmp_path / "envglot.toml")
    r = run(tmp_path / "run", "convert", "-t", "result", OK)
    assert r.returncode == 2 and str(tmp_path / "envglot.toml") in clean(r), r.stderr


@pytest.mark.parametrize("bomb", ["fifo", "zero", "deep"])
def test_a_configured_mapping_path_is_held_to_the_same_rules(tmp_path: Path, bombs: dict[str, Path], bomb: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'mappings = ["{bombs[bomb]}"]\n')
    r = run(tmp_path, "--config", cfg, "convert", "-t", "result", OK)
    assert r.returncode == (65 if bomb == "deep" else 66) and str(bombs[bomb]) in clean(r), r.stderr


def test_out_of_range_values_in_the_configuration(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[migrate]\njobs = 73786976294838206464\n")
    r = run(tmp_path, "--config", cfg, "convert", "-t", "result", OK)
    assert r.returncode == 2 and f"{cfg}:2: the integer 73786976294838206464" in clean(r)
    cfg.write_text("[proxy]\ntimeout = nan\n")
    r = run(tmp_path, "--config", cfg, "convert", "-t", "result", OK)
    assert r.returncode == 2 and f"{cfg}:2: nan is not accepted" in clean(r) and "$.proxy.timeout" in clean(r)


PROXY_BOMBS = [
    ("deep", 65, "more than 16 nested arrays or tables"),
    ("huge", 65, "larger than 524,288 bytes"),
    ("fifo", 66, "it is a FIFO, not a regular file"),
    ("zero", 66, "it is a character device, not a regular file"),
]


@pytest.mark.parametrize(("bomb", "code", "says"), PROXY_BOMBS, ids=[b[0] for b in PROXY_BOMBS])
def test_toml_bombs_through_the_proxy_upstreams(bombs: dict[str, Path], bomb: str, code: int, says: str) -> None:
    r = CliRunner().invoke(main, ["proxy", "-t", "result", "--upstreams", str(bombs[bomb])])
    assert r.exit_code == code and says in r.output and "Traceback" not in r.output, r.output


def test_proxy_upstream_values_out_of_range(tmp_path: Path) -> None:
    p = tmp_path / "p.toml"
    for text, says in (
        ("timeout = 73786976294838206464\n[[upstream]]\ncommand = 'x'\n", ":1: the integer 73786976294838206464"),
        ("[[upstream]]\ncommand = 'x'\n[[upstream]]\nprefix = 'b'\nurl = 'http://h'\ntimeout = inf\n", ":6: inf"),
        ("listen = '127.0.0.1:8931'\n[[upstream]]\ncommand = 'x'\n", ":1: Object contains unknown field `listen`"),
        (
            "[[upstream]]\ncommand = 'x'\nenv = { A = 1 }\n",
            ":3: Expected `str`, got `int` - at `$.upstream[0].env[...]`",
        ),
        ("[[upstream]]\nprefix = 'a'\ncommand = 'x'\n[[upstream]]\nprefix = 'b'\ncommand = 3\n", ":6: Expected"),
    ):
        p.write_text(text)
        r = CliRunner().invoke(main, ["proxy", "-t", "result", "--upstreams", str(p)])
        assert r.exit_code == 65 and f"{p}{says}" in r.output, r.output


def test_the_proxys_old_config_spelling_still_works_and_says_it_is_deprecated(tmp_path: Path) -> None:
    p = tmp_path / "p.toml"
    p.write_text("[[upstream]]\nprefix = 'a'\n")
    r = CliRunner().invoke(main, ["proxy", "-t", "result", "--config", str(p)])
    assert r.exit_code == 65 and "--config FILE is deprecated, use --upstreams FILE" in r.output
    r = CliRunner().invoke(main, ["proxy", "-t", "result", "--config", str(p), "--upstreams", str(p)])
    assert r.exit_code == 2 and "give --upstreams once" in r.output
    assert "--config" not in CliRunner().invoke(main, ["proxy", "--help"]).output


# --------------------------------------------------------------------------- the bounded reader itself


@pytest.mark.parametrize(
    "text",
    [
        's = "' + "[" * 100 + '"\n',  # brackets inside strings do not nest
        "s = '''\n" + "{" * 100 + "\n'''\n",
        "# " + "[" * 100 + "\n",
        "x = [1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5, 15.5, 16.5, 17.5]\n",
        "d = 1979-05-27T07:32:00.999-07:00\n",
        "a" + ".a" * (MAX_TOML_DEPTH - 2) + " = 1\n",
        f"n = {2**63 - 1}\nm = {-(2**63)}\n",
    ],
)
def test_ordinary_toml_passes(text: str) -> None:
    parse_toml(text.encode(), "t.toml")


def test_nesting_from_tables_and_keys_together_is_bounded() -> None:
    text = "[" + ".".join(["t"] * 10) + "]\n" + ".".join(["k"] * 10) + " = 1\n"
    with pytest.raises(EnvglotError, match="nested more than 16 levels") as exc:
        parse_toml(text.encode(), "t.toml")
    assert exc.value.source == "t.toml" and exc.value.path is not None and exc.value.path.startswith("$.t.t")


def test_integer_of_thousands_of_digits_and_bad_utf8() -> None:
    with pytest.raises(EnvglotError, match="an integer of more than 4,300 digits"):
        parse_toml(b"x = " + b"1" * 5000, "t.toml")
    with pytest.raises(EnvglotError, match="not UTF-8"):
        parse_toml(b"x = '\xff'", "t.toml")


def test_key_line_follows_tables_arrays_and_dotted_keys() -> None:
    text = 'a = 1\n[t]\nb.c = 2\n[[u]]\nx = 1\n[[u]]\nx = 2\n["q.r"]\ns = 3\n'
    assert key_line(text, ("a",)) == 1
    assert key_line(text, ("t", "b", "c")) == 3
    assert key_line(text, ("u", 1, "x")) == 7
    assert key_line(text, ("q.r", "s")) == 9
    assert key_line(text, ("nope",)) is None


def test_read_regular_caps_what_it_reads(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x" * 11)
    assert read_regular(f, "test file", limit=11) == b"x" * 11
    with pytest.raises(EnvglotError, match="larger than 10 bytes"):
        read_regular(f, "test file", limit=10)


@pytest.mark.parametrize("size", [0, 1, (1 << 16) - 1, 1 << 16, (1 << 16) + 1, 200_000])
def test_read_regular_reads_the_whole_file_in_reads_sized_by_it(tmp_path: Path, size: int) -> None:
    """Read in reads sized by ``fstat``, up to ``limit + 1`` bytes: a file of any size within the
    limit is read whole, one byte more is refused, at and across the 64 KiB of one read."""
    f = tmp_path / "f"
    data = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    f.write_bytes(data)
    assert read_regular(f, "test file", limit=max(size, 1)) == data
    if size:
        with pytest.raises(EnvglotError, match=f"larger than {size - 1:,} bytes"):
            read_regular(f, "test file", limit=size - 1)


def test_read_regular_reads_a_file_whose_size_fstat_does_not_know(tmp_path: Path) -> None:
    """A regular file whose ``st_size`` is 0 but that holds bytes (``/proc``) is read to its end."""
    proc = Path("/proc/self/status")
    if not proc.is_file():
        pytest.skip("no /proc here")
    got = read_regular(proc, "test file")
    assert got.startswith(b"Name:") and got.endswith(b"\n")


# --------------------------------------------------------------------------- envglot config


def test_envglot_config_names_each_values_source(tree: Path) -> None:
    (tree / "envglot.toml").write_text('to = "errorcode"\n\n[migrate]\njobs = 3\n')
    r = run(tree / "a" / "b", "config", "migrate")
    assert r.returncode == 0, r.stderr
    out = [" ".join(line.split()) for line in r.stdout.decode().splitlines()]  # columns aligned
    cfg = tree / "envglot.toml"
    assert out[0] == f"# configuration: {cfg} (found from the current directory upwards)"
    assert f'to = "errorcode" # {cfg}:1: to' in out
    assert f"jobs = 3 # {cfg}:4: [migrate] jobs" in out
    assert 'unsupported = "warn" # default' in out
    assert "# command line only: in-place, log, out, rejects, report" in out
    assert r.stderr.decode() == f"envglot: using config {cfg}\n"


def test_envglot_config_without_a_file_and_with_an_ignored_one(tree: Path) -> None:
    r = run(tree / "a" / "b", "--no-config", "config", "proxy")
    assert r.stdout.decode().splitlines()[:3] == ["# configuration: none (--no-config)", "", "[proxy]"]
    planted = tree / "envglot.toml"
    planted.write_text(PLANTED)
    planted.chmod(0o666)
    r = run(tree / "a" / "b", "config", "convert")
    assert r.stdout.startswith(b"# configuration: none (a found file was ignored: see the warning above)\n")
    assert b"ignoring config" in r.stderr
    bad = run(tree / "a" / "b", "config", "nope")
    assert bad.returncode == 2 and b"nope: not a command with options to configure" in bad.stderr


# --------------------------------------------------------------------------- the parsed-table cache


@pytest.mark.parametrize("planted", ["own", "other-user", "writable", "other-bytes", "other-version", "corrupt"])
def test_a_planted_table_cache_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted: str) -> None:
    """The msgpack cache of parsed tables (ENVGLOT_CACHE_DIR) is read only if it is the user's own file,
    of this envglot version, holding exactly the TOML bytes read (a CRC collision or a stale file is a
    miss), and readable (anything else in it is a miss too)."""
    import zlib

    import msgspec

    if planted == "other-user" and os.geteuid() != 0:
        pytest.skip("chown needs root")
    monkeypatch.setenv("ENVGLOT_CACHE_DIR", str(tmp_path / "cache"))
    overlay = tmp_path / "ours.toml"
    shutil.copy(ROOT / "docs" / "examples" / "overlays" / "good.toml", overlay)
    buf = overlay.read_bytes()
    cache = tmp_path / "cache" / f"toml-{zlib.crc32(buf):08x}-{len(buf)}.msgpack"
    cache.parent.mkdir()
    said = {"dialect": "no-such-dialect"}  # what a planted file would say
    version = "0.0.0-old" if planted == "other-version" else envglot.__version__
    text = buf.replace(b"=", b" = ", 1) if planted == "other-bytes" else buf
    cache.write_bytes(b"\xc1garbage" if planted == "corrupt" else msgspec.msgpack.encode((version, text, said)))
    if planted == "other-user":
        os.chown(cache, NOBODY, NOBODY)
    elif planted == "writable":
        cache.chmod(0o666)
    if planted == "own":  # the user's own cache is trusted (and here says something else than the file)
        with pytest.raises(MappingError, match="no-such-dialect"):
            envglot.crosswalk.check_overlay(overlay)
    else:
        envglot.crosswalk.check_overlay(overlay)
