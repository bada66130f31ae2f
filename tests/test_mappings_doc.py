"""docs/mappings.md and each dialect page's reference tables are generated from the tables: fail when stale."""

from __future__ import annotations

import runpy
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gen_mappings_doc.py"


def _generator() -> dict:
    return runpy.run_path(str(SCRIPT), run_name="gen_mappings_doc")


def test_mappings_doc_is_up_to_date(capsys):
    rc = _generator()["main"](["--check"])
    assert rc == 0, "generated docs are stale: run python scripts/gen_mappings_doc.py\n" + capsys.readouterr().err


def test_render_is_deterministic():
    gen = _generator()
    m = gen["load_mappings"](base=gen["TABLES"])
    assert gen["outputs"](m) == gen["outputs"](gen["load_mappings"](base=gen["TABLES"]))


def test_every_dialect_page_covers_its_codes_and_no_shared_page_names_a_dialect():
    gen = _generator()
    m = gen["load_mappings"](base=gen["TABLES"])
    out = gen["outputs"](m)
    shared = out[gen["DOC"]]
    for name, d in m.dialects.items():
        text = out[gen["PAGES"] / f"{name}.md"]
        assert text.count(gen["BEGIN"]) == 1 and text.count(gen["END"]) == 1
        for code in d.codes:
            assert f"| `{code}` |" in text, (name, code)
        if not d.shape.open_codes and not d.types:  # a category-word column of error-types.toml is shared
            assert f"`{name}`" not in shared, f"docs/mappings.md names {name}: adding a dialect would edit it"


def test_a_page_without_the_section_gets_it_appended_once():
    gen = _generator()
    m = gen["load_mappings"](base=gen["TABLES"])
    name = next(iter(m.dialects))
    section = gen["render_dialect"](m, name)
    once = gen["splice"]("# page\n\ntext\n", section)
    assert once.startswith("# page\n\ntext\n\n") and gen["splice"](once, section) == once


def test_check_fails_on_a_stale_doc(tmp_path, monkeypatch, capsys):
    main = _generator()["main"]
    stale = tmp_path / "mappings.md"
    stale.write_text("# old\n", encoding="utf-8")
    monkeypatch.setitem(main.__globals__, "DOC", stale)
    assert main(["--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert main([]) == 0  # regenerates
    assert main(["--check"]) == 0
