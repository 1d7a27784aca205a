"""A suite's own deepeval metrics (`"metrics": {"brand_voice": "myteam.metrics:BrandVoice"}`),
run live: the class imported from the project, made with the judge's model, measured on the
case, and what it reports turned into a verdict.

Only a live judge comes here; a replay scores the recorded verdict and never imports the class
(domain/stages/declared.py).
"""

from __future__ import annotations

import asyncio
import inspect
import math
from pathlib import Path
from typing import Any

from ..domain.stages.declared import METRIC_THRESHOLD
from ..domain.system import import_spec, split_spec
from .base import Grade
from .errors import JudgeConfigError, JudgeError
from .usage import JudgeStats, count_cost, current_meter


def new_metric(spec: str, model: Any, rootdir: str | None) -> Any:
    """A fresh instance of the class `spec` names (metrics are stateful: one per verdict), given
    the judge's model as `model=` when its constructor takes it (every deepeval metric does);
    JudgeConfigError when the class cannot be imported or is not a metric."""
    parts = split_spec(spec)
    if parts is None:  # the suite schema refuses this; kept for a judge called directly
        raise JudgeConfigError(f"metric {spec!r} must read 'module:Class'")
    try:
        cls = import_spec(*parts, Path(rootdir or "."))
    except Exception as exc:  # the user's module: any import-time error
        raise JudgeConfigError(
            f"cannot import metric {spec!r}: {type(exc).__name__}: {exc}; check the module "
            "path (imported with the rootdir on sys.path)"
        ) from exc
    if not inspect.isclass(cls) or not (hasattr(cls, "a_measure") or hasattr(cls, "measure")):
        raise JudgeConfigError(
            f"metric {spec!r} is not a metric class: a deepeval.metrics.BaseMetric subclass "
            "(or a class with a_measure or measure, score, reason and threshold)"
        )
    try:
        parameters = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        parameters = {}  # type: ignore[assignment]
    takes_model = "model" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )
    return cls(model=model) if takes_model else cls()


async def run_metric(metric: Any, test_case: Any) -> None:
    """`await metric.a_measure(test_case)` (without deepeval's progress spinner when it takes
    that option), or, for a class with only `measure`, that in a worker thread."""
    measure = getattr(metric, "a_measure", None)
    if measure is not None:
        try:
            quiet = "_show_indicator" in inspect.signature(measure).parameters
        except (TypeError, ValueError):
            quiet = False
        await (measure(test_case, _show_indicator=False) if quiet else measure(test_case))
        return
    await asyncio.to_thread(metric.measure, test_case)


def own_metric_grade(judge_id: str, stage: str, spec: str, metric: Any, stats: JudgeStats) -> Grade:
    """The verdict of a measured metric: its score (a number in [0, 1], checked by the judge),
    its reason, and in `details` the threshold it carried (what a replay gates with when the
    suite sets none) and whether it called itself successful. Its `evaluation_cost` (set by a
    metric that pays for its own model calls; the judge's model is counted as it is called)
    goes into the judge's cost."""
    score = getattr(metric, "score", None)
    if isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score):
        raise JudgeError(
            f"{judge_id}: metric {spec} ({stage!r}) left score {score!r}, not a number; a "
            "metric without a score is a judge error, never a pass"
        )
    cost = getattr(metric, "evaluation_cost", None)
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost > 0:
        count_cost(stats, current_meter(), float(cost))
    details: dict[str, Any] = {"metric": spec}
    threshold = getattr(metric, "threshold", None)
    if isinstance(threshold, int | float) and not isinstance(threshold, bool):
        details[METRIC_THRESHOLD] = float(threshold)
    success = getattr(metric, "success", None)
    if isinstance(success, bool):
        details["success"] = success
    reason = getattr(metric, "reason", None)
    return Grade(float(score), "" if reason is None else str(reason), None, details)
