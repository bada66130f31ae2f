"""The benchmark harness runs on a tiny corpus and writes a well-formed results file.

No timing is asserted here: speed is shown by ``python benchmarks/run.py``, not by tests.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench_harness import bench_module
from envglot.dialects import NAMES, WRITABLE

ROOT = Path(__file__).resolve().parents[1]
SIZES = ("tiny", "medium", "large")
PAIRS = [(s, t) for s in NAMES for t in WRITABLE if s != t]


_handwritten = bench_module("handwritten")
HANDWRITTEN = sorted(_handwritten.CONVERSIONS)
"""The pairs the hand-written orjson baselines cover (the harness's own list)."""
_floors = bench_module("floors")
FLOORED = sorted(_floors.FLOORS)
"""The pairs with a hand-written floor (``benchmarks/floors.py``'s own list)."""
HAS_PYDANTIC = importlib.util.find_spec("pydantic") is not None


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--smoke", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = list(out.glob("*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text()), proc.stdout


def _rows(results: dict[str, Any], method: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(r["source"], r["target"], r["size"]): r for r in results["inmemory"] if r["method"] == method}


def test_header(run: tuple[dict[str, Any], str]) -> None:
    results, _ = run
    assert results["schema"] == "envglot-bench/1"
    assert results["mode"] == "smoke"
    m = results["machine"]
    assert m["nproc"] >= 1 and m["cpu_model"] and m["python"] and m["msgspec"]
    assert results["config"]["gc"] == "enabled"


@pytest.mark.parametrize("dialect", NAMES)
def test_corpus_covers_every_dialect_and_size(run: tuple[dict[str, Any], str], dialect: str) -> None:
    stats = run[0]["corpus"][dialect]
    for size in SIZES:
        assert stats[size]["records"] > 0 and stats[size]["bytes"] > 0
        assert 0 < stats[size]["error_share"] < 1
    assert stats["tiny"]["mean_bytes"] < stats["medium"]["mean_bytes"] < stats["large"]["mean_bytes"]


@pytest.mark.parametrize(
    ("method", "pairs"),
    [("converter", PAIRS), ("convert", PAIRS), ("convert_from", PAIRS), ("limit", [(d, d) for d in NAMES])],
)
def test_every_pair_and_size_is_measured(
    run: tuple[dict[str, Any], str], method: str, pairs: list[tuple[str, str]]
) -> None:
    rows = _rows(run[0], method)
    for s, t in pairs:
        for size in SIZES:
            r = rows[(s, t, size)]
            assert "error" not in r, r
            assert r["rounds"] >= 2
            assert r["envelopes_per_s"] > 0 and r["mb_per_s"] > 0
            assert r["min_s"] <= r["median_s"] <= r["max_s"]


@pytest.mark.parametrize("method", ["orjson", "pydantic"])
def test_handwritten_baselines_agree_with_envglot(run: tuple[dict[str, Any], str], method: str) -> None:
    if method == "pydantic" and not HAS_PYDANTIC:
        pytest.skip("pydantic (the bench extra) is not installed")
    results = run[0]
    rows = _rows(results, method)
    agreement = {(a["source"], a["target"], a["size"]): a for a in results["agreement"] if a["method"] == method}
    for pair in HANDWRITTEN:
        for size in SIZES:
            assert rows[(*pair, size)]["envelopes_per_s"] > 0
            a = agreement[(*pair, size)]
            assert a["documents"] > 0 and a["differ"] == 0, a


def test_ratios_and_targets(run: tuple[dict[str, Any], str]) -> None:
    results = run[0]
    ratios = {(r["source"], r["target"], r["size"]): r for r in results["ratios"]}
    assert set(ratios) == {(s, t, size) for s, t in PAIRS for size in SIZES}
    assert all(r["converter_vs_limit"] > 0 and r["convert_vs_limit"] > 0 for r in ratios.values())
    for pair in HANDWRITTEN:
        assert ratios[(*pair, "large")]["converter_vs_orjson"] > 0
    targets = results["targets"]
    assert len(targets) == 27
    assert all(t["holds"] in (True, False, None) for t in targets)
    assert next(t for t in targets if t["target"].startswith("Converter >= 0.7"))["holds"] is not None


def test_ratios_are_medians_of_the_rounds_ratios(
    run: tuple[dict[str, Any], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    results = run[0]
    rows = {(r["method"], r["source"], r["target"], r["size"]): r for r in results["inmemory"]}
    r = next(r for r in results["ratios"] if r.get("converter_vs_floor"))
    conv, floor = (
        rows[("converter", r["source"], r["target"], r["size"])],
        rows[("floor", r["source"], r["target"], r["size"])],
    )
    assert len(conv["times"]) == len(floor["times"]) == conv["rounds"]
    per_round = sorted(f / c for c, f in zip(conv["times"], floor["times"], strict=True))
    assert min(per_round) - 1e-3 <= r["converter_vs_floor"] <= max(per_round) + 1e-3
    assert r["of_medians"]["converter_vs_floor"] == round(conv["envelopes_per_s"] / floor["envelopes_per_s"], 3)
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # run.py imports its neighbours
    rate_ratio = bench_module("run").rate_ratio
    one = {"records": 10, "times": [1.0, 2.0, 4.0]}
    other = {"records": 10, "times": [2.0, 2.0, 2.0]}
    assert rate_ratio(one, other) == 1.0  # per round: 2.0, 1.0, 0.5; their median
    assert rate_ratio(one, {"records": 10, "times": [1.0]}) is None  # rounds that do not pair


def test_declared_section(run: tuple[dict[str, Any], str]) -> None:
    """acme (TOML) and its Python twin are timed on every pair of the section, and write the same bytes."""
    declared = run[0]["declared"]
    assert declared["status"] == "ok"
    assert declared["disagree"] == []
    rows = declared["rows"]
    assert {r["method"] for r in rows} == {"declared (TOML)", "declared (Python)"}
    assert all(r["envelopes_per_s"] > 0 for r in rows)
    assert declared["toml_vs_python"] > 0
    assert "### A TOML-declared dialect vs the same envelope declared in Python" in run[1]


def test_floors(run: tuple[dict[str, Any], str]) -> None:
    """Every ordered pair with a floor in ``benchmarks/floors.py`` is timed: the harness checks it is
    byte-identical to envglot on the corpus before timing it (and stops if it is not). A pair of a
    dialect whose floors are not hand-written yet is a row saying so, never a failure of the run."""
    results = run[0]
    rows = _rows(results, "floor")
    ratios = {(r["source"], r["target"], r["size"]): r for r in results["ratios"]}
    assert set(FLOORED) <= set(PAIRS), "floors.py names a pair that is not a registered source and target"
    for s, t in PAIRS:
        for size in SIZES:
            r = rows[(s, t, size)]
            if (s, t) not in FLOORED:
                assert r["error"] == _floors.NOT_WRITTEN, r
                continue
            assert "error" not in r, r
            assert r["envelopes_per_s"] > 0 and ratios[(s, t, size)]["converter_vs_floor"] > 0
    assert "Converter / floor" in run[1]


def test_migrate_section(run: tuple[dict[str, Any], str]) -> None:
    mig = run[0]["migrate"]
    assert mig["status"] in ("ok", "unavailable"), mig
    if mig["status"] == "unavailable":
        assert "migrate" in mig["reason"]
        return
    assert [(r["jobs"], r["engine"]) for r in mig["runs"][:2]] == [(1, "local"), (2, "local")]
    for r in mig["runs"]:
        assert r["exit_code"] == 0
        assert r["output_records"] == mig["records"]
        assert r["mb_per_s"] > 0 and r["peak_rss_mb"] > 0
    lsf = mig["local_small_files"]
    assert lsf["small_files"]["exit_code"] == lsf["one_file"]["exit_code"] == 0
    assert lsf["small_files"]["files"] > 1 and lsf["ratio"] > 0
    if len(mig["runs"]) == 3:  # the dask extra is installed
        assert mig["runs"][2]["engine"] == "dask, 2 workers"
        assert mig["runs"][2]["peak_rss_worker_sampled_mb"] > 0
        sf = mig["small_files"]
        assert sf["small_files"]["exit_code"] == sf["one_file"]["exit_code"] == 0
        assert sf["small_files"]["files"] > 1 and sf["ratio"] > 0
        # the target's row: the large file on the running cluster once warm, against -j 1 in this process
        assert sf["first_run"]["exit_code"] == sf["warm"]["exit_code"] == 0
        assert len(sf["warm"]["rounds"]) == 2 and mig["dask2_vs_j1"] == sf["warm"]["vs_j1"] > 0
        assert mig["dask_cli_vs_j1"] > 0
    else:
        assert "not installed" in mig["dask"]


def test_import_time_and_markdown(run: tuple[dict[str, Any], str]) -> None:
    results, stdout = run
    assert results["import_time"]["import_ms"] > 0
    assert results["import_time"]["importtime_top"]
    for heading in (
        "### Converter and convert() against the limit",
        "### envglot against hand-written conversions",
        "### Targets",
    ):
        assert heading in stdout


def test_proxy_section(run: tuple[dict[str, Any], str]) -> None:
    px = run[0]["proxy"]
    assert px["status"] in ("ok", "unavailable"), px
    if px["status"] == "unavailable":
        assert "mcp" in px["reason"] or "upstream" in px["reason"]
        return
    assert px["calls"] > 0
    for side in ("direct", "proxied", "rewrite_only"):
        assert px[side]["median_ms"] > 0
    target = next(t for t in run[0]["targets"] if t["target"].startswith("proxy adds"))
    assert target["measured"] == px["overhead_median_ms"]
    assert "### Proxy overhead" in run[1]


def test_policy_section(run: tuple[dict[str, Any], str]) -> None:
    pol = run[0]["policy"]
    assert pol["status"] == "ok"
    assert {r["method"] for r in pol["rows"]} == {
        "convert ignore",
        "convert default",
        "Converter ignore",
        "Converter default",
        "convert default, listening",
        "Converter preserve",
    }
    assert all(r.get("envelopes_per_s") for r in pol["rows"])
    assert pol["default_vs_ignore"] > 0 and pol["listening_vs_ignore"] > 0
    assert pol["preserve_cost_vs_ignore"] > 0
    target = next(t for t in run[0]["targets"] if t["target"].startswith("convert() default policy"))
    assert target["holds"] is not None
    assert "### Loss policy" in run[1]


def test_preserve_section(run: tuple[dict[str, Any], str]) -> None:
    pre = run[0]["preserve"]
    assert pre["status"] == "ok" and pre["clock"] == "cpu"
    pairs = {c["pair"] for c in pre["costs"]}
    assert "dotbot -> response-v2" in pairs and pre["worst_pair"] in pairs
    assert {c["size"] for c in pre["costs"]} == set(SIZES)
    assert all(c["cost"] > 0 for c in pre["costs"])
    assert len(pre["screen"]) == len(WRITABLE) * (len(WRITABLE) - 1)
    target = next(t for t in run[0]["targets"] if t["target"].startswith("Converter preserve=True"))
    assert target["measured"] == pre["max_cost"]
    assert "### preserve=True vs unsupported='ignore'" in run[1]


def _table(script: str, *args: str) -> list[list[str]]:
    """The Markdown table rows (cells stripped, header and rule left out) a benchmark script prints."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [[c.strip() for c in line.split("|")[1:-1]] for line in proc.stdout.splitlines() if line.startswith("| ")][
        1:
    ]


def test_migrate_breakdown_times_every_stage() -> None:
    rows = {
        r[0]: float(r[1])
        for r in _table("migrate_breakdown.py", "--per-dialect", "5", "--rounds", "1", "--repeat", "1")
    }
    stages = (
        "convert_bytes",
        "record",
        "count",
        "counter",
        "detection",
        "tally",
        "discard",
        "counting fn",
        "bound fn",
        "chunks",
        "migrate",
    )
    assert set(rows) == {*stages, "engine"}
    assert all(rows[s] > 0 for s in stages)


def test_preserve_parts_times_every_part() -> None:
    rows = _table(
        "preserve_parts.py", "dotbot", "response-v2", "--sizes", "tiny,medium", "--count", "8", "--rounds", "1"
    )
    assert [r[0] for r in rows] == ["tiny", "medium"]
    for r in rows:
        cells = [float(c) for c in r[1:]]
        assert len(cells) == 9 and all(c > 0 for c in cells)
        assert cells[6] >= cells[0]  # the floor holds the ignore conversion


def test_the_small_files_row_in_a_chosen_working_directory(tmp_path: Path) -> None:
    """``--work-dir DIR``: the row's files are made in a new directory under DIR and deleted at
    the end; the results name DIR's file system beside the row."""
    work, out = tmp_path / "work", tmp_path / "results"
    work.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "run.py"),
            "--smoke",
            "--sections",
            "smallfiles",
            "--work-dir",
            str(work),
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(next(out.glob("*.json")).read_text())
    mig = results["migrate"]
    assert mig["status"] == "ok" and mig["local_small_files"]["small_files"]["files"] == 100
    fs = mig["work_fs"]
    assert fs is None or (fs["type"] and str(work).startswith(fs["mount_point"]))
    if fs is not None:
        assert f"File system of the working directory: {fs['type']} at {fs['mount_point']}" in proc.stdout
    assert list(work.iterdir()) == []  # nothing left behind
    missing = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--smoke", "--work-dir", str(tmp_path / "nowhere")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert missing.returncode != 0 and "not a directory" in missing.stderr


def _set_details(doc: Any, steps: list[str], key: str, value: Any) -> bool:
    """``doc`` with ``key: value`` added to the details object at ``steps`` (``x[]`` takes the
    first item of ``x``), the details made an object if absent; ``False`` where the path is not
    there or the details are no object."""
    node = doc
    for step in steps[:-1]:
        many = step.endswith("[]")
        node = node.get(step[:-2] if many else step) if isinstance(node, dict) else None
        if many:
            node = node[0] if isinstance(node, list) and node else None
        if not isinstance(node, dict):
            return False
    details = node.setdefault(steps[-1], {})
    if not isinstance(details, dict):
        return False
    details[key] = value
    return True


def test_a_floor_refuses_or_matches_an_error_whose_details_carry_meaning() -> None:
    """A floor is exact: where an error's ``details`` hold a key its source's reader takes a
    category or ``retryable`` from (``DialectMap.meaning_keys``), envglot writes another code than
    the code's row, so the floor either gives envglot's bytes or refuses the record
    (``OutsideError``). Every floored pair from such a source, its failures of the small corpus
    with each such key added (a category the code does not imply, and ``retryable``)."""
    import orjson

    from envglot import Converter
    from envglot.mappings import default_mappings

    corpus = bench_module("corpus").generate({"tiny": 16, "medium": 4}, seed=20260101)
    dialects = default_mappings().dialects
    checked = refused = 0
    for src, dst in FLOORED:
        keys = [k for k in dialects[src].meaning_keys if k is not None]
        if not keys:
            continue
        steps = dialects[src].fields["problem.details"].removeprefix("$.").split(".")
        floor = _floors.build(src, dst)
        conv = Converter(to=dst, from_=src, unsupported="ignore").convert_bytes
        for rec in corpus:
            if rec.dialect != src or rec.ok:
                continue
            for key, value in zip(keys, ("internal", True), strict=False):
                doc = orjson.loads(rec.data)
                if not _set_details(doc, steps, key, value):
                    continue
                b = orjson.dumps(doc)
                checked += 1
                try:
                    got = floor(b)
                except _floors.OutsideError:
                    refused += 1
                    continue
                assert got == conv(b), (src, dst, b)
    assert checked >= 100 and refused == checked  # every such record is refused: the test is made


def test_preserve_instructions_counts_successes_and_failures_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``preserve_instructions.py --outcomes``: the child splits a pair's records by the target's
    ``failed`` of their ``ignore`` output and reports each group's size (run here without callgrind)."""
    mod = bench_module("preserve_instructions")  # (puts benchmarks/ on sys.path)
    from compare_commits import write_corpus

    import envglot

    corpus = tmp_path / "corpus.json"
    write_corpus(corpus, ROOT / "src", {"tiny": 12}, seed=20260101)
    mod.child(corpus, [("dotbot", "response-v2")], False, True)
    successes, failures = json.loads(capsys.readouterr().out.splitlines()[0])
    records = next(g["records"] for g in json.loads(corpus.read_text())["groups"] if g["dialect"] == "dotbot")
    ignore = envglot.Converter(to="response-v2", from_="dotbot", unsupported="ignore")
    failed = [ignore.pipeline.dst.failed(ignore.convert_bytes(bytes.fromhex(h))) for h in records]
    assert (successes, failures) == (failed.count(False), failed.count(True))
    assert successes and failures  # the corpus's tiny dotbot records hold both
