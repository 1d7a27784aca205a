"""examples/custom-stages: the user stages, the suite's own judged stage and the system built by
a session fixture, from the committed cassettes and live on the example's own loopback judge."""

from __future__ import annotations

import importlib.util
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from evalhelpers import output, run_pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "custom-stages"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    root = tmp_path / "custom-stages"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return root


@pytest.fixture
def shop_judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The example's rule-based judge (shop_agent/judge.py) on a free loopback port."""
    spec = importlib.util.spec_from_file_location("shop_judge", EXAMPLE / "shop_agent/judge.py")
    assert spec is not None and spec.loader is not None
    judge = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(judge)
    server = ThreadingHTTPServer(("127.0.0.1", 0), judge.Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    monkeypatch.setenv("EVALCASES_JUDGE_BASE_URL", base_url)
    monkeypatch.setenv("EVALCASES_JUDGE_API_KEY", "local")
    yield base_url
    server.shutdown()
    server.server_close()


def test_the_example_replays_without_building_its_database(example: Path) -> None:
    basetemp = example.parent / "basetemp"

    result = run_pytest(example, "-p", "no:cacheprovider", f"--basetemp={basetemp}", "-v")

    assert result.ret == 0, output(result)
    result.assert_outcomes(passed=5)
    assert "sql_returns_rows  5       0       0" in output(result)
    # The session fixture that opens the database is the system's: a replay never asks for it.
    assert not list(basetemp.glob("shop*")), sorted(basetemp.iterdir())


def test_the_sql_stage_catches_a_query_that_forgets_the_quantities(
    example: Path, shop_judge: str
) -> None:
    """Live: the fixture builds the database, the agent writes the SQL, the judge grades the
    suite's own criteria; the user stage runs the recorded SQL again and names the rows."""
    model = example / "shop_agent" / "model.py"
    model.write_text(
        model.read_text().replace("SUM(p.price_cents * l.quantity)", "SUM(p.price_cents)")
    )

    result = run_pytest(example, "-p", "no:cacheprovider", "--live", "-k", "order-total")

    assert result.ret == 1, output(result)
    text = output(result)
    assert "first failing stage: sql_returns_rows (other rows than expected)" in text
    assert "rows:          [[5150]]" in text and "expected_rows: [[7100]]" in text
    recorded = json.loads((example / "cassettes/orders/order-total.json").read_text())
    assert recorded["verdicts"]["polite"]["score"] == 0.8, recorded["verdicts"]


def test_a_changed_criterion_stales_the_judged_stage_alone(example: Path) -> None:
    suite_file = example / "cases" / "orders.json"
    suite = json.loads(suite_file.read_text())
    suite["judged_stages"]["polite"]["criteria"] = (
        "The answer is courteous, does not blame the customer and offers help."
    )
    suite_file.write_text(json.dumps(suite))

    result = run_pytest(example, "-p", "no:cacheprovider", "-k", "ada-orders")

    assert result.ret == 1, output(result)
    assert "stale recording (verdict polite): criteria changed" in output(result)
