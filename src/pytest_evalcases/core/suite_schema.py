"""The suite model: a case file's suite-level settings (`Suite`), its users (`User`), named
totals and the settings of the stages that have some (`graph`, `rubric`, `citations`). The cases
themselves are validated one by one against the case model (`core/schema.py`), so one bad case
never hides the others.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from .field_checks import checked_answer_schema, checked_json_paths, checked_volatile_entries
from .schema import CaseModel
from .transient import NEVER_TRANSIENT_NAMES

__all__ = [
    "CitationOptions",
    "DeclaredRubricBand",
    "GraphOptions",
    "GraphSchemaOptions",
    "JudgedStageOptions",
    "RubricOptions",
    "RubricScale",
    "Suite",
    "Total",
    "TotalExclusion",
    "User",
]


class User(BaseModel):
    """A suite user (a memory agent's tenant): an id and named data files, each a path or a list
    of paths relative to the rootdir. The plugin never reads inside them: it hashes them into
    the key of that user's cases, and hands their absolute paths to `setup_user(user)`."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str = Field(min_length=1)

    @model_validator(mode="after")
    def _files_only(self) -> User:
        _check_file_fields(self.model_extra, "(every field of a user but `id` names data files)")
        return self

    def files(self) -> dict[str, list[str]]:
        """Field name -> its paths, in the order the suite lists them."""
        return _file_fields(self.model_extra)


def _check_file_fields(fields: dict[str, Any] | None, which: str) -> None:
    """ValueError naming the first field that is not a path or a non-empty list of paths."""
    for name, value in (fields or {}).items():
        paths = value if isinstance(value, list) else [value]
        if not paths or not all(isinstance(p, str) and p for p in paths):
            raise ValueError(
                f"field {name!r} must be a file path or a non-empty list of file paths {which}"
            )


def _file_fields(fields: dict[str, Any] | None) -> dict[str, list[str]]:
    return {
        name: value if isinstance(value, list) else [value]
        for name, value in (fields or {}).items()
    }


class Documents(BaseModel):
    """A suite's shared documents (Zep's document graph): named data files, each a path or a list
    of paths relative to the rootdir, ingested once for all the suite's cases by the system's
    `setup_documents(documents)`, and the settings of that ingestion (`"ingestion"`: chunk
    size, contextualisation prompt, ...; each set of them is a variant kept side by side)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    ingestion: dict[str, Any] | None = None
    # The settings of their preparation (Zep's chunk set: chunking, contextualisation), a
    # recorded phase of its own, reused by every variant of their ingestion.
    preparation: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _files_only(self) -> Documents:
        if not self.model_extra:
            raise ValueError(
                'name the shared documents\' files: {"files": ["data/docs/handbook.md"]} (any '
                'field name but "ingestion" and "preparation" names data files)'
            )
        _check_file_fields(
            self.model_extra,
            '(every field of "documents" but "ingestion" and "preparation" names data files)',
        )
        return self

    def files(self) -> dict[str, list[str]]:
        """Field name -> its paths, in the order the suite lists them."""
        return _file_fields(self.model_extra)


class GraphOptions(BaseModel):
    """The `graph` stage's suite settings (see stages/graph.py)."""

    model_config = ConfigDict(extra="forbid")

    # alias -> canonical label, for entities and relations alike (normalised before use)
    aliases: dict[str, str] = {}
    similarity: str | None = None  # "module:function" scoring two labels in [0, 1]
    # None: 0.95, the graph-scoring spec's tau (stages/graph.py)
    min_similarity: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    # "maximum": as many pairs as can be; "max_weight": the greatest total similarity, with
    # similarity-weighted (soft) precision and recall
    matching: Literal["maximum", "max_weight"] = "maximum"
    soft: list[Literal["subject", "relation", "object"]] = Field(
        default=["subject", "relation", "object"], min_length=1
    )
    # set once per suite: the imported `similarity` (at collection), the normalised aliases
    _similarity_function: Any = PrivateAttr(default=None)
    _aliases: dict[str, str] | None = PrivateAttr(default=None)


# A relation's allowed subject and object types: a type name or a list of them each.
TypeNames = str | list[Annotated[str, Field(min_length=1)]]


class GraphSchemaOptions(BaseModel):
    """The `graph_schema` stage's suite settings (see stages/graph_schema.py): the node types and
    relations a recorded graph may hold, each relation's subject and object types, and whether
    each element must name its source (and which sources it may name)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    node_types: list[Annotated[str, Field(min_length=1)]] | None = None  # None: any type
    # relation -> [subject type(s), object type(s)], or null for any; None: any relation
    relations: dict[str, tuple[TypeNames, TypeNames] | None] | None = None
    provenance: Literal["required", "optional"] = "optional"
    # What a provenance may name: "retrieved" (the ids the trace retrieved) or a list of ids;
    # None: any id.
    sources: Literal["retrieved"] | list[Annotated[str, Field(min_length=1)]] | None = None

    @model_validator(mode="after")
    def _declared_types(self) -> GraphSchemaOptions:
        if self.node_types is None:
            return self
        for relation, signature in (self.relations or {}).items():
            if signature is None:  # any types
                continue
            for side, names in zip(("subject", "object"), signature, strict=True):
                unknown = [
                    n
                    for n in ([names] if isinstance(names, str) else names)
                    if n not in self.node_types
                ]
                if unknown:
                    raise ValueError(
                        f"relation {relation!r}: {side} type(s) {', '.join(map(repr, unknown))} "
                        f"are not among node_types ({', '.join(self.node_types)}); add them there "
                        "or correct the relation"
                    )
        return self


# How a rubric item is graded: "binary" met (1) or not (0); "half" 0, 0.5 (partly met) or 1, as
# BEAM grades each criterion. One scale per suite: every case's grades then mean the same.
RubricScale = Literal["binary", "half"]


class RubricOptions(BaseModel):
    """The `rubric` stage's suite settings (see stages/rubric.py)."""

    model_config = ConfigDict(extra="forbid")

    scale: RubricScale = "binary"


class CitationOptions(BaseModel):
    """The `citations` stage's suite settings."""

    model_config = ConfigDict(extra="forbid")

    every_sentence: bool = False  # with per-sentence citations: each sentence cites a document


# What a judged stage of the suite's own may read (`"reads"`): the case's input and reference,
# the trace's answer, context and tool calls.
JudgedRead = Literal["input", "answer", "reference", "context", "tool_calls"]
# A stage name of the suite's own (`judged_stages`, `metrics`): a word, so verdict names
# (`turn2.polite`), key fields and report columns read it back unchanged.
DECLARED_NAME = r"^[A-Za-z][A-Za-z0-9_]*$"


class DeclaredRubricBand(BaseModel):
    """One band of a judged stage's GEval rubric: the outcome a score range (0-10) stands for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    score_range: tuple[int, int]
    expected_outcome: str = Field(min_length=1)

    @field_validator("score_range")
    @classmethod
    def _on_the_scale(cls, bounds: tuple[int, int]) -> tuple[int, int]:
        low, high = bounds
        if not 0 <= low <= high <= 10:
            raise ValueError(
                f"score_range {list(bounds)} must be two integers 0-10, low first (GEval's scale)"
            )
        return bounds


class JudgedStageOptions(BaseModel):
    """A judged stage a suite declares with its own criteria (`"judged_stages"`), graded by the
    suite's LLM judge with deepeval's GEval; `steps` and `rubric` go to GEval as they are."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    criteria: str = Field(min_length=1)
    reads: list[JudgedRead] = Field(default=["input", "answer"], min_length=1)
    threshold: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    steps: list[Annotated[str, Field(min_length=1)]] | None = Field(None, min_length=1)
    rubric: list[DeclaredRubricBand] | None = Field(None, min_length=1)

    @field_validator("reads")
    @classmethod
    def _distinct_reads(cls, reads: list[str]) -> list[str]:
        if len(set(reads)) != len(reads):
            raise ValueError(f"each field is read once: {reads}")
        return reads

    @field_validator("rubric")
    @classmethod
    def _bands_apart(
        cls, bands: list[DeclaredRubricBand] | None
    ) -> list[DeclaredRubricBand] | None:
        ordered = sorted(bands or [], key=lambda band: band.score_range)
        for before, after in zip(ordered, ordered[1:], strict=False):
            if after.score_range[0] <= before.score_range[1]:
                raise ValueError(
                    f"rubric bands {list(before.score_range)} and {list(after.score_range)} "
                    "overlap; each score belongs to one band"
                )
        return bands


class TotalExclusion(BaseModel):
    """Which cases a named total leaves out: by category, and/or by id (a list of ids, or the
    path, relative to the rootdir, of a JSON array of ids)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    category: list[str] = []
    ids: list[str] | str | None = None


class Total(BaseModel):
    """A published figure over part of the suite ("categories 1-4"): results.json reports its
    pass rate and stage means beside the overall ones; the excluded cases still run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    exclude: TotalExclusion = TotalExclusion()


class SystemRetries(BaseModel):
    """How the system's calls (`run`, `setup_user`, `ready`, `user_ready`) are retried on a
    transient error (domain/retries.py). A field left out takes its default there; the flag
    --eval-system-retries overrides `retries`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    retries: int | None = Field(None, ge=0)  # after the first attempt (default 8; 0: none)
    backoff: float | None = Field(None, ge=0, allow_inf_nan=False)  # seconds before retry 1
    max_wait: float | None = Field(None, ge=0, allow_inf_nan=False)  # seconds of waits in all
    # Exceptions of the system's own that are transient: "module:Class" (subclasses too).
    transient: list[Annotated[str, Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")]] = []

    @field_validator("transient")
    @classmethod
    def _not_assertion_like(cls, names: list[str]) -> list[str]:
        for name in names:
            module, _, qualname = name.partition(":")
            if module == "builtins" and qualname in NEVER_TRANSIENT_NAMES:
                raise ValueError(
                    f"{name!r} is an error of the code, never a transient one: it is not "
                    "retried; declare the system's own exception class instead"
                )
        return names


class Suite(BaseModel):
    """A case file's suite-level settings (cases are validated separately, one by one)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    # "calibration" suites hold judge test cases, collected by pytest_plugin/calibration_items.py.
    kind: Literal["eval", "calibration"] = "eval"
    version: int = 1
    system: str | None = None
    inputs: list[str] = []
    stages: list[str] = Field(min_length=1)
    report_only: list[str] = []
    # NaN and infinities are refused by name ("a finite number"), not by a confusing bound.
    threshold: float = Field(0.5, ge=0, le=1, allow_inf_nan=False)
    thresholds: dict[str, Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]] = {}
    k: int = Field(3, ge=1)
    judge: str | None = None
    strict: bool = False
    accept_partial: bool = False
    correctness_criteria: str | None = None
    # Verdicts per judged stage (None: --eval-judge-repeats, else ini eval_judge_repeats, else
    # whatever the cassette holds on replay and 1 when recording).
    judge_repeats: int | None = Field(None, ge=1)
    # Independent system runs per case (None: --eval-runs, else as recorded on replay and 1
    # when recording); a case passes when every run passes (pass^k).
    runs: int | None = Field(None, ge=1)
    # Whether a gating stage whose repeats fall on both sides of the threshold fails the case.
    unstable: Literal["fail", "pass"] = "fail"
    timeout: float | None = Field(None, gt=0)  # seconds a system run may take (live, HTTP replay)
    # Retries of the system's calls on a transient error (None: the defaults, as Zep's).
    system_retries: SystemRetries | None = None
    # The system's source, hashed into the key (None: the module holding `system`; []: none).
    code: list[str] | None = None
    # JSONPaths of request body fields --replay-http ignores when matching (e.g. "$.user").
    http_ignore: list[str] = []
    # Values the system's HTTP makes fresh on every call, beyond the built-in list
    # (http/volatile.py): JSONPaths of request or response body fields ("$.trace_id") and
    # response header names ("x-trace-id", "x-mycorp-*"). A re-record keeps their old form.
    http_volatile: list[str] = []
    # Hosts the system may reach directly under --replay-http (loopback only when listed).
    allow_hosts: list[str] = []
    # Whether the system may start a subprocess under --replay-http (its child gets a
    # proxy-denying environment); refused by default, since a child is out of the guard's reach.
    allow_subprocess: bool = False
    # Users whose data files key their cases (see User); a case names one with "user".
    users: list[User] = []
    # How the system ingests a user's data (ontology, instructions, chunk size, ...): free-form
    # JSON handed to setup_user as `user.ingestion`, and in every case's key.
    ingestion: dict[str, Any] | None = None
    # Documents ingested once for all the suite's cases, by `setup_documents(documents)`.
    documents: Documents | None = None
    # Where an imported suite came from (`python -m pytest_evalcases import`): never read by a run.
    source: dict[str, Any] | None = None
    # Named totals over part of the suite (a paper's headline leaves some cases out).
    totals: list[Total] = []
    graph: GraphOptions | None = None
    graph_schema: GraphSchemaOptions | None = None
    citations: CitationOptions | None = None
    rubric: RubricOptions | None = None
    answer_schema: dict[str, Any] | bool | None = None  # the default of the cases' own
    # Case fields for the system whose names are near a case field's (`references`): without
    # this, such a field is taken for a typo of the case field and errors its case.
    system_fields: list[str] = []
    # Modules that declare the suite's own stages (`@ev.stage`), imported at collection with
    # the rootdir on sys.path, as the system's module is (dotted names: "checks", "qa.sql").
    stage_modules: list[str] = []
    # Judged stages of the suite's own: name -> criteria, what the judge reads, threshold
    # (domain/stages/declared.py builds them; the names go in "stages" like any other).
    judged_stages: dict[Annotated[str, Field(pattern=DECLARED_NAME)], JudgedStageOptions] = {}
    # The suite's own deepeval metrics: name -> "module:Class" (a BaseMetric subclass).
    metrics: dict[
        Annotated[str, Field(pattern=DECLARED_NAME)],
        Annotated[str, Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")],
    ] = {}
    cases: list[Any]  # validated one by one, so one bad case errors only itself
    # The stages `judged_stages` and `metrics` declare, built once (domain/stages/declared.py).
    _declared_stages: Any = PrivateAttr(default=None)

    @property
    def rubric_scale(self) -> str:
        return self.rubric.scale if self.rubric is not None else "binary"

    def threshold_for(self, stage: str, default: float | None = None) -> float:
        """`thresholds`, else the threshold of a stage the suite declares, else the default."""
        if stage in self.thresholds:
            return self.thresholds[stage]
        declared = self.judged_stages.get(stage)
        if declared is not None and declared.threshold is not None:
            return declared.threshold
        return self.threshold if default is None else default

    @field_validator("totals")
    @classmethod
    def _distinct_totals(cls, totals: list[Total]) -> list[Total]:
        names = [total.name for total in totals]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"total names must be distinct: {', '.join(map(repr, repeated))}")
        return totals

    _answer_schema = field_validator("answer_schema")(checked_answer_schema)

    _json_paths = field_validator("http_ignore")(checked_json_paths)
    _volatile_entries = field_validator("http_volatile")(checked_volatile_entries)

    @field_validator("system_fields")
    @classmethod
    def _not_case_fields(cls, names: list[str]) -> list[str]:
        taken = [name for name in names if name in CaseModel.model_fields]
        if taken:
            raise ValueError(
                f"{', '.join(map(repr, taken))}: case fields with a meaning of their own, never "
                "given to the system; list only the other fields of your cases whose names are "
                "near a case field's"
            )
        return names

    @field_validator("stage_modules")
    @classmethod
    def _module_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not all(part.isidentifier() for part in name.split(".")):
                raise ValueError(
                    f"{name!r} is not a module name: write it as Python imports it, e.g. "
                    '"checks" for checks.py or "qa.sql" for qa/sql.py (relative to the rootdir)'
                )
        return names

    @field_validator("users")
    @classmethod
    def _unique_user_ids(cls, users: list[User]) -> list[User]:
        seen: set[str] = set()
        for user in users:
            if user.id in seen:
                raise ValueError(f"user id {user.id!r} is declared twice; user ids are unique")
            seen.add(user.id)
        return users
