"""The judged stages a suite declares for itself: `"judged_stages"` (its own criteria, graded
by GEval on the suite's LLM judge) and `"metrics"` (its own deepeval metric classes).

Unlike the stages of the registry they belong to one suite (two suites may each declare
`polite`, with different criteria), so every place that turns a suite's stage name into a Stage
asks `stage_of(suite, name)`: the suite's own first, then the registry. They are built once per
suite (`declared_stages`); nothing here imports a metric's class or deepeval, so a replay scores
and keys their verdicts where neither is installed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core.errors import CaseFileError
from ...core.hashing import content_hash, fingerprint_label, name_label
from ...core.repeats import later_repeats, repeats_of
from ...core.schema import Case
from ...core.suite_schema import JudgedStageOptions, Suite
from .base import Stage, StageResult
from .judged import mean_of_repeats, score_verdict, unusable_verdict
from .registry import STAGES

# A metric's verdict records the threshold the metric carried (`details.threshold`), so a
# replay gates it without importing the class.
METRIC_THRESHOLD = "threshold"
# What a metric is given (a deepeval LLMTestCase of the input, answer, reference, context and
# tool calls); a case without a reference or a context still gets its verdict, so a metric
# "reads" the input and answer for the skip rules, and its verdict is keyed by the reference.
METRIC_READS = ("input", "answer")
METRIC_KEYED = ("reference",)


@dataclass(frozen=True, slots=True)
class DeclaredStage(Stage):
    """A judged stage of one suite: what the judge is given to grade it (`spec`, JSON, handed
    to the judge with the suite's judge options) and the verdict key fields it adds, with the
    label of each (the words a stale message shows)."""

    spec: Mapping[str, Any] = field(default_factory=dict)
    key_fields: tuple[tuple[str, str], ...] = ()
    key_labels: tuple[tuple[str, str], ...] = ()
    # case fields that key its verdicts besides those in `reads`
    keyed_case_fields: tuple[str, ...] = ()


# (key fields, their labels) of a metric's source: its module and what it imports of the
# project, as the system's code is keyed (domain/code.py); given by collection.
MetricCodeKey = Callable[[str], tuple[dict[str, str], dict[str, str]]]


def declared_stages(
    suite: Suite, metric_code: MetricCodeKey | None = None
) -> dict[str, DeclaredStage]:
    """The suite's own stages by name, built on first use and kept on the suite. Collection
    builds them with `metric_code` (so a metric's verdict is keyed by its source); built
    without it (a suite made in code), a metric is keyed by its class name alone. Raises
    CaseFileError for a name taken twice, naming both places."""
    known = suite._declared_stages
    if known is not None and (metric_code is None or not suite.metrics):
        return known
    _check_names(suite)
    stages: dict[str, DeclaredStage] = {}
    for name, options in suite.judged_stages.items():
        stages[name] = _criteria_stage(name, options)
    for name, spec in suite.metrics.items():
        code = metric_code(spec) if metric_code is not None else ({}, {})
        stages[name] = _metric_stage(name, spec, *code)
    suite._declared_stages = stages
    return stages


def stage_of(suite: Suite, name: str) -> Stage:
    """The stage a suite's `name` runs: one the suite declares, else the registry's (KeyError
    for neither: collection has refused such a suite)."""
    if suite.judged_stages or suite.metrics:
        own = declared_stages(suite).get(name)
        if own is not None:
            return own
    return STAGES[name]


def known_stage(suite: Suite, name: str) -> bool:
    return name in STAGES or name in suite.judged_stages or name in suite.metrics


def declared_specs(suite: Suite) -> dict[str, dict[str, Any]]:
    """What the judge needs of each declared stage (the suite's judge options carry it)."""
    if not (suite.judged_stages or suite.metrics):
        return {}
    return {name: dict(stage.spec) for name, stage in declared_stages(suite).items()}


def _check_names(suite: Suite) -> None:
    for field_name, names in (("judged_stages", suite.judged_stages), ("metrics", suite.metrics)):
        for name in names:
            if name in STAGES:
                raise CaseFileError(
                    f'"{field_name}" declares {name!r}, already the name of a stage of the '
                    "plugin's (built in, or registered by a stage module); give yours another "
                    "name"
                )
    both = sorted(set(suite.judged_stages) & set(suite.metrics))
    if both:
        raise CaseFileError(
            f'{", ".join(map(repr, both))} declared both in "judged_stages" and in "metrics"; '
            "a stage has one definition: rename one of them"
        )


def _criteria_stage(name: str, options: JudgedStageOptions) -> DeclaredStage:
    spec: dict[str, Any] = {
        "kind": "criteria",
        "criteria": options.criteria,
        "reads": list(options.reads),
    }
    if options.steps:
        spec["steps"] = list(options.steps)
    if options.rubric:
        spec["rubric"] = [band.model_dump(mode="json") for band in options.rubric]
    # Each part its own key field: a stale verdict names what changed, in the words that did.
    parts = {field: spec[field] for field in ("criteria", "steps", "rubric") if field in spec}
    parts["reads"] = sorted(options.reads)
    return DeclaredStage(
        name,
        _score_declared(name),
        judged=True,
        reads=tuple(options.reads),
        spec=spec,
        key_fields=tuple((field, content_hash(value)) for field, value in sorted(parts.items())),
        key_labels=tuple(
            (field, label)
            for field, value in sorted(parts.items())
            if (label := fingerprint_label(value)) is not None
        ),
    )


def _metric_stage(
    name: str, spec: str, code_fields: dict[str, str], code_labels: dict[str, str]
) -> DeclaredStage:
    labels = {"metric": name_label(spec), **code_labels}
    return DeclaredStage(
        name,
        _score_metric(name),
        judged=True,
        reads=METRIC_READS,
        keyed_case_fields=METRIC_KEYED,
        spec={"kind": "metric", "class": spec},
        key_fields=(("metric", content_hash(spec)), *sorted(code_fields.items())),
        key_labels=tuple((k, v) for k, v in sorted(labels.items()) if v is not None),
    )


def _score_declared(name: str) -> Callable[..., StageResult]:
    """A criteria stage's verdict against its threshold, like every thresholded judged stage."""

    def score(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
        unusable = unusable_verdict(stage_of(suite, name), case, trace, verdict)
        if unusable is not None:
            return unusable
        if later_repeats(verdict):
            repeats = repeats_of(verdict)
            return mean_of_repeats([score_verdict(name, suite, v) for v in repeats], suite)
        return score_verdict(name, suite, verdict)

    return score


def _score_metric(name: str) -> Callable[..., StageResult]:
    """A metric's verdict against `thresholds`, else the threshold the metric carried when it
    was recorded, else the suite's."""

    def one(suite: Suite, verdict: dict[str, Any]) -> StageResult:
        if name in suite.thresholds:
            return score_verdict(name, suite, verdict)
        details = verdict.get("details")
        details = details if isinstance(details, dict) else {}
        recorded = details.get(METRIC_THRESHOLD)
        threshold = float(recorded) if isinstance(recorded, int | float) else None
        result = score_verdict(name, suite, verdict, threshold)
        success = details.get("success")
        if threshold is None or not isinstance(success, bool) or success == result.passed:
            return result
        # The metric's own rule disagrees with `score >= threshold`: one where lower is better
        # (deepeval's bias and toxicity metrics), or an is_successful() of its own. It decides.
        assert result.score is not None
        rule = "passes" if success else "fails"
        text = f"{result.score:.2f} {rule} the metric's own rule at {threshold:.2f}" + (
            f"; {verdict['reason']}" if verdict.get("reason") else ""
        )
        return StageResult(result.score, success, text, threshold, label=result.label)

    def score(case: Case, trace: dict[str, Any], suite: Suite, verdict: Any) -> StageResult:
        unusable = unusable_verdict(stage_of(suite, name), case, trace, verdict)
        if unusable is not None:
            return unusable
        if later_repeats(verdict):
            return mean_of_repeats([one(suite, v) for v in repeats_of(verdict)], suite)
        return one(suite, verdict)

    return score
