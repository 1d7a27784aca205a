"""The plugin's options: the command-line flags and ini keys it adds (`settings.py` reads them
into `Settings`)."""

from __future__ import annotations

import pytest


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalcases", "LLM eval cases (pytest-evalcases)")
    group.addoption(
        "--live",
        action="store_true",
        dest="eval_live",
        help="run the real system and judges for every selected case and re-record (only "
        "the cassettes that changed are written)",
    )
    group.addoption(
        "--live-stale",
        action="store_true",
        dest="eval_live_stale",
        help="record only missing or stale recordings; replay the rest",
    )
    group.addoption(
        "--live-judges",
        action="store_true",
        dest="eval_live_judges",
        help="judge what the recorded traces lack (pending, missing or stale verdicts) "
        "without running the system again",
    )
    group.addoption(
        "--live-dry-run",
        action="store_true",
        dest="eval_live_dry_run",
        help="run the system and judges as --live would (or --live-stale, --live-judges with "
        "them), show the recording changes, and write no recording",
    )
    group.addoption(
        "--eval-budget",
        dest="eval_budget",
        type=float,
        default=None,
        metavar="USD",
        help="in live modes, start no further case once the recorded cost of the run (system + "
        "judge) reaches USD; the cases not started are reported as not run",
    )
    group.addoption(
        "--live-prune",
        action="store_true",
        dest="eval_live_prune",
        help="delete every orphaned recording (its case or suite is gone), list them, and run "
        "nothing else",
    )
    group.addoption(
        "--replay-http",
        action="store_true",
        dest="eval_replay_http",
        help="run the real system offline: vcrpy serves its HTTP from each case's recording",
    )
    group.addoption(
        "--eval-judge",
        dest="eval_judge",
        default=None,
        help="judge for judged stages: openai:<model>, gemini:<model>, "
        "ollama:<model>, litellm:<model> or lexical",
    )
    group.addoption(
        "--eval-concurrency",
        dest="eval_concurrency",
        type=int,
        default=None,
        help="system runs in flight, and judge requests in flight, when recording (default 8)",
    )
    group.addoption(
        "--eval-timeout",
        dest="eval_timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="longest system run of one case when recording or replaying HTTP (default 300); "
        "past it the case is an error and keeps its old recording; each call of setup(suite), "
        "setup_user, ready and user_ready gets the same limit",
    )
    group.addoption(
        "--eval-system-retries",
        dest="eval_system_retries",
        type=int,
        default=None,
        metavar="N",
        help="when recording, retry a system call (run, setup_user, ready, user_ready) that "
        "failed with a transient error (connection reset, timeout, HTTP 429 or 5xx) up to N "
        "times with exponential backoff, within its timeout (default 8; 0: never)",
    )
    group.addoption(
        "--eval-ingest-timeout",
        dest="eval_ingest_timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="longest wait for one user's ingestion: user_ready, setup_user and the polling of "
        "ready(user, result) together (default 600); past it that user's cases are errors",
    )
    group.addoption(
        "--eval-ingest-only",
        dest="eval_ingest_only",
        action="store_true",
        default=False,
        help="run and record only the ingestion (setup_user) of the selected cases' users, "
        "user by user; a user whose recording is current is skipped (an interrupted run "
        "resumes), with --live each is ingested again unless the system's user_ready says "
        "its state is still there; no case runs",
    )
    group.addoption(
        "--eval-ingestion",
        dest="eval_ingestion",
        default=None,
        metavar="VARIANT",
        help="run the users' cases on a recorded ingestion variant: its ingestion settings "
        'in place of the suite\'s "ingestion" (python -m pytest_evalcases ingestions lists '
        "each user's variants)",
    )
    group.addoption(
        "--eval-documents",
        dest="eval_documents",
        default=None,
        metavar="VARIANT",
        help="run the cases on a recorded ingestion variant of the suite's shared documents: "
        'its settings in place of "documents"\' "ingestion" (Zep\'s --doc-run; python -m '
        "pytest_evalcases ingestions lists the documents' variants)",
    )
    group.addoption(
        "--eval-judge-repeats",
        dest="eval_judge_repeats",
        type=int,
        default=None,
        metavar="N",
        help="record N verdicts per judged stage (the score is their mean; repeats that "
        "disagree make the verdict unstable, kept out of the baseline gate)",
    )
    group.addoption(
        "--eval-runs",
        dest="eval_runs",
        type=int,
        default=None,
        metavar="K",
        help="record K independent system runs per case (each judged); a case passes when all "
        "K pass (pass^k); replay needs no flag",
    )
    group.addoption(
        "--eval-rpm",
        dest="eval_rpm",
        type=float,
        default=None,
        metavar="N",
        help="judge requests per minute at most, per judge endpoint (env EVALCASES_RPM)",
    )
    group.addoption(
        "--eval-tpm",
        dest="eval_tpm",
        type=float,
        default=None,
        metavar="N",
        help="judge tokens per minute at most, per judge endpoint (env EVALCASES_TPM)",
    )
    group.addoption(
        "--eval-summary",
        dest="eval_summary",
        default=None,
        choices=("failed", "all", "none"),
        help="rows of the per-case summary table: cases that did not pass (default), all "
        "(as with -v) or none (as with -q -q); the per-stage tables are always shown",
    )
    group.addoption(
        "--eval-report",
        dest="eval_report",
        default=None,
        metavar="DIR",
        help="write results.json, report.md, dashboard.html and manifest.json to DIR",
    )
    group.addoption(
        "--eval-report-cases",
        dest="eval_report_cases",
        choices=("failing", "all"),
        default="failing",
        help="cases report.md lists: the failing ones (default), or all of them, each with its "
        "gating stages' scores and first failure",
    )
    group.addoption(
        "--eval-otel",
        action="store_true",
        dest="eval_otel",
        help="in live runs, send one OpenTelemetry span per case (children: the system run and "
        "each judge request) and the run's phases over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT "
        "(default "
        "http://localhost:4318); needs the otel extra",
    )
    group.addoption(
        "--eval-manifest",
        dest="eval_manifest",
        default=None,
        metavar="FILE",
        help="refuse to run, listing each difference, unless this run's configuration (suites, "
        "inputs, fingerprints, judges, versions) equals the locked manifest.json",
    )
    group.addoption(
        "--eval-input-manifest",
        dest="eval_input_manifest",
        default=None,
        metavar="FILE",
        help="the authored input manifest a team writes (seed, split, language, prompt "
        "versions, model names): refuse to run when this run differs, hand its values to the "
        "system as case.run_config, run only its split's cases, and record it",
    )
    group.addoption(
        "--eval-baseline",
        dest="eval_baseline",
        default=None,
        metavar="FILE",
        help="compare with an earlier results.json; fail on regressions",
    )
    group.addoption(
        "--eval-tolerance",
        dest="eval_tolerance",
        type=float,
        default=0.0,
        help="largest drop of a stage's mean score the baseline gate accepts",
    )
    parser.addini(
        "eval_cases",
        type="args",
        default=["cases"],
        help="folders whose *.json files are eval suites",
    )
    parser.addini("eval_cassettes", default="cassettes", help="folder of the recordings")
    parser.addini("eval_system", default="", help="default system, 'module:attribute'")
    parser.addini("eval_judge", default="", help="default judge for judged stages")
    parser.addini("eval_concurrency", default="8", help="default --eval-concurrency")
    parser.addini("eval_timeout", default="300", help="default --eval-timeout, in seconds")
    parser.addini(
        "eval_replay", default="trace", help="'http' makes every replay a --replay-http replay"
    )
    parser.addini("eval_summary", default="", help="default --eval-summary (failed, all, none)")
    parser.addini("eval_judge_repeats", default="", help="default --eval-judge-repeats")
    parser.addini("eval_input_manifest", default="", help="default --eval-input-manifest")
    parser.addini("eval_rpm", default="", help="default --eval-rpm")
    parser.addini("eval_tpm", default="", help="default --eval-tpm")
