"""The project configuration: envglot.toml / [tool.envglot], found upwards, --config, --no-config."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OK = ROOT / "examples" / "result" / "ok.json"
ENVGLOT = shutil.which("envglot", path=str(Path(sys.executable).parent)) or shutil.which("envglot")
pytestmark = pytest.mark.skipif(ENVGLOT is None, reason="the envglot executable is not installed")
V2_OK = (
    b'{"success":true,"data":{"value":["docs/guide.md","docs/api.md"]},"error":null,"meta":{"version":"response-v2"}}\n'
)
EC_OK = b'{"success":true,"data":["docs/guide.md","docs/api.md"]}\n'


def run(cwd: Path, *args: str | Path) -> subprocess.CompletedProcess[bytes]:
    assert ENVGLOT is not None
    return subprocess.run([ENVGLOT, *map(str, args)], cwd=cwd, capture_output=True, timeout=60)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose pyproject.toml says: target errorcode, no warnings; a sub-directory to run from."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.envglot]\nto = "errorcode"\nunsupported = "ignore"\n'
    )
    (tmp_path / "a" / "b").mkdir(parents=True)
    shutil.copy(OK, tmp_path / "a" / "b" / "ok.json")
    return tmp_path


def test_pyproject_found_upwards_gives_defaults(project: Path) -> None:
    r = run(project / "a" / "b", "convert", "ok.json")
    notice = f"envglot: using config {project / 'pyproject.toml'}\n".encode()
    assert (r.returncode, r.stdout, r.stderr) == (0, EC_OK, notice)


def test_the_command_line_wins(project: Path) -> None:
    r = run(project / "a" / "b", "convert", "ok.json", "-t", "response-v2", "--unsupported", "warn")
    assert r.returncode == 0 and r.stdout == V2_OK and b"warning:" in r.stderr


def test_no_config_ignores_it(project: Path) -> None:
    r = run(project / "a" / "b", "--no-config", "convert", "ok.json")
    assert r.returncode == 2 and b"Missing option '-t'" in r.stderr


def test_envglot_toml_wins_over_pyproject_in_the_same_directory(project: Path) -> None:
    (project / "envglot.toml").write_text('to = "response-v2"\nunsupported = "ignore"\n')
    assert run(project / "a" / "b", "convert", "ok.json").stdout == V2_OK


def test_the_nearest_directory_wins(project: Path) -> None:
    (project / "a" / "envglot.toml").write_text('to = "response-v2"\nunsupported = "ignore"\n')
    assert run(project / "a" / "b", "convert", "ok.json").stdout == V2_OK
    assert run(project, "convert", "a/b/ok.json").stdout == EC_OK


def test_a_pyproject_without_the_table_is_passed_over(project: Path) -> None:
    (project / "a" / "pyproject.toml").write_text('[project]\nname = "inner"\n')
    assert run(project / "a" / "b", "convert", "ok.json").stdout == EC_OK


def test_per_command_table_and_flags(project: Path) -> None:
    (project / "envglot.toml").write_text(
        'to = "response-v2"\n\n[convert]\nunsupported = "ignore"\npretty = true\n\n[detect]\njson = true\n'
    )
    r = run(project / "a" / "b", "convert", "ok.json")
    assert r.returncode == 0 and r.stdout.startswith(b"{\n  ") and r.stderr.startswith(b"envglot: using config ")
    d = run(project / "a" / "b", "detect", "ok.json")
    assert d.stdout.startswith(b'{"file":"ok.json"')


def test_mappings_are_relative_to_the_config_file(project: Path) -> None:
    (project / "overlays").mkdir()
    shutil.copy(ROOT / "tests" / "cli" / "overlays" / "dotbot-spec-codes.toml", project / "overlays" / "good.toml")
    (project / "envglot.toml").write_text('to = "response-v2"\nmappings = ["overlays/good.toml"]\n')
    ok = run(project / "a" / "b", "convert", "ok.json")
    assert ok.returncode == 0, ok.stderr
    (project / "envglot.toml").write_text('to = "response-v2"\nmappings = ["overlays/missing.toml"]\n')
    bad = run(project / "a" / "b", "convert", "ok.json")
    assert bad.returncode != 0 and str(project / "overlays" / "missing.toml").encode() in bad.stderr


def test_config_names_a_file(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.toml"
    other.write_text('to = "response-v2"\nunsupported = "ignore"\n')
    assert run(project / "a" / "b", "--config", other, "convert", "ok.json").stdout == V2_OK
    missing = run(project / "a" / "b", "--config", tmp_path / "nope.toml", "convert", "ok.json")
    assert missing.returncode == 2 and b"no such file" in missing.stderr
    both = run(project / "a" / "b", "--config", other, "--no-config", "convert", "ok.json")
    assert both.returncode == 2


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('to = "respons-v2"\n', "envglot.toml:1: to: unknown dialect 'respons-v2'; did you mean 'response-v2'?"),
        ("jobz = 3\n", "envglot.toml:1: jobz: no command has an option --jobz"),
        ('[migrate]\njobs = "x"\n', "envglot.toml:2: [migrate] jobs: 'x' is not a valid integer range"),
        ("[convert]\njobs = 2\n", "envglot.toml:2: [convert] jobs: envglot convert has no option --jobs"),
        ("[nope]\nx = 1\n", "envglot.toml:1: [nope]: no such command"),
        ('mappings = "x.toml"\ninclude = "*.json"\n', "envglot.toml:2: include: expected a list"),
        ("to =\n", "envglot.toml: not a valid TOML file: Invalid value (at line 1, column 5)"),
        ("[convert]\npretty = false\n", "envglot.toml:2: [convert] pretty: expected true"),
        ('fail-if-lossy = "yes"\n', "envglot.toml:1: fail-if-lossy: expected true or false"),
    ],
)
def test_an_invalid_config_is_a_usage_error_naming_file_and_key(project: Path, text: str, says: str) -> None:
    (project / "envglot.toml").write_text(text)
    r = run(project / "a" / "b", "convert", "ok.json", "-t", "result")
    assert r.returncode == 2, r.stderr
    assert says in r.stderr.decode(), r.stderr.decode()


def test_a_configured_declaration_names_a_dialect_the_configuration_can_use(project: Path) -> None:
    """`mappings` registers its declared dialects before `to = "acme"` is checked (as --mappings does)."""
    acme = ROOT / "examples" / "declared" / "acme.toml"
    (project / "envglot.toml").write_text(f'to = "acme"\nmappings = ["{acme}"]\n')
    r = run(project / "a" / "b", "convert", "ok.json")
    assert r.returncode == 0 and r.stdout.startswith(b'{"tier":"v1"'), r.stderr
    bad = project / "bad.toml"
    bad.write_text(acme.read_text().replace("priority = ", "priority = 99999999999999999999 #"))
    (project / "envglot.toml").write_text('[convert]\nmappings = ["bad.toml"]\n')
    r = run(project / "a" / "b", "convert", "ok.json")
    err = r.stderr.decode()
    assert r.returncode == 65 and f"{project / 'envglot.toml'}:2: [convert] mappings: {bad}:" in err, err
    assert "Traceback" not in err


def test_a_configured_declaration_is_known_only_where_its_mappings_apply(project: Path) -> None:
    """A declaration in one command's table is in that command's registry only: `to = "acme"`
    beside it works, in another command's table it is an unknown dialect (nothing is registered
    for the process, not even while the configuration is read)."""
    acme = ROOT / "examples" / "declared" / "acme.toml"
    (project / "envglot.toml").write_text(f'[convert]\nto = "acme"\nmappings = ["{acme}"]\n')
    r = run(project / "a" / "b", "convert", "ok.json")
    assert r.returncode == 0 and r.stdout.startswith(b'{"tier":"v1"'), r.stderr
    d = run(project / "a" / "b", "dialects")
    assert d.returncode == 0 and b"acme" not in d.stdout, d.stdout  # `dialects` has no such mappings
    (project / "envglot.toml").write_text(f'[convert]\nmappings = ["{acme}"]\n[migrate]\nto = "acme"\n')
    r = run(project / "a" / "b", "convert", "ok.json", "-t", "acme")
    err = r.stderr.decode()
    assert r.returncode == 2 and "unknown dialect 'acme'" in err and "[migrate] to" in err, err
