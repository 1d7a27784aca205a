"""Per-run state of the plugin: settings read once and caches shared by all items.

Imports stay light here (this module loads in every pytest run where the plugin is installed):
validation, hashing, judges and live recording are imported when first needed.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .core.errors import EvalCaseError
from .core.modes import LIVE, LIVE_JUDGES, LIVE_STALE, REPLAY

if TYPE_CHECKING:
    from .batch import LiveRecorder
    from .collect import CaseItem
    from .domain.code import CodeFingerprints
    from .engine.recording import JudgeBinding, Recording
    from .http.router import HttpLayer

SESSION_KEY = pytest.StashKey["EvalSession"]()


def _judge_setting(value: str | None, where: str) -> str | None:
    """A judge named on the command line or in the ini, checked before anything runs."""
    if not value:
        return None
    from .judges import JudgeConfigError
    from .judges.spec import canonical_judge

    try:
        return canonical_judge(value)
    except JudgeConfigError as exc:
        raise pytest.UsageError(f"{where}: {exc}") from None


def _positive(value: Any, where: str) -> Any:
    """A number of seconds above zero, or None when not given."""
    if value in (None, ""):
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise pytest.UsageError(f"{where}: {value!r} is not a number of seconds") from None
    if not seconds > 0 or seconds == float("inf"):
        raise pytest.UsageError(f"{where}: {value!r} must be a number of seconds above 0")
    return seconds


def _rate_setting(config: pytest.Config, name: str, env_name: str) -> float | None:
    """--eval-rpm / --eval-tpm, else EVALCASES_RPM / EVALCASES_TPM, else the ini option."""
    sources = ((config.getoption(name), f"--{name.replace('_', '-')}"),
               (os.environ.get(env_name, "").strip(), env_name),
               (config.getini(name).strip(), f"ini option {name}"))
    raw, where = next(((raw, where) for raw, where in sources if raw not in (None, "")),
                      (None, ""))
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise pytest.UsageError(f"{where}: {raw!r} is not a number") from None
    if not 0 < value < float("inf"):
        raise pytest.UsageError(f"{where} must be a positive number, not {raw!r}")
    return value


def _count_setting(value: Any, where: str) -> int | None:
    """A whole number of at least 1 (repeats, runs), or None when not given."""
    if value in (None, ""):
        return None
    try:
        count = int(str(value).strip())
    except ValueError:
        raise pytest.UsageError(f"{where}: {value!r} is not a whole number") from None
    if count < 1:
        raise pytest.UsageError(f"{where} must be at least 1, not {value!r}")
    return count


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
    # --live-dry-run alone is a dry --live; with --live-stale or --live-judges, a dry one of those
    live = live or (config.getoption("eval_live_dry_run") and not (stale or judges))
    return LIVE if live else LIVE_STALE if stale else LIVE_JUDGES if judges else REPLAY


def _budget(value: float | None) -> float | None:
    """--eval-budget USD: a cost above 0, or None when not given."""
    if value is None:
        return None
    if not 0 < value < float("inf"):
        raise pytest.UsageError(f"--eval-budget must be an amount of USD above 0, not {value!r}")
    return float(value)


def _replay_http(config: pytest.Config, mode: str) -> bool:
    ini = (config.getini("eval_replay") or "trace").strip()
    if ini not in ("trace", "http"):
        raise pytest.UsageError(f"ini option eval_replay: {ini!r} is not 'trace' or 'http'")
    flag = bool(config.getoption("eval_replay_http"))
    if flag and mode == LIVE:
        live = "--live" if config.getoption("eval_live") else "--live-dry-run (a dry --live)"
        raise pytest.UsageError(
            f"{live} runs the system against the real network; --replay-http serves it the "
            "recorded answers: pick one (--replay-http --live-stale refreshes what replays clean)"
        )
    # The ini says how to replay; it never turns --live, --live-stale or --live-judges into
    # their offline variants (those take the --replay-http flag).
    return flag or (ini == "http" and mode == REPLAY)


class EvalSession:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rootdir = Path(config.rootpath)
        self.mode = _mode(config)
        self.dry_run = bool(config.getoption("eval_live_dry_run"))  # run and judge, write nothing
        self.budget = _budget(config.getoption("eval_budget"))
        self.replay_http = _replay_http(config, self.mode)
        self.is_worker = hasattr(config, "workerinput")
        self.case_dirs = [(self.rootdir / p).resolve() for p in config.getini("eval_cases")]
        self.cassette_root = (self.rootdir / config.getini("eval_cassettes")).resolve()
        self.default_system = config.getini("eval_system") or None
        self.default_judge = _judge_setting(config.getini("eval_judge"), "ini option eval_judge")
        self.judge_override = _judge_setting(config.getoption("eval_judge"), "--eval-judge")
        self.concurrency = int(
            config.getoption("eval_concurrency") or config.getini("eval_concurrency")
        )
        if self.concurrency < 1:
            raise pytest.UsageError("--eval-concurrency must be at least 1")
        self.timeout_override: float | None = _positive(
            config.getoption("eval_timeout"), "--eval-timeout"
        )
        self.default_timeout: float = _positive(config.getini("eval_timeout"), "ini eval_timeout")
        self.judge_repeats_override = _count_setting(
            config.getoption("eval_judge_repeats"), "--eval-judge-repeats"
        )
        self.default_judge_repeats = _count_setting(
            config.getini("eval_judge_repeats"), "ini option eval_judge_repeats"
        )
        self.runs_override = _count_setting(config.getoption("eval_runs"), "--eval-runs")
        # client-side judge limits, per judge endpoint (requests / tokens per minute)
        self.judge_rpm = _rate_setting(config, "eval_rpm", "EVALCASES_RPM")
        self.judge_tpm = _rate_setting(config, "eval_tpm", "EVALCASES_TPM")
        self.report_dir: str | None = config.getoption("eval_report")
        self.systems: dict[str, Any] = {}
        # suite name -> the case files declaring it (node ids); two or more is a conflict.
        self._suite_files: dict[str, list[str]] = {}
        self.seen_case_files: set[Path] = set()  # every case file this run collected
        # case file -> (suite name, case ids), filled at collection (and for the case files
        # this run does not collect, by `claim_uncollected_suites`): orphan detection then
        # re-reads only the files not known here (on the xdist controller: all of them).
        self.collected_suites: dict[Path, tuple[str, list[str]]] = {}
        # Node ids of the eval items this run selected (after -k, -m, --lf, --deselect): from
        # the collection, or on the xdist controller from the workers' collections. A --live
        # run deletes the orphans of each suite whose every case is in it.
        self.selected: set[str] = set()
        self._input_hashes: dict[str, str] = {}
        self._code_fingerprints: CodeFingerprints | None = None
        self._markers: dict[str, pytest.MarkDecorator] = {}
        self._judges: dict[str | None, JudgeBinding] = {}
        self._recorder: LiveRecorder | None = None
        self._http_layer: HttpLayer | None = None
        self._guard: Any = None
        self.removed_temp_files = 0  # left by killed live runs, removed when this one starts
        self.stopped: str | None = None  # why a live run stopped starting cases, if it did
        self.baseline: dict[str, Any] | None = None
        self.run_report: Any = None
        self.locked_manifest: dict[str, Any] | None = None  # --eval-manifest, read at configure
        # --eval-otel: spans of the cases this process records (live runs only)
        self.otel_requested = bool(config.getoption("eval_otel"))
        self.otel: Any = None  # telemetry.export.OtelExport, once the first case records
        # how the export went: this process's counts, and (xdist controller) each worker's
        self.otel_deliveries: list[dict[str, Any]] = []
        self._run_id: str | None = None
        self._project_config: dict[str, Any] | None = None
        from .report.run import utc_now

        self.started = utc_now()

    @property
    def live(self) -> bool:
        return self.mode != REPLAY

    @property
    def run_id(self) -> str:
        """This run's id: $EVALCASES_RUN_ID (CI shards of one run share it), else a new UUID;
        on an xdist worker, the controller's. Made on first use: a plain replay never asks."""
        if self._run_id is None:
            given = getattr(self.config, "workerinput", {}).get("evalcases_run_id")
            given = given or os.environ.get("EVALCASES_RUN_ID", "").strip()
            if not given:
                import uuid

                given = str(uuid.uuid4())
            self._run_id = given
        return self._run_id

    @property
    def otel_export(self) -> Any:
        """The run's OpenTelemetry export (telemetry.export.OtelExport), made when the first
        case records; None unless this is a live run with --eval-otel."""
        if self.otel is None and self.otel_requested and self.live:
            from .telemetry.export import OtelExport

            self.otel = OtelExport(self.run_id)
        return self.otel

    def close_otel(self) -> None:
        """Send what is left and keep the counts saying how it went (once, at the end); an
        xdist worker hands them to the controller with its output."""
        if self.otel is not None:
            delivery = self.otel.shutdown()
            self.otel = None
            self.otel_requested = False  # nothing is made again after the end
            self.otel_deliveries.append(delivery)
            workeroutput = getattr(self.config, "workeroutput", None)
            if workeroutput is not None:
                workeroutput["evalcases_otel"] = delivery

    def project_config(self, session: pytest.Session) -> dict[str, Any]:
        """The run manifest's `config` (every suite of the case folders, versions, git), built
        once per run and only when a report or a manifest check asks for it."""
        if self._project_config is None:
            from .project import project_config

            self._project_config = project_config(session, self)
        return self._project_config

    @property
    def records_in_batch(self) -> bool:
        """Whether the selected cases are recorded in one event loop before they report (with
        --replay-http, each case runs offline in its own item, one at a time)."""
        return self.live and not self.replay_http and not self.is_worker

    @property
    def http_layer(self) -> HttpLayer:
        """vcrpy's patches (and, for --replay-http, the network guard), installed on first use
        and removed at the end of the run."""
        if self._http_layer is None:
            try:
                from .http.guard import NetworkGuard
                from .http.router import HttpLayer
            except ImportError as exc:
                raise EvalCaseError(
                    f"recording or replaying HTTP needs vcrpy ({exc}); install "
                    '"pytest-evalcases[live]"'
                ) from None
            layer = HttpLayer()
            layer.start()
            if self.replay_http:
                self._guard = NetworkGuard(layer)
                self._guard.install()
            self._http_layer = layer
        return self._http_layer

    def close_http(self) -> None:
        if self._guard is not None:
            self._guard.uninstall()
            self._guard = None
        if self._http_layer is not None:
            self._http_layer.stop()
            self._http_layer = None

    # ---- collection helpers -------------------------------------------------------------------
    def is_case_file(self, path: Path) -> bool:
        return (
            path.suffix == ".json"
            and any(path.is_relative_to(d) for d in self.case_dirs)
            and not (path.is_relative_to(self.cassette_root))
        )

    def claim_suite_name(self, name: str, file: str) -> None:
        """Note that `file` declares the suite `name` (see `suite_conflict`)."""
        files = self._suite_files.setdefault(name, [])
        if file not in files:
            files.append(file)

    def suite_conflict(self, name: str, file: str) -> list[str]:
        """The other case files declaring the suite `name` (none: no conflict). Asked when a
        case runs, after collection: by then every file of the case folders has been seen, the
        ones this run does not collect included (`claim_uncollected_suites`)."""
        files = self._suite_files.get(name)
        if files is None or len(files) < 2:
            return []
        return [other for other in files if other != file]

    def claim_uncollected_suites(self) -> None:
        """After collection: claim the suite names of the case files this run did not collect
        (a node id or a folder selected part of them), so that a suite whose name another file
        also declares is refused whatever the selection. Their case ids are kept for orphan
        detection, which then need not read them again."""
        if not self.seen_case_files:  # no eval case in this run: read nothing
            return
        suites, _ = scan_suites(self.case_dirs, self.cassette_root, {}, self.seen_case_files)
        for path, (name, ids) in suites.items():
            self.claim_suite_name(name, _shown(path, self.rootdir))
            self.collected_suites[path] = (name, ids)

    def input_hash(self, name: str, hasher: Any) -> str:
        """Each input file is hashed once per run, however many suites name it."""
        if name not in self._input_hashes:
            self._input_hashes[name] = hasher(self.rootdir / name)
        return self._input_hashes[name]

    @property
    def code_fingerprints(self) -> CodeFingerprints:
        """Hashes of the systems' source files, each file parsed once per run."""
        if self._code_fingerprints is None:
            from .domain.code import CodeFingerprints

            self._code_fingerprints = CodeFingerprints(self.rootdir)
        return self._code_fingerprints

    def marker(self, name: str) -> pytest.MarkDecorator:
        """A category or mark as a registered marker, so --strict-markers accepts it."""
        if name not in self._markers:
            self.config.addinivalue_line("markers", f"{name}: eval case category or mark")
            self._markers[name] = getattr(pytest.mark, name)
        return self._markers[name]

    # ---- orphans ------------------------------------------------------------------------------
    def note_selected(self, nodeids: Iterable[str]) -> None:
        self.selected.update(nodeids)

    def orphans(self) -> tuple[list[str], str]:
        """Recordings with no case (as shown: relative paths, `(deleted)` when this run deleted
        them), and a note on what was done with them. A `--live` run deletes the orphans of each
        suite it selected every case of, whatever selected them; those of a suite that is gone
        when it selected every case of every suite."""
        from .store.cassette import find_orphans

        per_file, unreadable = scan_suites(
            self.case_dirs, self.cassette_root, self.collected_suites
        )
        if unreadable:
            names = ", ".join(_shown(p, self.rootdir) for p in unreadable[:3])
            return [], f" (not checked: unreadable case file {names})"
        orphans = find_orphans(self.cassette_root, _ids_by_suite(per_file))
        if not orphans:
            return [], ""
        live = self.mode == LIVE and not self.dry_run  # a dry run writes and deletes nothing
        deletable = set(self._deletable(orphans, per_file)) if live else set()
        remove_orphans(sorted(deletable))
        shown = [
            _shown(path, self.rootdir) + (" (deleted)" if path in deletable else "")
            for path in orphans
        ]
        kept = len(orphans) - len(deletable)
        if not kept:
            return shown, " (deleted: this --live run selected every case of their suites)"
        if deletable:
            return shown, (
                f" ({len(deletable)} deleted: this --live run selected every case of their "
                "suites; --live-prune deletes the rest)"
            )
        return shown, (
            " (--live-prune deletes them, as does a --live run that selects every case of their "
            "suite)"
        )

    def _deletable(
        self, orphans: list[Path], per_file: dict[Path, tuple[str, list[str]]]
    ) -> list[Path]:
        """The orphans this --live run may delete: those of the suites whose every case it
        selected (a suite two files declare never: nothing of it is recorded either)."""
        files_of: dict[str, list[Path]] = {}
        for path, (name, _) in per_file.items():
            files_of.setdefault(name, []).append(path)
        complete_files = {path for path, (_, ids) in per_file.items() if self._selects(path, ids)}
        complete = {
            name for name, files in files_of.items()
            if len(files) == 1 and files[0] in complete_files
        }
        # A gone suite's folder: when every case of every suite was selected (a full run), as
        # long as it selected any case at all.
        everything = bool(self.selected) and all(
            path in complete_files or not ids for path, (_, ids) in per_file.items()
        )
        return [
            path for path in orphans
            if path.parent.name in complete or (path.parent.name not in files_of and everything)
        ]

    def _selects(self, path: Path, ids: list[str]) -> bool:
        """Whether every case of the case file at `path` was selected (an empty file: no)."""
        prefix = _shown(path, self.rootdir) + "::"
        return bool(ids) and all(prefix + case_id in self.selected for case_id in ids)

    # ---- judges -------------------------------------------------------------------------------
    def judge_binding(self, spec: str | None, live: bool) -> JudgeBinding:
        """Judge id and version for keys; in live modes also the judge object (built once)."""
        binding = self._judges.get(spec)
        if binding is None:
            version = None
            if spec is not None:
                from .judges import judge_version

                version = judge_version(spec)
            from .engine.recording import JudgeBinding

            binding = JudgeBinding(spec, version)
            self._judges[spec] = binding
        if live and binding.live is None and spec is not None:
            from .judges import JudgeConfigError, RateLimits, make_judge

            limits = RateLimits(self.judge_rpm, self.judge_tpm)
            try:
                binding.live = make_judge(spec, max_concurrency=self.concurrency,
                                          rate_limits=limits)
            except JudgeConfigError as exc:  # a missing key or package: the message says it all
                raise EvalCaseError(str(exc)) from None
        return binding

    def judge_bindings(self) -> list[JudgeBinding]:
        return list(self._judges.values())

    def binding_for(self, item: CaseItem) -> JudgeBinding:
        ctx = item.ctx
        needs_judge = self.live and bool(ctx.judged)
        if needs_judge and ctx.judge_spec is None:
            raise EvalCaseError(
                f"suite {ctx.suite.name!r} has judged stages but no judge; set "
                '--eval-judge, "judge" in the suite, or eval_judge in the pytest ini'
            )
        return self.judge_binding(ctx.judge_spec, needs_judge)

    # ---- recordings ---------------------------------------------------------------------------
    @property
    def recorder(self) -> LiveRecorder:
        if self._recorder is None:
            from .batch import LiveRecorder

            self._recorder = LiveRecorder(self)
        return self._recorder

    def recording_for(self, item: CaseItem) -> Recording:
        if not self.live and not self.replay_http:  # the default replay: decided first, per case
            return _replay()(item.ctx, item.case, self.judge_binding(item.ctx.judge_spec, False))
        if self.replay_http and self.mode in (REPLAY, LIVE_STALE):
            from .engine.http_replay import replay_http

            binding = self.judge_binding(item.ctx.judge_spec, False)
            return replay_http(item.ctx, item.case, binding, self.http_layer,
                               refresh=self.mode == LIVE_STALE, dry_run=self.dry_run)
        if not self.live:
            return _replay()(item.ctx, item.case, self.binding_for(item))
        from .core.errors import MissingRecording, StaleRecording
        from .engine.limits import NotRun

        try:
            if self.replay_http:  # --live-judges: judge what today's code answers, offline
                from .engine.http_replay import run_recorded

                doc, _, trace = run_recorded(item.ctx, item.case, self.http_layer)
                return self.recorder.recording_for(item, offline=(doc, trace))
            return self.recorder.recording_for(item)
        except NotRun as exc:  # the run stopped starting cases (-x, --maxfail, --eval-budget)
            item.not_run = str(exc)
            # Shown at the case (as a skip marker is), not at this line of the plugin.
            raise pytest.skip.Exception(str(exc), _use_item_location=True) from None
        except (StaleRecording, MissingRecording):
            raise
        except Exception as exc:  # the summary says this case was not recorded, and why
            item.live_error = f"{type(exc).__name__}: {exc}".splitlines()[0]
            raise


@functools.cache
def _replay() -> Any:
    """recording.replay, imported once (recording.py imports this module)."""
    from .engine.replay import replay

    return replay


def _ids_by_suite(per_file: dict[Path, tuple[str, list[str]]]) -> dict[str, list[str]]:
    suites: dict[str, list[str]] = {}
    for name, ids in per_file.values():
        suites.setdefault(name, []).extend(ids)
    return suites


def remove_orphans(paths: list[Path]) -> None:
    """Delete orphaned recordings, and the folder of a gone suite once it is empty."""
    for path in paths:
        path.unlink(missing_ok=True)
    for folder in sorted({path.parent for path in paths}):
        try:
            folder.rmdir()  # only when empty
        except OSError:
            pass


def prune_orphans(config: pytest.Config) -> int:
    """--live-prune: delete every recording whose case (or suite) no longer exists, list what was
    deleted, and run nothing else. Refuses while a case file cannot be read (its cassettes would
    look orphaned)."""
    from .store.cassette import find_orphans

    flags = [flag for flag, dest in (("--live", "eval_live"), ("--live-stale", "eval_live_stale"),
                                     ("--live-judges", "eval_live_judges"))
             if config.getoption(dest)]
    if flags:
        raise pytest.UsageError(
            f"--live-prune deletes orphaned recordings and runs nothing; it cannot be combined "
            f"with {', '.join(flags)}: run them one after the other"
        )
    rootdir = Path(config.rootpath)
    case_dirs = [(rootdir / p).resolve() for p in config.getini("eval_cases")]
    cassette_root = (rootdir / config.getini("eval_cassettes")).resolve()
    per_file, unreadable = scan_suites(case_dirs, cassette_root, {})
    if unreadable:
        names = ", ".join(_shown(p, rootdir) for p in unreadable)
        raise pytest.UsageError(
            f"--live-prune deleted nothing: cannot read the case file(s) {names}, whose "
            "recordings would look orphaned; fix or remove them, then prune again"
        )
    orphans = find_orphans(cassette_root, _ids_by_suite(per_file))
    remove_orphans(orphans)
    count = len(orphans)
    print(f"--live-prune: deleted {count} orphaned recording{'s' * (count != 1)}"
          + (":" if orphans else f" (none under {_shown(cassette_root, rootdir)})"))
    for path in orphans:
        print(f"  {_shown(path, rootdir)}")
    return int(pytest.ExitCode.OK)


def _shown(path: Path, rootdir: Path) -> str:
    """A case file as messages name it: relative to the rootdir, as its node id starts."""
    return path.relative_to(rootdir).as_posix() if path.is_relative_to(rootdir) else str(path)


def scan_suites(
    case_dirs: list[Path],
    cassette_root: Path,
    known: dict[Path, tuple[str, list[str]]],
    skip: set[Path] | frozenset[Path] = frozenset(),
) -> tuple[dict[Path, tuple[str, list[str]]], list[Path]]:
    """Case file -> (suite name, case ids) for every case file under the case folders (`known`
    ones are not read again, `skip` ones are left out), and the files that could not be read
    (then no cassette can safely be called an orphan)."""
    suites: dict[Path, tuple[str, list[str]]] = {}
    unreadable: list[Path] = []
    for folder in case_dirs:
        for path in sorted(folder.rglob("*.json")) if folder.is_dir() else []:
            if path.is_relative_to(cassette_root) or path in skip:
                continue
            if path in known:
                suites[path] = known[path]
                continue
            try:
                doc = json.loads(path.read_bytes())
                ids = [
                    c["id"]
                    for c in doc["cases"]
                    if isinstance(c, dict) and isinstance(c.get("id"), str)
                ]
                name = doc["name"]
                if not isinstance(name, str):
                    raise TypeError("the suite name is not a string")
                suites[path] = (name, ids)
            except Exception:  # anything a hostile file raises (RecursionError, a huge int...)
                unreadable.append(path)
    return suites, unreadable
