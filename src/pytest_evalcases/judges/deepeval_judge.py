"""The LLM judge: deepeval metrics for six stages, our own prompts for the other three
(context completeness, answer accuracy, and rubric items: one request per item).

deepeval is imported only by a live LLM judge, after its environment is prepared (it reads .env
files unless told not to). The import takes 0.5-2 s of CPU, so the judge's first verdict starts it
in a background thread (`start_loading_deepeval`; a --live or --live-judges run starts it through
`warm_up` once every case has taken its first step: it shares the GIL, so started earlier it
would only delay the first judge request); meanwhile the systems go on running and, for
`openai:` judges, our own graders (context completeness, answer accuracy) already judge: they
need only the chat client. deepeval's metrics wait for the import to finish.
Each metric (built by metrics.py, one per verdict: metrics are stateful) runs through
`a_measure(test_case, _show_indicator=False)` (no progress spinner on stderr), with the judge's
one model object (llm.py: our model, wrapped in the subclass of deepeval's model class that
llm.py makes once deepeval is loaded).

Every import of deepeval (and aiohttp) here is inside the function that needs it, so importing
this module, as `pytest_evalcases.judges` does, loads neither.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import importlib
import importlib.util
import os
import sys
import threading
from typing import Any

from ..core.names import clip
from .base import (
    ACCURACY_SCORES,
    COMPLETENESS_SCORES,
    Grade,
    Judge,
    JudgeInput,
    StageOptions,
    rubric_grade,
)
from .chat import ChatClient, LoopBound, completions_url, endpoint_name
from .endpoint import DEFAULT_BREAKER_AFTER, Endpoint
from .errors import JudgeConfigError, JudgeError
from .llm import NativeJudgeModel, OpenAIJudgeModel, deepeval_model, deepeval_model_class
from .metrics import (
    build_metric,
    check_extractions,
    detail_text,
    detail_texts,
    metric_details,
    metric_score,
    steps_key,
    test_case_of,
)
from .own_metrics import new_metric, own_metric_grade, run_metric
from .pacing import RateLimits
from .prompts import (
    AnswerAccuracyGrade,
    ContextCompletenessGrade,
    RubricItemGrade,
    RubricItemHalfGrade,
    answer_accuracy_prompt,
    check_grader_reply,
    context_completeness_prompt,
    rubric_item_half_prompt,
    rubric_item_prompt,
    unanswerable_accuracy_prompt,
)
from .retry import RetryPolicy
from .spec import JudgeSpec

# What each provider needs installed: (importable module, what to pip install).
_LIVE_EXTRA = "'pytest-evalcases[live]'"
_REQUIRED: dict[str, tuple[tuple[str, str], ...]] = {
    "openai": (("deepeval", _LIVE_EXTRA), ("aiohttp", _LIVE_EXTRA)),
    "gemini": (("deepeval", _LIVE_EXTRA), ("google.genai", "google-genai")),
    "ollama": (("deepeval", _LIVE_EXTRA), ("ollama", "ollama")),
    "litellm": (("deepeval", _LIVE_EXTRA), ("litellm", "litellm")),
}


def prepare_deepeval_env() -> None:
    """Environment deepeval reads at import (and, for settings, at call time)."""
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
    os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")  # else it loads ./.env into os.environ
    # Only deepeval's own provider classes (gemini/ollama/litellm) use deepeval's retry layer;
    # one attempt there leaves RetryPolicy as the single policy in force.
    os.environ.setdefault("DEEPEVAL_RETRY_MAX_ATTEMPTS", "1")


# What a live LLM judge needs of deepeval: its metrics, test case, price table, and the model
# base class our model wrapper subclasses (llm.deepeval_model_class, made by the loader too).
_DEEPEVAL_MODULES = (
    "deepeval.metrics",
    "deepeval.test_case",
    "deepeval.models.llms.constants",
    "deepeval.models",
)
_loading: concurrent.futures.Future[None] | None = None
_loading_lock = threading.Lock()


def start_loading_deepeval() -> concurrent.futures.Future[None]:
    """Import deepeval (and make our model class over it) in a background thread, once per process.

    Everything of ours that touches deepeval waits for this future first, so no two threads run
    deepeval's module code at once.
    """
    global _loading
    with _loading_lock:
        if _loading is None:
            _loading = concurrent.futures.Future()
            # Running: a waiter that is cancelled (a timeout, Ctrl-C) cannot cancel the import,
            # which every other waiter shares (asyncio.wrap_future passes cancellation on).
            _loading.set_running_or_notify_cancel()
            # The HTTP clients both deepeval and vcrpy's patches import, imported here first: the
            # main thread starting vcrpy while this thread imports deepeval met a half-imported
            # urllib3 (KeyError: 'urllib3', seen about once in five busy runs).
            for name in ("urllib3", "requests"):
                with contextlib.suppress(ImportError):
                    importlib.import_module(name)
            threading.Thread(
                target=_load_deepeval,
                args=(_loading,),
                name="evalcases-deepeval-import",
                daemon=True,
            ).start()
        return _loading


def _load_deepeval(done: concurrent.futures.Future[None]) -> None:
    # While this thread imports, the event loop's thread gives up the GIL at every socket call and
    # waits up to the switch interval (5 ms) to get it back: 0.5 ms lets ~10% more judge
    # requests through during the import (measured with benchmarks/live.py's server).
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    # The import makes ~130k objects that live as long as the process; the cyclic GC would walk
    # them again and again while they are made (~0.2 s of a 1.7 s import), on every later full
    # pass, and at exit (~0.3 s). So: no GC passes during the import, then everything alive is
    # frozen out of the GC's way. The cyclic garbage of both threads in that window is frozen
    # with it (measured: ~1,600 objects); collecting it first would hold the GIL ~0.1 s.
    collecting = gc.isenabled()
    gc.disable()
    try:
        prepare_deepeval_env()
        for module in _DEEPEVAL_MODULES:
            importlib.import_module(module)
        deepeval_model_class()  # subclassing deepeval's base class runs deepeval's code too
    except BaseException as exc:  # handed to whoever waits for deepeval
        done.set_exception(exc)
    else:
        gc.freeze()
        done.set_result(None)
    finally:
        if collecting:
            gc.enable()
        sys.setswitchinterval(interval)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package ("google") raises
        return False


def check_dependencies(spec: JudgeSpec) -> None:
    """Raise JudgeConfigError when a package the judge needs is missing (nothing is imported)."""
    for module, pip_name in _REQUIRED.get(spec.provider, ()):
        if not _installed(module):
            raise JudgeConfigError(
                f"judge {spec.id!r} needs the Python package {module!r}, which is not installed: "
                f"pip install {pip_name}"
            )


def _price_per_token(model: str) -> tuple[float, float] | None:
    """USD per prompt / completion token: OPENAI_COST_PER_*_TOKEN, else deepeval's table."""
    # deepeval: heavy; loaded in the background by now (_deepeval_loaded)
    from deepeval.models.llms.constants import OPENAI_MODELS_DATA

    data = OPENAI_MODELS_DATA.get(model)
    prompt_price = os.environ.get("OPENAI_COST_PER_INPUT_TOKEN") or data.input_price
    completion_price = os.environ.get("OPENAI_COST_PER_OUTPUT_TOKEN") or data.output_price
    if prompt_price is None or completion_price is None:
        return None
    return float(prompt_price), float(completion_price)


def openai_headers(spec: JudgeSpec) -> dict[str, str]:
    """The organization and project headers the openai SDK sends for OPENAI_ORG_ID and
    OPENAI_PROJECT_ID (a key's default organization and project otherwise)."""
    headers = {}
    if spec.organization:
        headers["OpenAI-Organization"] = spec.organization
    if spec.project:
        headers["OpenAI-Project"] = spec.project
    return headers


class DeepEvalJudge(Judge):
    """An LLM judge (openai / gemini / ollama / litellm) driving deepeval metrics."""

    def __init__(
        self,
        spec: JudgeSpec,
        *,
        retry: RetryPolicy,
        timeout: float,
        max_concurrency: int | None,
        rate_limits: RateLimits | None = None,
        breaker_after: int = DEFAULT_BREAKER_AFTER,
    ) -> None:
        super().__init__(spec.id)
        self._spec = spec
        self._retry = retry
        self._timeout = timeout
        self._max_concurrency = max_concurrency
        self._rate_limits = rate_limits
        self._breaker_after = breaker_after
        self._model: Any = None  # the deepeval model object, made once deepeval is loaded
        self._chat: ChatClient | None = None
        # Metrics in progress at once: enough to keep every request slot busy, few enough that
        # the hundreds of stages waiting for deepeval's import do not all start (and build their
        # metric, and hold its state) in the same instant the import ends.
        self._metric_slots = LoopBound(4 * max_concurrency if max_concurrency else None)
        # GEval's steps prompt sees only the criteria, never the case: draft them once per
        # criteria (metrics.steps_key)
        self._drafted_steps: dict[tuple[str, ...], list[str]] = {}
        # One drafting of GEval steps per criteria, even when many cases start at once: every
        # case of a run is then scored under the same steps. Keyed by loop (locks are per loop).
        self._steps_locks: dict[tuple[int, str], asyncio.Lock] = {}

    def warm_up(self) -> None:
        if self._spec.provider == "openai":
            # The chat client's transport, first and at full speed (~0.1 s): the first requests
            # need it, and deepeval's import, which would import it too, finds it done.
            import aiohttp  # noqa: F401  (aiohttp: heavy, live judges only)
        start_loading_deepeval()

    def _chat_client(self) -> ChatClient:
        """The openai judge's connection to its endpoint (needs no deepeval)."""
        if self._chat is None:
            spec = self._spec
            assert spec.model is not None and spec.api_key is not None
            self._chat = ChatClient(
                spec.model,
                judge_id=self.id,
                api_key=spec.api_key,
                base_url=spec.base_url,
                timeout=self._timeout,
                retry=self._retry,
                stats=self.stats,
                key_env=spec.key_env or "OPENAI_API_KEY",
                max_concurrency=self._max_concurrency,
                endpoint=self._new_endpoint(endpoint_name(completions_url(spec.base_url))),
                extra_headers=openai_headers(spec),
            )
        return self._chat

    def _new_endpoint(self, name: str) -> Endpoint:
        """The gate of this judge's model requests: its rate limits and its breaker."""
        return Endpoint(
            name,
            max_concurrency=self._max_concurrency,
            stats=self.stats,
            backoff=self._retry.backoff,
            max_pause=self._retry.max_delay,
            limits=self._rate_limits,
            breaker_after=self._breaker_after,
            rate_limit_wait=self._retry.rate_limit_wait,
            sleep=self._retry.sleep,
        )

    async def _deepeval_loaded(self) -> None:
        """Wait for the background import of deepeval; then price the openai judge's tokens."""
        loading = start_loading_deepeval()
        try:
            if not loading.done():
                await asyncio.wrap_future(loading)
            loading.result()
            chat = self._chat_client() if self._spec.provider == "openai" else None
            if chat is not None and not chat.priced:  # a bad price variable fails every verdict
                chat.set_prices(_price_per_token(self._spec.model or ""))
        except Exception as exc:  # e.g. a broken deepeval install, a bad price variable
            raise JudgeConfigError(
                f"cannot load the {self.id!r} judge: {type(exc).__name__}: {exc}"
            ) from exc

    async def model(self) -> Any:
        """The one deepeval model object this judge uses for every metric."""
        await self._deepeval_loaded()
        if self._model is None:
            prepare_deepeval_env()  # done by the loader already; cheap, and safe if it was not
            spec = self._spec
            assert spec.model is not None
            judge_model: OpenAIJudgeModel | NativeJudgeModel
            if spec.provider == "openai":
                judge_model = OpenAIJudgeModel(self._chat_client())
            else:
                endpoint = self._new_endpoint(
                    f"{self.id} ({spec.base_url})" if spec.base_url else self.id
                )
                judge_model = NativeJudgeModel(
                    spec.model,
                    lambda: self._build_native(spec),
                    judge_id=self.id,
                    retry=self._retry,
                    stats=self.stats,
                    key_env=spec.key_env,
                    endpoint=endpoint,
                )
            self._model = deepeval_model(judge_model)
        return self._model

    async def _ask(self, prompt: str, schema: type[Any]) -> Any:
        """One of our graders' prompts. An openai judge sends it at once, without waiting for
        deepeval; the reply's cost is booked once deepeval's price table is there."""
        if self._spec.provider != "openai":
            return await (await self.model()).a_generate(prompt, schema=schema)
        if start_loading_deepeval().done():  # a failed import fails before a paid request
            await self._deepeval_loaded()
        reply = await self._chat_client().complete(prompt, schema)
        await self._deepeval_loaded()
        return reply

    @staticmethod
    def _build_native(spec: JudgeSpec) -> Any:
        """deepeval's own provider class; untested here beyond construction (see docs)."""
        # deepeval: heavy; loaded in the background by now (model() waits for it)
        from deepeval import models

        try:
            if spec.provider == "gemini":
                return models.GeminiModel(model=spec.model, api_key=spec.api_key)
            if spec.provider == "ollama":
                return models.OllamaModel(model=spec.model, base_url=spec.base_url)
            # EVALCASES_JUDGE_API_KEY / _BASE_URL when set; else litellm's own variables
            endpoint = {"api_key": spec.api_key, "base_url": spec.base_url}
            return models.LiteLLMModel(
                model=spec.model, **{k: v for k, v in endpoint.items() if v is not None}
            )
        except Exception as exc:  # deepeval raises its own errors for missing SDKs and settings
            raise JudgeConfigError(f"cannot build the {spec.id!r} judge model: {exc}") from exc

    async def _grade(self, stage: str, data: JudgeInput, options: StageOptions) -> Grade:
        start_loading_deepeval()  # the first verdict starts it; the others find it under way
        if stage == "context_completeness":
            prompt = context_completeness_prompt(data.input, data.reference or "", data.context)
            completeness = await self._ask(prompt, ContextCompletenessGrade)
            check_grader_reply(self.id, stage, completeness)
            return Grade(
                COMPLETENESS_SCORES[completeness.label],
                completeness.reason,
                completeness.label,
                {
                    "present_elements": detail_texts(completeness.present_elements),
                    "missing_elements": detail_texts(completeness.missing_elements),
                },
            )
        if stage == "answer_accuracy":
            build = unanswerable_accuracy_prompt if data.unanswerable else answer_accuracy_prompt
            prompt = build(data.input, data.answer, data.reference)
            accuracy = await self._ask(prompt, AnswerAccuracyGrade)
            check_grader_reply(self.id, stage, accuracy)
            return Grade(
                ACCURACY_SCORES[accuracy.label],
                accuracy.reason,
                accuracy.label,
                {"unanswerable": data.unanswerable},
            )
        if stage == "rubric":  # item by item, the requests in flight together
            half = options.rubric_scale == "half"
            prompt, schema = (
                (rubric_item_half_prompt, RubricItemHalfGrade)
                if half
                else (rubric_item_prompt, RubricItemGrade)
            )
            graded = await asyncio.gather(
                *(
                    self._ask(prompt(data.input, data.answer, text), schema)
                    for text, _ in data.rubric
                )
            )
            for grade in graded:
                check_grader_reply(self.id, stage, grade)
            return rubric_grade(
                [
                    (
                        text,
                        weight,
                        grade.grade if half else float(grade.met),
                        detail_text(grade.reason),
                    )
                    for (text, weight), grade in zip(data.rubric, graded, strict=True)
                ],
                options.rubric_scale,
            )
        model = await self.model()
        own = options.declared.get(stage)
        if own is not None and own.get("kind") == "metric":  # the suite's own deepeval metric
            return await self._measure_own_metric(stage, str(own["class"]), data, options, model)
        drafted = steps_key(stage, options)
        if drafted is not None and drafted not in self._drafted_steps:
            key = (id(asyncio.get_running_loop()), *drafted)
            async with self._steps_locks.setdefault(key, asyncio.Lock()):
                if drafted not in self._drafted_steps:  # the first one drafts, in the lock
                    return await self._measure(stage, data, options, model)
        return await self._measure(stage, data, options, model)

    async def _measure(
        self, stage: str, data: JudgeInput, options: StageOptions, model: Any
    ) -> Grade:
        drafted = steps_key(stage, options)
        steps = self._drafted_steps.get(drafted) if drafted is not None else None
        self._metric_slots.current(None)
        try:
            async with self._metric_slots.slot():
                metric = build_metric(stage, model, options, steps)  # stateful: one per call
                await metric.a_measure(test_case_of(data), _show_indicator=False)
        except JudgeError:
            raise
        except Exception as exc:  # deepeval's own errors (bad test case, unexpected reply shape)
            raise JudgeError(  # deepeval's message may quote the reply: clipped
                f"{self.id}: deepeval failed for {stage!r}: {type(exc).__name__}: "
                + clip(str(exc), 1000, one_line=False)
            ) from exc
        check_extractions(self.id, stage, metric, data)
        score = metric_score(self.id, stage, metric)
        if drafted is not None and metric.evaluation_steps:
            self._drafted_steps.setdefault(drafted, list(metric.evaluation_steps))
        return Grade(score, metric.reason or "", None, metric_details(stage, metric))

    async def _measure_own_metric(
        self, stage: str, spec: str, data: JudgeInput, options: StageOptions, model: Any
    ) -> Grade:
        """A suite's own metric class (`"metrics"`), made with this judge's model and run on
        the case; what it reports (score, reason, threshold) becomes the verdict, its
        `evaluation_cost` joins the judge's cost."""
        self._metric_slots.current(None)
        try:
            async with self._metric_slots.slot():
                metric = new_metric(spec, model, options.rootdir)
                await run_metric(metric, test_case_of(data))
        except JudgeError:
            raise
        except Exception as exc:  # the user's metric, or deepeval under it, raised
            raise JudgeError(
                f"{self.id}: metric {spec} ({stage!r}) raised {type(exc).__name__}: "
                + clip(str(exc), 1000, one_line=False)
            ) from exc
        return own_metric_grade(self.id, stage, spec, metric, self.stats)

    async def aclose(self) -> None:
        if self._chat is not None:
            await self._chat.aclose()
