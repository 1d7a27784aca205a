"""The stages a suite runs, checked at collection: its stage modules imported and its own
judged stages declared, every name known (with a did-you-mean), its thresholds naming stages
it runs, each built-in stage's suite options prepared, and an LLM judge for free criteria."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import CaseFileError, UserInterrupt
from ..core.hashing import LABEL_CHARS, content_hash
from ..core.suite_schema import Suite
from ..domain.code import METRIC_PACKAGE, installed_package
from ..domain.stages.declared import declared_stages, known_stage
from ..domain.stages.registry import STAGES, prepare_stages
from ..domain.verdicts import JUDGE_INI, JUDGE_OPTION
from ..judges.spec import parse_spec
from .user_stages import gather_stages, known_stage_names

if TYPE_CHECKING:
    from .session import EvalSession


def check_suite_stages(state: EvalSession, suite: Suite, nodeid: str) -> None:
    """Make every stage the suite names known and check how it names them. Raises
    CaseFileError naming the file."""
    try:  # the suite's own stages: its stage modules, conftest files, installed packs
        gather_stages(suite, state.settings.rootdir, state.stage_modules)
    except CaseFileError as exc:
        if isinstance(exc, UserInterrupt):  # the run stops once collected (hooks.py)
            state.interrupted = state.interrupted or exc.what
        raise CaseFileError(f"{nodeid}: {exc}") from None
    if suite.judged_stages or suite.metrics:  # after gather_stages: a clash with one is named
        _declare_stages(state, suite, nodeid)
    runs = suite.stages + suite.report_only
    unknown = [name for name in runs if not known_stage(suite, name)]
    if unknown:
        known = _stage_names(suite)
        raise CaseFileError(
            f"{nodeid}: unknown stage(s) {', '.join(_with_suggestion(n, known) for n in unknown)}"
            f"; known stages: {', '.join(known)}; a stage of your own is declared with "
            '@ev.stage in conftest.py or in a module of the suite\'s "stage_modules" '
            "(docs/extending.md)"
        )
    threshold_problems = _threshold_problems(suite)
    if threshold_problems:
        raise CaseFileError(
            f'{nodeid}: "thresholds": {"; ".join(threshold_problems)}; this suite runs '
            f"{', '.join(runs)}"
        )
    try:
        registered = [name for name in runs if name in STAGES]  # the suite's own need none
        prepare_stages(suite, registered, state.settings.rootdir)
    except CaseFileError as exc:
        raise CaseFileError(f"{nodeid}: {exc}") from None


def _threshold_problems(suite: Suite) -> list[str]:
    """Per-stage thresholds must name stages the suite runs: a typo would be silently ignored
    (its values are checked against [0, 1] by the schema)."""
    runs = suite.stages + suite.report_only
    problems = []
    for name in suite.thresholds:
        if name in runs:
            continue
        if known_stage(suite, name):
            problems.append(
                f'stage {name!r} is not run by this suite: add it to "stages" or "report_only", '
                "or remove its threshold"
            )
            continue
        import difflib  # only for a typo: not on every run's import path

        close = difflib.get_close_matches(name, runs, n=1) or difflib.get_close_matches(
            name, _stage_names(suite), n=1
        )
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        problems.append(f"unknown stage {name!r}{hint}")
    return problems


def _stage_names(suite: Suite) -> list[str]:
    """Every stage name the suite may run: built-in, declared in Python, offered by an installed
    stage pack, and its own judged stages (for messages only: a pack's names are read from the
    installed packages' metadata)."""
    return [*known_stage_names(), *suite.judged_stages, *suite.metrics]


def _with_suggestion(name: str, known: list[str]) -> str:
    """An unknown stage's name, with the known stage it is close to (`retreival (did you mean
    'retrieval'?)`)."""
    import difflib  # only for a typo: not on every run's import path

    close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
    return f"{name} (did you mean {close[0]!r}?)" if close else name


def _declare_stages(state: EvalSession, suite: Suite, nodeid: str) -> None:
    """Build the suite's own judged stages once, each metric keyed by its class's source (its
    module and the project modules it imports, found without importing them). CaseFileError
    naming the file for a name taken twice or a metric module that cannot be found."""

    def metric_code(spec: str) -> tuple[dict[str, str], dict[str, str]]:
        module = spec.partition(":")[0]
        fingerprints = state.code_fingerprints
        installed = None if fingerprints.in_project(module) else installed_package(module)
        if installed is not None:  # e.g. deepeval's own metrics: keyed by the release
            return {METRIC_PACKAGE: content_hash(installed)}, {METRIC_PACKAGE: installed}
        paths: dict[str, str] = {}
        try:
            fields = fingerprints.default_key_fields(spec, paths)
        except CaseFileError as exc:
            raise CaseFileError(
                f'"metrics": {spec!r}: its source keys the metric\'s verdicts, and {exc}'
            ) from None
        return fields, {name: path for name, path in paths.items() if len(path) <= LABEL_CHARS}

    try:
        declared_stages(suite, metric_code)
    except CaseFileError as exc:
        raise CaseFileError(f"{nodeid}: {exc}") from None


def check_free_criteria_judge(
    suite: Suite, runs: list[str], judge_spec: str | None, judge_from: str | None, nodeid: str
) -> None:
    """A judge that cannot grade free criteria (lexical: word overlap) for a suite running its
    own judged stages is an error now: a score from it would mean nothing."""
    own = [name for name in runs if name in suite.judged_stages or name in suite.metrics]
    if not own or judge_spec is None or parse_spec(judge_spec).provider != "lexical":
        return
    source = {JUDGE_OPTION: "--eval-judge", JUDGE_INI: "ini eval_judge"}.get(
        judge_from or "", 'the suite\'s "judge"'
    )
    raise CaseFileError(
        f'{nodeid}: stage(s) {", ".join(own)} (the suite\'s own "judged_stages"/"metrics") '
        f"need an LLM judge, and this suite's judge is {judge_spec} (from {source}), which "
        "scores word overlap and cannot grade free criteria; set an LLM judge (e.g. "
        '"judge": "openai:gpt-4o-mini", or --eval-judge), or take those stages out of "stages"'
    )
