"""The dashboard in a real browser: scripts run, hostile strings stay text, hash filters work.

Uses headless Chromium's --dump-dom (the DOM after scripts ran). Skipped where no
chromium binary exists; CI installs Debian's chromium. Where `node` is installed, the
dashboard's address decoder also runs on its own against malformed addresses.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pytest_evalcases.report import aggregate, write_reports

# Each payload would set a marker attribute on <html> if it ever executed.
PAYLOAD_SCRIPT = "<script>document.documentElement.setAttribute('data-pwned','script')</script>"
PAYLOAD_IMG = "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','img')\">"
CLASSIC = "<script>alert(1)</script> <img src=x onerror=alert(1)>"


def chromium_binary() -> str | None:
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def _case(
    cid: str, index: int, outcome: str, category: str, answer: str, ff_stage: str | None = None
) -> dict:
    passed = outcome == "passed"
    return {
        "nodeid": f"cases/docs.json::{cid}",
        "suite": "docs",
        "id": cid,
        "file": "cases/docs.json",
        "index": index,
        "category": category,
        "group": None,
        "outcome": outcome,
        "first_failure": {"stage": ff_stage, "reason": f"{ff_stage} failed: {CLASSIC}"}
        if ff_stage
        else None,
        "stages": {
            "tools": {
                "score": 1.0,
                "passed": True,
                "gating": True,
                "reason": "ok",
                "label": None,
                "metrics": {},
            },
            "retrieval": {
                "score": 1.0 if passed else 0.5,
                "passed": passed,
                "gating": True,
                "reason": f"recall {CLASSIC}",
                "label": None,
                "metrics": {"k": 3, "recall_at_k": 1.0 if passed else 0.5},
            },
        },
        "recording": {
            "status": "replayed",
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "cost_usd": 0.0001},
        },
        "detail": {
            "input": f"question {PAYLOAD_IMG}",
            "answer": answer,
            "reference": None,
            "tool_calls": [{"name": "search_docs", "args": {"q": PAYLOAD_SCRIPT}}],
            "retrieved": ["storage"],
            "context": [PAYLOAD_SCRIPT],
        },
    }


HOSTILE_CATEGORY = (
    "\"><img src=x onerror=\"document.documentElement.setAttribute('data-pwned','attr')\">"
)


def sample_doc() -> dict:
    results = [
        _case(
            "storage", 0, "passed", "storage", f"answer {PAYLOAD_SCRIPT} {PAYLOAD_IMG} {CLASSIC}"
        ),
        _case("config", 1, "failed", "storage", "wrong", ff_stage="retrieval"),
        _case("sync", 2, "failed", "sync", "also wrong", ff_stage="retrieval"),
        _case("export", 3, "passed", HOSTILE_CATEGORY, "fine, 100% sure"),
        {**_case("theme", 4, "stale", "ui", ""), "stages": {}, "first_failure": None},
    ]
    return aggregate(results, {"mode": "replay", "judge": PAYLOAD_SCRIPT})


class DomSummary(HTMLParser):
    """Counts of the elements the assertions need, from the serialised DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.case_rows: list[dict[str, str | None]] = []
        self.scripts = 0
        self.imgs = 0
        self.svgs_with_onload = 0
        self.html_attrs: dict[str, str | None] = {}
        self.event_handler_attrs = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "html":
            self.html_attrs = a
        if tag == "script":
            self.scripts += 1
        if tag == "img":
            self.imgs += 1
        self.event_handler_attrs += sum(1 for name, _ in attrs if name.startswith("on"))
        if tag == "tr" and "case" in (a.get("class") or "").split():
            self.case_rows.append(a)


def dump_dom(tmp_path: Path, html_file: Path, fragment: str = "") -> DomSummary:
    binary = chromium_binary()
    assert binary is not None
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    url = html_file.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    cmd = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        url,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "<html" in proc.stdout, proc.stderr[-2000:]
    parser = DomSummary()
    parser.feed(proc.stdout)
    parser.raw = proc.stdout  # type: ignore[attr-defined]
    return parser


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if chromium_binary() is None:
        pytest.skip("no chromium binary (install Debian's chromium to run the browser test)")
    out = tmp_path_factory.mktemp("dash")
    write_reports(sample_doc(), out)
    return out / "dashboard.html"


def visible(dom: DomSummary) -> list[str]:
    return [str(r.get("data-outcome")) for r in dom.case_rows if "hidden" not in r]


def test_scripts_run_and_payloads_stay_text(dashboard: Path, tmp_path: Path) -> None:
    dom = dump_dom(tmp_path, dashboard)
    assert dom.html_attrs.get("data-dashboard-ready") == "1"  # our script ran to the end
    assert "data-pwned" not in dom.html_attrs  # no payload ran
    assert len(dom.case_rows) == 5
    assert visible(dom) == ["passed", "failed", "failed", "passed", "stale"]
    assert dom.html_attrs.get("data-visible-cases") == "5"
    assert dom.scripts == 1 and dom.imgs == 0 and dom.event_handler_attrs == 0
    raw = dom.raw  # type: ignore[attr-defined]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in raw
    assert "&lt;img src=x onerror=alert(1)&gt;" in raw
    assert "5 of 5 cases" in raw


@pytest.mark.parametrize(
    ("fragment", "expected"),
    [
        ("outcome=failed", ["failed", "failed"]),
        ("outcome=failed&category=sync", ["failed"]),
        ("stage=retrieval", ["failed", "failed"]),
        ("stage=-", ["passed", "passed", "stale"]),
        ("q=also%20wrong", ["failed"]),
        ("category=" + urllib.parse.quote(HOSTILE_CATEGORY, safe=""), ["passed"]),
        ("outcome=xpassed", []),
        # Malformed addresses (decodeURIComponent throws on them) never stop the script: a bare
        # "%" stays text, a broken escape is kept as written, an unknown key is ignored.
        ("q=100%", ["passed"]),
        ("q=100%%20sure", ["passed"]),
        ("outcome=failed&junk=%E0%A4%A", ["failed", "failed"]),
        ("%=x&stage=retrieval&q=%FF", []),
        ("%", ["passed", "failed", "failed", "passed", "stale"]),
    ],
)
def test_hash_filters(dashboard: Path, tmp_path: Path, fragment: str, expected: list[str]) -> None:
    dom = dump_dom(tmp_path, dashboard, fragment)
    assert dom.html_attrs.get("data-dashboard-ready") == "1"
    assert visible(dom) == expected
    assert dom.html_attrs.get("data-visible-cases") == str(len(expected))
    assert "data-pwned" not in dom.html_attrs


# ---- node: the dashboard's address decoder on its own ------------------------------------------
TEMPLATES = Path(__file__).parents[2] / "src" / "pytest_evalcases" / "report" / "templates"


def _dashboard_decoder() -> str:
    """The dashboard script's decodePart function, as its source text."""
    js = (TEMPLATES / "dashboard.js").read_text(encoding="utf-8")
    found = re.search(r"^  function decodePart\(text\) \{\n.*?^  \}\n", js, re.M | re.S)
    assert found, "dashboard.js has no decodePart function"
    return found.group(0)


# A hand-typed or cut address, and what the filters get from it: what decodes is decoded, a "%"
# that starts no escape stays text, and broken UTF-8 is left as written.
MALFORMED_HASH_PARTS = {
    "100%": "100%",
    "%": "%",
    "100%%20sure": "100% sure",
    "%ZZ": "%ZZ",
    "a%20b": "a b",
    "%25": "%",
    "caf%C3%A9": "caf\u00e9",
    "caf%C3": "caf%C3",
    "%FF": "%FF",
    "%E0%A4%A": "%E0%A4%A",
    "%C3%A9%": "\u00e9%",
    "%ED%A0%80": "%ED%A0%80",  # the last: a UTF-8 encoded lone surrogate
}


def test_dashboard_hash_decoding_never_throws() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node binary (the browser test covers the dashboard where chromium is)")
    script = (
        _dashboard_decoder() + "const parts = JSON.parse(process.argv[1]);\n"
        "console.log(JSON.stringify(parts.map(decodePart)));\n"
    )
    proc = subprocess.run(
        [node, "-e", script, json.dumps(list(MALFORMED_HASH_PARTS))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == list(MALFORMED_HASH_PARTS.values())
