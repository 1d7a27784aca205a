"""Judges: turn one stage of one case into a verdict dict.

    judge = make_judge("openai:gpt-4o-mini")   # or "lexical"; raises JudgeConfigError
    verdict = await judge.evaluate("faithfulness", JudgeInput(...), {"strict": True})
    await judge.aclose()

Importing this package (and using the lexical judge) imports none of deepeval, openai or
aiohttp: every module here imports them inside the functions that use them, and LLM judges
call those on their first verdict (see deepeval_judge.py and llm.py).
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
from collections.abc import Mapping

from .base import (
    DEFAULT_CORRECTNESS_CRITERIA,
    JUDGED_STAGES,
    Judge,
    JudgeInput,
    StageOptions,
    Verdict,
)
from .deepeval_judge import DeepEvalJudge, check_dependencies
from .endpoint import BREAKER_ENV, DEFAULT_BREAKER_AFTER
from .errors import JudgeAuthError, JudgeConfigError, JudgeError, JudgeInputError
from .lexical import LEXICAL_REVISION, LexicalJudge
from .pacing import RateLimits
from .prompts import PROMPTS_REVISION
from .retry import RetryPolicy, env_number
from .spec import ACCEPTED_FORMS, parse_spec, resolve_spec
from .usage import JudgeStats

__all__ = [
    "ACCEPTED_FORMS",
    "DEFAULT_CORRECTNESS_CRITERIA",
    "JUDGED_STAGES",
    "Judge",
    "JudgeAuthError",
    "JudgeConfigError",
    "JudgeError",
    "JudgeInput",
    "JudgeInputError",
    "JudgeStats",
    "RateLimits",
    "RetryPolicy",
    "StageOptions",
    "Verdict",
    "judge_version",
    "make_judge",
]

DEFAULT_TIMEOUT = 60.0  # seconds per model request
DEFAULT_MAX_CONCURRENCY = 16  # model requests in flight per judge (one case fans out to several)


def make_judge(
    spec: str,
    *,
    retry: RetryPolicy | None = None,
    timeout: float | None = None,
    max_concurrency: int | None = None,
    rate_limits: RateLimits | None = None,
    environ: Mapping[str, str] | None = None,
) -> Judge:
    """Build the judge an `--eval-judge` value names.

    Checks the spec, the key and the packages now (JudgeConfigError), so a bad configuration
    fails before any case runs; the model client itself is made on the first verdict.
    `timeout` and `max_concurrency` default to EVALCASES_JUDGE_TIMEOUT and
    EVALCASES_JUDGE_CONCURRENCY (0 = unbounded), else 60 s and 16; `retry` to the policy of
    EVALCASES_JUDGE_RETRIES, EVALCASES_JUDGE_BACKOFF and EVALCASES_JUDGE_RATE_LIMIT_WAIT.
    `rate_limits`: client-side requests / tokens per minute (the plugin passes --eval-rpm and
    --eval-tpm); under xdist each worker takes its share (PYTEST_XDIST_WORKER_COUNT).
    EVALCASES_JUDGE_BREAKER: connection failures or timeouts in a row that end the judge's run
    (default 5, 0 never).
    """
    env = os.environ if environ is None else environ
    parsed = resolve_spec(spec, env)
    if parsed.provider == "lexical":
        return LexicalJudge()
    check_dependencies(parsed)
    if timeout is None:
        timeout = env_number(env, "EVALCASES_JUDGE_TIMEOUT", DEFAULT_TIMEOUT)
    if timeout <= 0:
        raise JudgeConfigError(
            f"the judge timeout (EVALCASES_JUDGE_TIMEOUT) must be positive seconds, not {timeout}"
        )
    if max_concurrency is None:
        max_concurrency = int(
            env_number(env, "EVALCASES_JUDGE_CONCURRENCY", DEFAULT_MAX_CONCURRENCY)
        )
    rate_limits = rate_limits or RateLimits()
    workers = env.get("PYTEST_XDIST_WORKER_COUNT", "").strip()
    if workers.isdigit() and int(workers) > 1:  # every worker has its own client
        rate_limits = RateLimits(rate_limits.rpm, rate_limits.tpm, shares=int(workers))
    return DeepEvalJudge(
        parsed,
        retry=retry or RetryPolicy.from_env(env),
        timeout=timeout,
        max_concurrency=max_concurrency or None,
        rate_limits=rate_limits,
        breaker_after=int(env_number(env, BREAKER_ENV, DEFAULT_BREAKER_AFTER)),
    )


@functools.cache
def judge_version(spec: str) -> str:
    """The version of the judge `spec` names, the one place it is computed: it goes into every
    verdict's key, so a change of the judging code (a lexical rule, one of our prompts, the
    installed deepeval) makes the recorded verdicts stale. Needs no key, no network client and
    no deepeval import: a replay keys its verdicts though no judge runs. Once per spec and
    process (it asks importlib.metadata).
    """
    parsed = parse_spec(spec)
    if parsed.provider == "lexical":
        return f"lexical-{LEXICAL_REVISION}"
    try:
        deepeval = importlib.metadata.version("deepeval")
    except importlib.metadata.PackageNotFoundError:
        deepeval = "not-installed"
    return f"deepeval=={deepeval}; evalcases-prompts=={PROMPTS_REVISION}"
