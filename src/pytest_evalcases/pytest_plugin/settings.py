"""`Settings`: everything the plugin's flags and ini keys (`options.py`) say, read and checked
once per run (a bad value is a usage error before anything runs); the checks of what a run's
settings need installed, and the plugins that slow every run down."""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ..core.hashing import VARIANT_CHARS
from ..core.modes import RunMode


def _judge_setting(value: str | None, where: str) -> str | None:
    """A judge named on the command line or in the ini, checked before anything runs."""
    if not value:
        return None
    # start-up: judges/ loads the case schema (pydantic); only a run that names a judge pays
    from ..judges import JudgeConfigError
    from ..judges.spec import canonical_judge

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
    sources = (
        (config.getoption(name), f"--{name.replace('_', '-')}"),
        (os.environ.get(env_name, "").strip(), env_name),
        (config.getini(name).strip(), f"ini option {name}"),
    )
    raw, where = next(((raw, where) for raw, where in sources if raw not in (None, "")), (None, ""))
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


def _retries_setting(value: int | None) -> int | None:
    if value is not None and value < 0:
        raise pytest.UsageError(f"--eval-system-retries must be 0 or more, not {value}")
    return value


def _mode(config: pytest.Config) -> str:
    live, stale, judges = (
        config.getoption(n) for n in ("eval_live", "eval_live_stale", "eval_live_judges")
    )
    if sum(map(bool, (live, stale, judges))) > 1:
        raise pytest.UsageError(
            "--live, --live-stale and --live-judges cannot be combined: pick one"
        )
    if config.getoption("eval_ingest_only"):
        if judges:
            raise pytest.UsageError(
                "--eval-ingest-only runs the system's ingestion; --live-judges runs no system: "
                "pick one"
            )
        if config.getoption("eval_replay_http"):
            raise pytest.UsageError(
                "--eval-ingest-only records ingestion against the real network; --replay-http "
                "serves recorded answers: pick one"
            )
        if config.getoption("numprocesses", None) not in (None, 0, "0"):
            raise pytest.UsageError(
                "--eval-ingest-only ingests user by user in one process: run it without -n"
            )
        # Alone, it records what is missing or stale (an interrupted run resumes).
        stale = stale or not live
    # --live-dry-run alone is a dry --live; with --live-stale or --live-judges, a dry one of those
    live = live or (config.getoption("eval_live_dry_run") and not (stale or judges))
    return (
        RunMode.LIVE
        if live
        else RunMode.LIVE_STALE
        if stale
        else RunMode.LIVE_JUDGES
        if judges
        else RunMode.REPLAY
    )


def _budget(value: float | None) -> float | None:
    """--eval-budget USD: a cost above 0, or None when not given."""
    if value is None:
        return None
    if not 0 < value < float("inf"):
        raise pytest.UsageError(f"--eval-budget must be an amount of USD above 0, not {value!r}")
    return float(value)


def _replay_http(config: pytest.Config, mode: RunMode) -> bool:
    ini = (config.getini("eval_replay") or "trace").strip()
    if ini not in ("trace", "http"):
        raise pytest.UsageError(f"ini option eval_replay: {ini!r} is not 'trace' or 'http'")
    flag = bool(config.getoption("eval_replay_http"))
    if flag and mode == RunMode.LIVE:
        live = "--live" if config.getoption("eval_live") else "--live-dry-run (a dry --live)"
        raise pytest.UsageError(
            f"{live} runs the system against the real network; --replay-http serves it the "
            "recorded answers: pick one (--replay-http --live-stale refreshes what replays clean)"
        )
    # The ini says how to replay; it never turns --live, --live-stale or --live-judges into
    # their offline variants (those take the --replay-http flag).
    return flag or (ini == "http" and mode == RunMode.REPLAY)


@dataclass(frozen=True, slots=True)
class Settings:
    """What this run's flags and ini keys ask for, read once at configure."""

    rootdir: Path
    mode: RunMode
    dry_run: bool  # --live-dry-run: run and judge, write nothing
    budget: float | None  # --eval-budget USD
    replay_http: bool
    is_worker: bool  # an xdist worker
    case_dirs: list[Path]
    cassette_root: Path
    default_system: str | None
    default_judge: str | None  # ini eval_judge, canonical
    judge_override: str | None  # --eval-judge, canonical
    concurrency: int
    timeout_override: float | None
    default_timeout: float
    ingest_timeout: float | None  # seconds ready(user, result) may stay false (None: 600)
    ingest_only: bool  # --eval-ingest-only: the selected users' ingestion, no case
    system_retries: int | None  # --eval-system-retries (None: the suite's, else 8)
    judge_repeats_override: int | None
    default_judge_repeats: int | None
    runs_override: int | None
    judge_rpm: float | None  # client-side judge limits, per judge endpoint
    judge_tpm: float | None
    report_dir: str | None
    otel: bool  # --eval-otel
    # --eval-ingestion VARIANT: the users' cases run with that recorded variant's ingestion
    # settings in place of each suite's "ingestion" (None: the suite's own)
    ingestion_variant: str | None = None
    # --eval-documents: a recorded variant of the suite's shared documents' ingestion
    documents_variant: str | None = None

    @property
    def live(self) -> bool:
        return self.mode != RunMode.REPLAY

    @property
    def records_in_batch(self) -> bool:
        """Whether the selected cases are recorded in one event loop before they report (with
        --replay-http, each case runs offline in its own item, one at a time)."""
        return self.live and not self.replay_http and not self.is_worker


def read_settings(config: pytest.Config) -> Settings:
    """The run's settings; pytest.UsageError naming the flag, variable or ini key at fault."""
    rootdir = Path(config.rootpath)
    mode = _mode(config)
    concurrency = int(config.getoption("eval_concurrency") or config.getini("eval_concurrency"))
    if concurrency < 1:
        raise pytest.UsageError("--eval-concurrency must be at least 1")
    return Settings(
        rootdir=rootdir,
        mode=mode,
        dry_run=bool(config.getoption("eval_live_dry_run")),
        budget=_budget(config.getoption("eval_budget")),
        replay_http=_replay_http(config, mode),
        is_worker=hasattr(config, "workerinput"),
        case_dirs=[(rootdir / p).resolve() for p in config.getini("eval_cases")],
        cassette_root=(rootdir / config.getini("eval_cassettes")).resolve(),
        default_system=config.getini("eval_system") or None,
        default_judge=_judge_setting(config.getini("eval_judge"), "ini option eval_judge"),
        judge_override=_judge_setting(config.getoption("eval_judge"), "--eval-judge"),
        concurrency=concurrency,
        timeout_override=_positive(config.getoption("eval_timeout"), "--eval-timeout"),
        default_timeout=_positive(config.getini("eval_timeout"), "ini eval_timeout"),
        ingest_timeout=_positive(config.getoption("eval_ingest_timeout"), "--eval-ingest-timeout"),
        ingest_only=bool(config.getoption("eval_ingest_only")),
        system_retries=_retries_setting(config.getoption("eval_system_retries")),
        judge_repeats_override=_count_setting(
            config.getoption("eval_judge_repeats"), "--eval-judge-repeats"
        ),
        default_judge_repeats=_count_setting(
            config.getini("eval_judge_repeats"), "ini option eval_judge_repeats"
        ),
        runs_override=_count_setting(config.getoption("eval_runs"), "--eval-runs"),
        judge_rpm=_rate_setting(config, "eval_rpm", "EVALCASES_RPM"),
        judge_tpm=_rate_setting(config, "eval_tpm", "EVALCASES_TPM"),
        report_dir=config.getoption("eval_report"),
        otel=bool(config.getoption("eval_otel")),
        ingestion_variant=_variant_setting(config.getoption("eval_ingestion")),
        documents_variant=_variant_setting(config.getoption("eval_documents"), "--eval-documents"),
    )


def _variant_setting(value: str | None, option: str = "--eval-ingestion") -> str | None:
    """--eval-ingestion's (--eval-documents') variant name, as `ingestions` lists it
    (VARIANT_CHARS hex digits)."""
    if value is None:
        return None
    name = value.strip().lower()
    if len(name) != VARIANT_CHARS or any(ch not in "0123456789abcdef" for ch in name):
        raise pytest.UsageError(
            f"{option} {value!r}: name an ingestion variant by its {VARIANT_CHARS} hex "
            "characters, as `python -m pytest_evalcases ingestions` lists them"
        )
    return name


def check_otel_installed() -> None:
    """--eval-otel needs the otel extra: say so before a paid live run starts."""
    try:
        found = importlib.util.find_spec("opentelemetry.exporter.otlp.proto.http") is not None
        found = found and importlib.util.find_spec("opentelemetry.sdk") is not None
    except ImportError:  # a parent package is missing
        found = False
    if not found:
        raise pytest.UsageError(
            "--eval-otel needs opentelemetry-sdk and the OTLP/HTTP exporter: "
            'pip install "pytest-evalcases[otel]"'
        )


def check_vcrpy_installed(settings: Settings) -> None:
    """--replay-http and live runs serve or record HTTP with vcrpy (the live extra): say so once,
    before any case runs, rather than in every case."""
    if not (settings.replay_http or settings.live):
        return
    try:
        found = importlib.util.find_spec("vcr") is not None
    except ImportError:
        found = False
    if not found:
        flag = "--replay-http" if settings.replay_http else "a live run"
        raise pytest.UsageError(
            f"{flag} needs vcrpy, which records and serves each case's HTTP: "
            'pip install "pytest-evalcases[live]"'
        )


# Plugins of packages the live extra pulls in, which pytest loads in every run unless told not
# to: deepeval's adds ~2 s to a run and creates .deepeval/ in the working directory.
NOISY_PLUGINS = ("deepeval", "langsmith_plugin")


def noisy_plugins_line(config: pytest.Config, settings: Settings) -> str | None:
    """One header line when a replay runs with deepeval's or langsmith's pytest plugin loaded,
    saying how to switch them off (a live run may want them; it is not told)."""
    if settings.live or not any(folder.is_dir() for folder in settings.case_dirs):
        return None
    loaded = [name for name in NOISY_PLUGINS if config.pluginmanager.has_plugin(name)]
    if not loaded:
        return None
    flags = " ".join(f"-p no:{name}" for name in NOISY_PLUGINS)
    return (
        f"evalcases: pytest plugin(s) {', '.join(loaded)} loaded; a replay needs neither (they "
        f"slow every run): add `{flags}` to addopts"
    )


def dont_rewrite_deepeval() -> None:
    """pytest marks every package with a pytest11 entry point for assertion rewriting, even when
    `-p no:deepeval` blocks the plugin. Rewriting deepeval on its lazy import costs ~5 s a live
    run (no bytecode cache when PYTHONDONTWRITEBYTECODE is set) and checks nothing of ours.
    Private pytest attributes, hence the guards: at worst deepeval is rewritten as before."""
    for hook in sys.meta_path:
        marked = getattr(hook, "_must_rewrite", None)
        if not isinstance(marked, set):
            continue
        marked.difference_update({name for name in marked if name.split(".")[0] == "deepeval"})
        cache = getattr(hook, "_marked_for_rewrite_cache", None)
        if isinstance(cache, dict):
            cache.clear()
