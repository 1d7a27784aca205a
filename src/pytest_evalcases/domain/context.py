"""A suite's context: everything the cases of one case file share, computed once per file (the
system, its key fields and labels, the stages, the judge and its options, limits, users)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import CaseFileError
from ..core.schema import Case
from ..core.suite_schema import Suite
from .calibration_schema import CalibrationCase, CalibrationSuite
from .retries import NO_RETRIES, RetryPolicy
from .stages import Stage
from .system import System
from .totals import TotalRule
from .verdicts import judge_options

if TYPE_CHECKING:
    from .users import SuiteUser


@dataclass(slots=True)
class SuiteContext:
    """Everything the items of one case file share, computed once per file."""

    path: Path
    suite: Suite
    system: System
    cassette_root: Path
    cassette_dir: str  # this suite's folder of cassettes
    rootdir: Path  # messages name files relative to it, the same on every machine and shard
    key_fields: dict[str, str]
    input_fields: dict[str, str]  # the suite's `inputs` among key_fields (a case may replace them)
    key_labels: dict[str, str]  # readable labels of key_fields, for stale messages and cassettes
    gating: list[str]
    report_only: list[str]
    judged: list[Stage]
    judge_spec: str | None
    judge_from: str | None  # where judge_spec came from: --eval-judge, ini eval_judge or suite
    judge_options: dict[str, Any]
    timeout: float  # seconds a system run may take when it runs (live, --replay-http)
    # The suite's declared users (None: it declares none), each built or the error its cases
    # get; and the user of the cases sharing this context (a per-user variant), if any.
    users: dict[str, SuiteUser | CaseFileError] | None = None
    user: SuiteUser | None = None
    # The suite's shared documents (`"documents"`), ingested once for all its cases, and their
    # preparation, the phase before (None: it declares none).
    documents: SuiteUser | None = None
    preparation: SuiteUser | None = None
    # Verdicts per judged stage asked for (None: as recorded on replay, 1 when recording).
    judge_repeats: int | None = None
    # Independent system runs per case asked for (None: as recorded on replay, 1 when recording).
    runs: int | None = None
    totals: tuple[TotalRule, ...] = ()  # the suite's named totals, their id files read
    # The authored input manifest's values (`case.run_config`); None: the run has none.
    run_config: dict[str, Any] | None = None
    # How the system's calls are retried on a transient error (live runs; suite_contexts sets
    # the suite's policy, the defaults as Zep's: domain/retries.py).
    retries: RetryPolicy = NO_RETRIES


def case_where(ctx: SuiteContext, case: Case) -> str:
    return f"{ctx.suite.name}::{case.id}"


@dataclass(slots=True)
class CalibrationContext:
    """What the items of one calibration suite share."""

    path: Path
    suite: CalibrationSuite
    cassette_dir: str
    rootdir: Path
    judge_spec: str | None
    judge_from: str | None


@dataclass(slots=True)
class CalibrationTarget:
    """One case with what judging and scoring it need: the case as the judge sees it, the stage
    options it is judged with, and the pass rule (a one-stage Suite) its repeats are held to."""

    case: CalibrationCase
    as_case: Case
    options: dict[str, Any]
    rule: Suite

    @classmethod
    def of(
        cls,
        suite: CalibrationSuite,
        case: CalibrationCase,
        rules: dict[Any, tuple[Suite, dict[str, Any]]] | None = None,
    ) -> CalibrationTarget:
        """`rules`, kept by the caller for one suite's cases, holds each (stage, options) rule
        made so far with its judge options: most cases of a suite share one (a Suite costs
        ~13 us to validate, a case ~6 us)."""
        chosen = suite.options_for(case)
        if rules is None:
            rule, options = _rule(suite, case.stage, chosen)
        else:
            known = (case.stage, *sorted(chosen.items()))
            found = rules.get(known)
            if found is None:
                found = rules[known] = _rule(suite, case.stage, chosen)
            rule, options = found
        as_case = Case(
            id=case.id,
            input=case.input,
            reference=case.reference,
            unanswerable=case.unanswerable,
            skip=case.skip,
            xfail=case.xfail,
        )
        return cls(case, as_case, options, rule)


def _rule(
    suite: CalibrationSuite, stage: str, chosen: dict[str, Any]
) -> tuple[Suite, dict[str, Any]]:
    """The one-stage Suite a case's repeats are held to, and the judge options it gives."""
    rule = Suite(
        name=suite.name,
        stages=[stage],
        threshold=chosen["threshold"],
        strict=chosen.get("strict", False),
        accept_partial=chosen.get("accept_partial", False),
        correctness_criteria=chosen.get("correctness_criteria"),
        judged_stages={
            name: options for name, options in suite.judged_stages.items() if name == stage
        },
        cases=[],
    )
    return rule, judge_options(rule)
