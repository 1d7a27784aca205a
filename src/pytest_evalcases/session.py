"""Per-run state of the plugin: settings read once, caches shared by all items, live recording."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .errors import EvalCaseError, MissingRecording, StaleRecording
from .recording import (
    LIVE,
    LIVE_JUDGES,
    LIVE_STALE,
    REPLAY,
    JudgeBinding,
    Recording,
    record,
    replay,
)

if TYPE_CHECKING:
    from .collect import CaseItem

SESSION_KEY = pytest.StashKey["EvalSession"]()
RECORDING_ERROR_KEY = pytest.StashKey[BaseException]()


def get_session(config: pytest.Config) -> EvalSession:
    return config.stash[SESSION_KEY]


def _mode(config: pytest.Config) -> str:
    live, stale, judges = (
        config.getoption(n) for n in ("eval_live", "eval_live_stale", "eval_live_judges")
    )
    if sum(map(bool, (live, stale, judges))) > 1:
        raise pytest.UsageError(
            "--live, --live-stale and --live-judges cannot be combined: pick one"
        )
    return LIVE if live else LIVE_STALE if stale else LIVE_JUDGES if judges else REPLAY


class EvalSession:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rootdir = Path(config.rootpath)
        self.mode = _mode(config)
        self.is_worker = hasattr(config, "workerinput")
        self.case_dirs = [(self.rootdir / p).resolve() for p in config.getini("eval_cases")]
        self.cassette_root = (self.rootdir / config.getini("eval_cassettes")).resolve()
        self.default_system = config.getini("eval_system") or None
        self.default_judge = config.getini("eval_judge") or None
        self.judge_override: str | None = config.getoption("eval_judge")
        self.concurrency = int(
            config.getoption("eval_concurrency") or config.getini("eval_concurrency")
        )
        if self.concurrency < 1:
            raise pytest.UsageError("--eval-concurrency must be at least 1")
        self.report_dir: str | None = config.getoption("eval_report")
        self.systems: dict[str, Any] = {}
        self._suite_files: dict[str, Path] = {}
        self._input_hashes: dict[str, str] = {}
        self._markers: dict[str, pytest.MarkDecorator] = {}
        self._judges: dict[str | None, JudgeBinding] = {}
        self._prepared: dict[str, Recording | BaseException] = {}
        self.results: list[str] = []  # JSON per case, gathered on the controller
        self.parsed: list[dict[str, Any]] | None = None
        self.baseline: dict[str, Any] | None = None
        self.run_report: Any = None
        from .runreport import utc_now

        self.started = utc_now()

    @property
    def live(self) -> bool:
        return self.mode != REPLAY

    # ---- collection helpers -------------------------------------------------------------------
    def is_case_file(self, path: Path) -> bool:
        return (
            path.suffix == ".json"
            and any(path.is_relative_to(d) for d in self.case_dirs)
            and not (path.is_relative_to(self.cassette_root))
        )

    def claim_suite_name(self, name: str, path: Path) -> Path | None:
        """Register a suite name; return the file that already has it, if any."""
        other = self._suite_files.setdefault(name, path)
        return None if other == path else other

    def input_hash(self, name: str, hasher: Any) -> str:
        """Each input file is hashed once per run, however many suites name it."""
        if name not in self._input_hashes:
            self._input_hashes[name] = hasher(self.rootdir / name)
        return self._input_hashes[name]

    def marker(self, name: str) -> pytest.MarkDecorator:
        """A category or mark as a registered marker, so --strict-markers accepts it."""
        if name not in self._markers:
            self.config.addinivalue_line("markers", f"{name}: eval case category or mark")
            self._markers[name] = getattr(pytest.mark, name)
        return self._markers[name]

    # ---- orphans ------------------------------------------------------------------------------
    def orphans(self) -> tuple[list[Path], str]:
        """Cassettes with no case, and a note on what was done with them. A full `--live` run
        (every case folder, no -k/-m/node ids/--lf/--deselect) deletes them."""
        from .cassette import find_orphans

        suites, unreadable = scan_suites(self.case_dirs, self.cassette_root)
        if unreadable:
            names = ", ".join(str(p) for p in unreadable[:3])
            return [], f" (not checked: unreadable case file {names})"
        orphans = [
            p.relative_to(self.rootdir) if p.is_relative_to(self.rootdir) else p
            for p in find_orphans(self.cassette_root, suites)
        ]
        if orphans and self.mode == LIVE and self._full_selection():
            for path in orphans:
                (self.rootdir / path).unlink(missing_ok=True)
            return orphans, " (deleted by this full --live run)"
        if orphans:
            return orphans, " (a full --live run over the case folders deletes them)"
        return orphans, ""

    def _full_selection(self) -> bool:
        option = self.config.option
        if option.keyword or option.markexpr or getattr(option, "deselect", None):
            return False
        if getattr(option, "lf", False) or getattr(option, "last_failed", False):
            return False
        args = self.config.args
        if any("::" in arg for arg in args):
            return False
        paths = [(Path(self.config.invocation_params.dir) / a).resolve() for a in args]
        return all(any(d.is_relative_to(p) for p in paths) for d in self.case_dirs)

    # ---- judges -------------------------------------------------------------------------------
    def judge_binding(self, spec: str | None, live: bool) -> JudgeBinding:
        """Judge id and version for keys; in live modes also the judge object (built once)."""
        binding = self._judges.get(spec)
        if binding is None:
            version = None
            if spec is not None:
                from .judges import judge_version

                version = judge_version(spec)
            binding = JudgeBinding(spec, version)
            self._judges[spec] = binding
        if live and binding.live is None and spec is not None:
            from .judges import make_judge

            binding.live = make_judge(spec, max_concurrency=self.concurrency)
        return binding

    def _binding_for(self, item: CaseItem) -> JudgeBinding:
        ctx = item.ctx
        needs_judge = self.live and bool(ctx.judged)
        if needs_judge and ctx.judge_spec is None:
            raise EvalCaseError(
                f"{ctx.path}: suite {ctx.suite.name!r} has judged stages but no judge; set "
                '--eval-judge, "judge" in the suite, or eval_judge in the pytest ini'
            )
        return self.judge_binding(ctx.judge_spec, needs_judge)

    # ---- recordings ---------------------------------------------------------------------------
    def recording_for(self, item: CaseItem) -> Recording:
        if not self.live:
            return replay(item.ctx, item.case, self._binding_for(item))
        prepared = self._prepared.pop(item.nodeid, None)
        try:
            if isinstance(prepared, BaseException):
                raise prepared
            # Under xdist each worker records the items it is given, one at a time.
            return prepared or asyncio.run(self._record_single(item))
        except (StaleRecording, MissingRecording):
            raise
        except Exception as exc:
            item.live_error = f"{type(exc).__name__}: {exc}".splitlines()[0]
            raise

    async def _record_single(self, item: CaseItem) -> Recording:
        try:
            return await self._record_one(item, asyncio.Semaphore(self.concurrency))
        finally:
            await self._close_judges()

    async def _close_judges(self) -> None:
        """Judge clients belong to one event loop: close them before it ends."""
        for binding in self._judges.values():
            if binding.live is not None:
                await binding.live.aclose()

    async def _record_one(self, item: CaseItem, limiter: asyncio.Semaphore) -> Recording:
        binding = self._binding_for(item)
        item.ctx.system.setup(item.ctx.suite)
        async with limiter:
            return await record(item.ctx, item.case, binding, self.mode)

    def record_batch(self, items: list[CaseItem], progress: Any) -> None:
        """Live mode without xdist: record every selected case in one event loop, at most
        `concurrency` cases at a time, before the items report in their usual order."""
        items = [item for item in items if not item.case.skip]
        for item in items:  # judges first: a missing key fails before any case runs
            try:
                self._binding_for(item)
            except Exception as exc:
                raise pytest.UsageError(str(exc)) from None
        runnable = []
        for item in items:
            try:
                item.ctx.system.setup(item.ctx.suite)
                runnable.append(item)
            except Exception as exc:  # that system's cases error; the others are recorded
                self._prepared[item.nodeid] = exc
        if runnable:
            progress.total = len(runnable)
            asyncio.run(self._record_all(runnable, progress))

    async def _record_all(self, items: list[CaseItem], progress: Any) -> None:
        limiter = asyncio.Semaphore(self.concurrency)

        async def one(item: CaseItem) -> None:
            try:
                self._prepared[item.nodeid] = await self._record_one(item, limiter)
            except Exception as exc:  # shown by that item; the others go on
                self._prepared[item.nodeid] = exc
            progress.case_done(self._judges.values())

        try:
            await asyncio.gather(*(one(item) for item in items))
        finally:
            progress.finish(self._judges.values())
            await self._close_judges()


def outcome_of(
    item: Any, when: str, report: pytest.TestReport, exc: BaseException | None
) -> str | None:
    """The outcome the summary and reports count, once the phase that decides it has run."""
    if when == "setup":
        if report.skipped:
            return "skipped"
        if report.failed:
            if isinstance(exc, StaleRecording):
                return "stale"
            if isinstance(exc, MissingRecording):
                return "missing"
            return "error"
        return None
    if when != "call":
        return None
    xfail = bool(getattr(item, "case", None) and item.case.xfail)
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.passed:
        return "passed"
    if xfail and exc is None:  # strict xfail that passed
        return "xpassed"
    from .errors import StageFailure

    return "failed" if isinstance(exc, StageFailure) else "error"


def case_result(item: Any, outcome: str, with_detail: bool) -> dict[str, Any]:
    """The per-case result dict: what the summary, results.json and the baseline gate read."""
    from .collect import CaseItem

    if not isinstance(item, CaseItem):  # a file or case that could not be loaded
        return {
            "nodeid": item.nodeid,
            "suite": item.suite_name,
            "id": item.name,
            "file": _relpath(item),
            "index": item.index,
            "category": None,
            "group": None,
            "outcome": outcome,
            "first_failure": None,
            "stages": {},
            "recording": {},
        }
    from .scoring import result_stages

    case, scores, recording = item.case, item.scores, item.recording
    first = None
    if scores is not None and scores.first_failure is not None:
        name, stage = scores.first_failure
        first = {"stage": name, "reason": stage.reason}
    result: dict[str, Any] = {
        "nodeid": item.nodeid,
        "suite": item.ctx.suite.name,
        "id": case.id,
        "file": _relpath(item),
        "index": item.index,
        "category": case.category,
        "group": case.group,
        "outcome": outcome,
        "first_failure": first,
        "stages": result_stages(scores) if scores is not None else {},
        "recording": _recording_info(recording, outcome, getattr(item, "live_error", None)),
    }
    if with_detail and recording is not None:
        trace = recording.trace
        result["detail"] = {
            "input": case.input,
            "answer": trace.get("answer", ""),
            "reference": case.reference,
            "tool_calls": trace.get("tool_calls", []),
            "retrieved": trace.get("retrieved", []),
            "context": trace.get("context", []),
        }
    return result


def _relpath(item: Any) -> str:
    return item.nodeid.split("::", 1)[0]


def _recording_info(
    recording: Recording | None, outcome: str, live_error: str | None
) -> dict[str, Any]:
    if recording is None:
        if live_error:
            return {
                "status": "not_rerecorded",
                "note": f"{live_error}; the previous recording was kept",
            }
        return {"status": outcome if outcome in ("stale", "missing") else None}
    verdicts = [v for v in recording.verdicts.values() if isinstance(v, dict)]
    judge_usage = _sum_usage(v.get("usage") for v in verdicts)
    latencies = [v["latency_ms"] for v in verdicts if isinstance(v.get("latency_ms"), int | float)]
    return {
        "status": recording.status,
        "recorded_at": recording.recorded_at,
        "note": recording.note,
        "usage": recording.trace.get("usage"),
        "latency_ms": recording.trace.get("latency_ms"),
        "judge_usage": judge_usage,
        "judge_latency_ms": sum(latencies) if latencies else None,
    }


def _sum_usage(usages: Any) -> dict[str, float] | None:
    total: dict[str, float] = {}
    for usage in usages:
        for name, value in (usage or {}).items():
            if isinstance(value, int | float):
                total[name] = total.get(name, 0) + value
    return total or None


def dump_result(result: dict[str, Any]) -> str:
    return json.dumps(result, separators=(",", ":"), ensure_ascii=False)


class Progress:
    """The live recording progress line: cases done/total, judge calls, retries, tokens, cost."""

    def __init__(self, total: int, write: Any, is_tty: bool) -> None:
        self.total, self.done, self._write, self._tty = total, 0, write, is_tty
        self._last_printed = -1

    def _line(self, bindings: Any) -> str:
        calls = retries = tokens = 0
        cost = 0.0
        for binding in bindings:
            stats = getattr(binding.live, "stats", None)
            if stats is not None:
                calls += stats.calls
                retries += stats.retries
                tokens += stats.prompt_tokens + stats.completion_tokens
                cost += stats.cost_usd
        return (
            f"recording: {self.done}/{self.total} cases, {calls} judge calls, {retries} retries, "
            f"{tokens} tokens, ${cost:.4f}"
        )

    def case_done(self, bindings: Any) -> None:
        self.done += 1
        step = max(1, self.total // 10)  # without a terminal, about ten lines in all
        if self._tty:
            self._write("\r" + self._line(bindings))
        elif self.done % step == 0 and self.done != self.total:
            self._write(self._line(bindings) + "\n")

    def finish(self, bindings: Any) -> None:
        self._write(("\r" if self._tty else "") + self._line(bindings) + "\n")


def stderr_progress(total: int) -> Progress:
    return Progress(total, sys.stderr.write, sys.stderr.isatty())


def scan_suites(
    case_dirs: list[Path], cassette_root: Path
) -> tuple[dict[str, list[str]], list[Path]]:
    """Suite name -> case ids of every case file under the case folders, and the files that could
    not be read (then no cassette can safely be called an orphan)."""
    suites: dict[str, list[str]] = {}
    unreadable: list[Path] = []
    for folder in case_dirs:
        for path in sorted(folder.rglob("*.json")) if folder.is_dir() else []:
            if path.is_relative_to(cassette_root):
                continue
            try:
                doc = json.loads(path.read_bytes())
                ids = [
                    c["id"]
                    for c in doc["cases"]
                    if isinstance(c, dict) and isinstance(c.get("id"), str)
                ]
                suites.setdefault(str(doc["name"]), []).extend(ids)
            except (OSError, ValueError, KeyError, TypeError):
                unreadable.append(path)
    return suites, unreadable
