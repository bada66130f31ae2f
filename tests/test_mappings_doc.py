"""docs/mappings.md is generated from the tables: fail when it is stale."""

from __future__ import annotations

import runpy
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gen_mappings_doc.py"


def _generator() -> dict:
    return runpy.run_path(str(SCRIPT), run_name="gen_mappings_doc")


def test_mappings_doc_is_up_to_date(capsys):
    rc = _generator()["main"](["--check"])
    assert rc == 0, "docs/mappings.md is stale: run python scripts/gen_mappings_doc.py\n" + capsys.readouterr().err


def test_render_is_deterministic():
    gen = _generator()
    m = gen["load_mappings"](base=gen["TABLES"])
    assert gen["render"](m) == gen["render"](gen["load_mappings"](base=gen["TABLES"]))


def test_render_covers_every_code():
    gen = _generator()
    m = gen["load_mappings"](base=gen["TABLES"])
    text = gen["render"](m)
    for name, d in m.dialects.items():
        assert f"## Dialect `{name}`" in text
        for code in d.codes:
            assert f"| `{code}` |" in text, (name, code)


def test_check_fails_on_a_stale_doc(tmp_path, monkeypatch, capsys):
    main = _generator()["main"]
    stale = tmp_path / "mappings.md"
    stale.write_text("# old\n", encoding="utf-8")
    monkeypatch.setitem(main.__globals__, "DOC", stale)
    assert main(["--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert main([]) == 0  # regenerates
    assert main(["--check"]) == 0
