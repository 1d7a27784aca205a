"""Per-run state of the plugin: its settings, the registries every item shares (suite names,
case files, selected items, input hashes, code fingerprints, markers, judges) and the run's
services (the HTTP layer, the OpenTelemetry export), each made on first use.

State only: where a case's recording comes from is `sources/`; a live batch is `live_batch.py`.
This module loads in every pytest run where the plugin is installed, so what it needs of the
rest of the package is imported on first use, each such import marked `# start-up:`.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..core.errors import EvalCaseError
from ..core.stage_declarations import end_declaration_session
from ..engine.recording import JudgeBinding
from .settings import Settings

if TYPE_CHECKING:
    from ..domain.code import CodeFingerprints
    from ..domain.context import CalibrationContext, SuiteContext
    from ..http.router import HttpLayer

SESSION_KEY = pytest.StashKey["EvalSession"]()


def get_session(config: pytest.Config) -> EvalSession:
    return config.stash[SESSION_KEY]


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EvalSession:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.systems: dict[str, Any] = {}
        # suite "stage_modules" imported this session: module name -> module, or its error
        self.stage_modules: dict[str, Any] = {}
        # The user's stages declared until now may be replaced by the next session's (pytest
        # run again in this process imports its conftest files afresh).
        config.add_cleanup(end_declaration_session)
        # suite name -> the case files declaring it (node ids); two or more is a conflict.
        self._suite_files: dict[str, list[str]] = {}
        self.seen_case_files: set[Path] = set()  # every case file this run collected
        # case file -> (suite name, case ids and its users' `users/<id>` recording stems),
        # filled at collection (and for the case files this run does not collect, by
        # `claim_uncollected_suites`): orphan detection then re-reads only the files not known
        # here (on the xdist controller: all of them).
        self.collected_suites: dict[Path, tuple[str, list[str]]] = {}
        # Node ids of the eval items this run selected (after -k, -m, --lf, --deselect): from
        # the collection, or on the xdist controller from the workers' collections. A --live
        # run deletes the orphans of each suite whose every case is in it.
        self.selected: set[str] = set()
        self._input_hashes: dict[str, str] = {}
        self._code_fingerprints: CodeFingerprints | None = None
        self._markers: dict[str, pytest.MarkDecorator] = {}
        self._judges: dict[str | None, JudgeBinding] = {}
        self._http_layer: HttpLayer | None = None
        self._guard: Any = None
        # Where each case's recording comes from (sources/), chosen when the run starts.
        self.source: Any = None
        self.removed_temp_files = 0  # left by killed live runs, removed when this one starts
        self.stopped: str | None = None  # why a live run stopped starting cases, if it did
        # User code raised KeyboardInterrupt while a suite loaded: the run stops, exit code 2
        self.interrupted: str | None = None
        # What the marker of a live run that never ended says (store/run_marker.py), if any
        self.previous_live_run: str | None = None
        self.live_marker: Path | None = None  # this live run's marker, removed at its end
        self.baseline: dict[str, Any] | None = None
        self.run_report: Any = None
        self.locked_manifest: dict[str, Any] | None = None  # --eval-manifest, read at configure
        # --eval-input-manifest (manifest/authored.py's InputManifest), read at configure by
        # every process: the split deselects, the suites hand its values to the system
        self.input_manifest: Any = None
        # each suite's case ids and categories, read with project_config (the split's check)
        self.project_case_names: dict[str, tuple[list[str], list[str | None]]] = {}
        # --eval-otel: spans of the cases this process records (live runs only)
        self.otel_requested = settings.otel
        self.collection_ns: tuple[int, int] | None = None  # when this process collected
        self.otel: Any = None  # telemetry.export.OtelExport, once the first case records
        # how the export went: this process's counts, and (xdist controller) each worker's
        self.otel_deliveries: list[dict[str, Any]] = []
        # --replay-http: what the network guard refused from the system's threads while no case
        # ran (no case to fail then: the run fails): this process's and each xdist worker's
        self.guard_refusals: list[str] = []
        self._run_id: str | None = None
        # the run manifest's `config` (project.project_config), once a report or check asks
        self.project_config: dict[str, Any] | None = None
        self.started = utc_now()

    @property
    def records_in_one_batch(self) -> bool:
        """Whether this process records the selected cases in one batch (not an xdist
        controller, whose workers record each case in its own item)."""
        return self.settings.records_in_batch and not self.config.pluginmanager.has_plugin(
            "dsession"
        )

    @property
    def run_id(self) -> str:
        """This run's id: $EVALCASES_RUN_ID (CI shards of one run share it), else a new UUID;
        on an xdist worker, the controller's. Made on first use: a plain replay never asks."""
        if self._run_id is None:
            given = getattr(self.config, "workerinput", {}).get("evalcases_run_id")
            given = given or os.environ.get("EVALCASES_RUN_ID", "").strip()
            self._run_id = given or str(uuid.uuid4())
        return self._run_id

    @property
    def otel_export(self) -> Any:
        """The run's OpenTelemetry export (telemetry.export.OtelExport), made when the first
        case records; None unless this is a live run with --eval-otel."""
        if self.otel is None and self.otel_requested and self.settings.live:
            # start-up: the export module loads only in a live run that asks for spans
            from ..telemetry.export import OtelExport

            self.otel = OtelExport(self.run_id, tags=self.otel_tags(), process=self._process())
            if self.collection_ns is not None:  # it ended before the export was made
                # start-up: as the export module
                from ..telemetry.phases import note_phase

                note_phase("collection", *self.collection_ns)
        return self.otel

    def otel_tags(self) -> dict[str, str]:
        """The authored input manifest's tags of every span (language, prompt versions)."""
        if self.input_manifest is None:
            return {}
        # start-up: as the export module
        from ..telemetry.phases import manifest_tags

        return manifest_tags(self.input_manifest.values(), self.input_manifest.hash)

    def _process(self) -> str:
        worker = getattr(self.config, "workerinput", {}).get("workerid")
        if worker:
            return str(worker)
        return "controller" if self.config.pluginmanager.has_plugin("dsession") else "main"

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

    @property
    def http_layer(self) -> HttpLayer:
        """vcrpy's patches (and, for --replay-http, the network guard), installed on first use
        and removed at the end of the run."""
        if self._http_layer is None:
            try:
                # start-up: the HTTP layer loads only in a run that records or replays HTTP
                from ..http.guard import NetworkGuard
                from ..http.router import HttpLayer
            except ImportError as exc:
                raise EvalCaseError(
                    f"recording or replaying HTTP needs vcrpy ({exc}); install "
                    '"pytest-evalcases[live]"'
                ) from None
            layer = HttpLayer()
            layer.start()
            if self.settings.replay_http:
                self._guard = NetworkGuard(layer)
                self._guard.install()
            self._http_layer = layer
        return self._http_layer

    def system_code(
        self, spec: str, allow_hosts: list[str], allow_subprocess: bool
    ) -> AbstractContextManager[Any]:
        """Around the import of a system and its fingerprint(): under --replay-http the threads
        they start are the system's, whose connections the network guard refuses."""
        if not self.settings.replay_http:
            return nullcontext()
        # start-up: the network guard loads only in a run that replays HTTP
        from ..http.guard import system_code

        return system_code(f"the import of the system {spec!r}", allow_hosts, allow_subprocess)

    def keep_guard_refusals(self) -> None:
        """Take what the guard refused outside any case so far (an xdist worker hands it to the
        controller with its output)."""
        if self._guard is None:
            return
        for refusal in self._guard.refused_outside_cases:
            if refusal not in self.guard_refusals:
                self.guard_refusals.append(refusal)
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None and self.guard_refusals:
            workeroutput["evalcases_guard"] = list(self.guard_refusals)

    def close_http(self) -> None:
        if self._guard is not None:
            self._guard.uninstall()
            self._guard = None
        if self._http_layer is not None:
            self._http_layer.stop()
            self._http_layer = None

    # ---- collection ---------------------------------------------------------------------------
    def is_case_file(self, path: Path) -> bool:
        settings = self.settings
        return (
            path.suffix == ".json"
            and any(path.is_relative_to(d) for d in settings.case_dirs)
            and not (path.is_relative_to(settings.cassette_root))
        )

    def claim_suite_name(self, name: str, file: str) -> None:
        """Note that `file` declares the suite `name` (see `suite_conflict`)."""
        files = self._suite_files.setdefault(name, [])
        if file not in files:
            files.append(file)

    def suite_conflict(self, name: str, file: str) -> list[str]:
        """The other case files declaring the suite `name` (none: no conflict). Asked when a
        case runs, after collection: by then every file of the case folders has been seen, the
        ones this run does not collect included (housekeeping.claim_uncollected_suites)."""
        files = self._suite_files.get(name)
        if files is None or len(files) < 2:
            return []
        return [other for other in files if other != file]

    def input_hash(self, name: str, hasher: Any) -> str:
        """Each input file is hashed once per run, however many suites name it."""
        if name not in self._input_hashes:
            self._input_hashes[name] = hasher(self.settings.rootdir / name)
        return self._input_hashes[name]

    @property
    def code_fingerprints(self) -> CodeFingerprints:
        """Hashes of the systems' source files, each file parsed once per run."""
        if self._code_fingerprints is None:
            # start-up: code fingerprints load with the first suite, not with the plugin
            from ..domain.code import CodeFingerprints

            self._code_fingerprints = CodeFingerprints(self.settings.rootdir)
        return self._code_fingerprints

    def marker(self, name: str) -> pytest.MarkDecorator:
        """A category or mark as a registered marker, so --strict-markers accepts it."""
        if name not in self._markers:
            self.config.addinivalue_line("markers", f"{name}: eval case category or mark")
            self._markers[name] = getattr(pytest.mark, name)
        return self._markers[name]

    def note_selected(self, nodeids: Iterable[str]) -> None:
        self.selected.update(nodeids)

    # ---- judges -------------------------------------------------------------------------------
    def judge_binding(self, spec: str | None, live: bool) -> JudgeBinding:
        """Judge id and version for keys; in live modes also the judge object (built once)."""
        binding = self._judges.get(spec)
        if binding is None:
            version = None
            if spec is not None:
                # start-up: judges/ loads the case schema (pydantic), with the first suite
                from ..judges import judge_version

                version = judge_version(spec)
            binding = JudgeBinding(spec, version)
            self._judges[spec] = binding
        if live and binding.live is None and spec is not None:
            # start-up: as above; a live judge is built once a live case needs it
            from ..judges import JudgeConfigError, RateLimits, make_judge

            settings = self.settings
            limits = RateLimits(settings.judge_rpm, settings.judge_tpm)
            try:
                binding.live = make_judge(
                    spec, max_concurrency=settings.concurrency, rate_limits=limits
                )
            except JudgeConfigError as exc:  # a missing key or package: the message says it all
                raise EvalCaseError(str(exc)) from None
        return binding

    def judge_bindings(self) -> list[JudgeBinding]:
        return list(self._judges.values())

    def calibration_binding(self, ctx: CalibrationContext, live: bool) -> JudgeBinding:
        """The judge a calibration suite's cases are judged with (live: the judge object)."""
        if live and ctx.judge_spec is None:
            raise EvalCaseError(
                f"calibration suite {ctx.suite.name!r} has no judge; set --eval-judge, "
                '"judge" in the suite, or eval_judge in the pytest ini'
            )
        return self.judge_binding(ctx.judge_spec, live)

    def binding_for(self, ctx: SuiteContext) -> JudgeBinding:
        """The judge a suite's cases are recorded with (a live judge when they need one)."""
        needs_judge = self.settings.live and bool(ctx.judged)
        if needs_judge and ctx.judge_spec is None:
            raise EvalCaseError(
                f"suite {ctx.suite.name!r} has judged stages but no judge; set "
                '--eval-judge, "judge" in the suite, or eval_judge in the pytest ini'
            )
        return self.judge_binding(ctx.judge_spec, needs_judge)
