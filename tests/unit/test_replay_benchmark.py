"""benchmarks/replay.py's own bookkeeping (nothing here is timed): the project it writes with
--files, and the phases it splits a run into."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "replay.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("replay_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_files_split_the_cases_and_the_plain_tests_alike(bench: ModuleType, tmp_path: Path) -> None:
    bench.write_project(tmp_path, 10, files=3)
    suites = sorted((tmp_path / "cases").glob("*.json"))
    assert [p.name for p in suites] == ["bench_000.json", "bench_001.json", "bench_002.json"]
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in suites]
    assert [d["name"] for d in docs] == ["bench_000", "bench_001", "bench_002"]
    ids = [case["id"] for doc in docs for case in doc["cases"]]
    assert ids == [f"case-{i:05d}" for i in range(10)]  # every case once, in order
    assert [len(d["cases"]) for d in docs] == [3, 3, 4]
    plain = sorted((tmp_path / "plain").glob("test_*.py"))
    ranges = [p.read_text(encoding="utf-8").split("range(")[1].split(")")[0] for p in plain]
    assert ranges == ["0, 3", "3, 6", "6, 10"]
    meta = json.loads((tmp_path / bench.PROJECT_META).read_text(encoding="utf-8"))
    assert meta == {"n": 10, "files": 3, "imported": False}


def test_one_file_keeps_the_names_of_before(bench: ModuleType, tmp_path: Path) -> None:
    bench.write_project(tmp_path, 4)
    assert [p.name for p in (tmp_path / "cases").iterdir()] == ["bench.json"]
    assert [p.name for p in (tmp_path / "plain").iterdir()] == ["test_plain.py"]
    doc = json.loads((tmp_path / "cases" / "bench.json").read_text(encoding="utf-8"))
    assert doc["name"] == "bench" and len(doc["cases"]) == 4


def test_phases_add_up_to_the_run(bench: ModuleType) -> None:
    stamps = {
        "collection_start": (100.5, 0.4, 0.0),
        "collection_end": (102.0, 1.6, 0.2),
        "run_start": (102.1, 1.7, 0.2),
        "run_end": (110.0, 9.0, 0.9),
        "sessionfinish_start": (110.0, 9.0, 0.9),
        "summary_start": (110.2, 9.1, 0.9),
        "summary_end": (110.7, 9.5, 1.0),
        "sessionfinish_end": (110.8, 9.6, 1.0),
    }
    run = bench.Run(11.0, 0, 10.0, 0, "", spawned=100.0, exited=111.0)
    phases = bench.phase_seconds({"stamps": stamps, "gc_seconds": 1.25}, run)
    assert list(phases) == list(bench.PHASES)
    assert phases["terminal summary"] == pytest.approx((0.5, 0.4, 0.1))
    assert phases["session finish"] == pytest.approx((0.3, 0.2, 0.0))
    assert phases["exit"] == pytest.approx((0.2, 0.4, 0.25))
    # Wall: everything but the gaps between hooks (collection end -> run start: 0.1 s).
    assert sum(p[0] for p in phases.values()) == pytest.approx(run.wall - 0.1)
    assert sum(p[1] for p in phases.values()) == pytest.approx(run.cpu - 0.1)
    assert sum(p[2] for p in phases.values()) == pytest.approx(1.25)
