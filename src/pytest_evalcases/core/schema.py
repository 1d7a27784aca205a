"""Pydantic models for suites, cases and traces: the case-file contract lives here.

Cases are validated one by one (so one bad case never hides the others) and kept as small
slotted `Case` objects; traces are validated when they are recorded and replayed as plain dicts.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from .json_paths import parse_json_path

__all__ = [
    "Case",
    "CaseModel",
    "Suite",
    "ToolExpectation",
    "User",
    "ValidationError",
    "validate_case",
    "SYSTEM_HIDDEN_FIELDS",
]

# A response header name as `http_volatile` lists it (RFC 9110 token), `*` at the end: a prefix.
_HEADER_NAME = re.compile(r"[!#$%&'+.^_`|~0-9A-Za-z-]+\*?")


def json_schema_problem(schema: Any) -> str | None:
    """Why `schema` (an `answer_schema`) is not a valid JSON Schema, or None. Checked when the
    case file is read, so a broken schema is named at once rather than never (a non-JSON answer
    fails the stage before the schema is looked at). Without the optional jsonschema package
    nothing is checked here: the schema stage names the package when it runs."""
    if isinstance(schema, bool):
        return None
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):  # not JSON: pydantic's own check of the field names it
        return None
    return _schema_text_problem(text)


@lru_cache(maxsize=64)
def _schema_text_problem(text: str) -> str | None:
    """json_schema_problem once per distinct schema: the cases of a suite usually share one."""
    try:
        import jsonschema  # optional and heavy: only for a file with an answer_schema
    except ImportError:
        return None
    schema = json.loads(text)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as error:
        where = "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path
        )
        return f"not a valid JSON Schema: {error.message} (at ${where} of the schema)"
    return None


def _checked_answer_schema(value: Any) -> Any:
    problem = None if value is None else json_schema_problem(value)
    if problem:
        raise ValueError(problem)
    return value


class ToolExpectation(BaseModel):
    """An expected tool call; `args`, when given, must match the call's arguments exactly."""

    model_config = ConfigDict(extra="forbid")
    name: str
    args: dict[str, Any] | None = None


class RubricItem(BaseModel):
    """A weighted rubric item; a plain string is an item of weight 1."""

    model_config = ConfigDict(extra="forbid")
    item: str = Field(min_length=1)
    weight: float = Field(1.0, gt=0, allow_inf_nan=False)


# A knowledge-graph edge as cases and traces state it: [subject, relation, object]; a label may
# be a whole number (`["Marie Curie", "born in year", 1867]`), compared as its digits.
TripleLabel = str | StrictInt
Triple = tuple[TripleLabel, TripleLabel, TripleLabel]


# Markers pytest (or a common plugin) acts on: a category named `xfail` would hide failures.
RESERVED_MARKERS = frozenset(
    {
        "skip",
        "skipif",
        "xfail",
        "parametrize",
        "usefixtures",
        "filterwarnings",
        "tryfirst",
        "trylast",
        "asyncio",
        "flaky",
        "repeat",
        "timeout",
    }
)


MaxToolCalls = Annotated[int, Field(ge=0)] | dict[str, Annotated[int, Field(ge=0)]] | None


class ContextId(BaseModel):
    """A gold context item given by id (`{"id": "D1:3"}`): the retrieved ids must hold it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)


class TurnModel(BaseModel):
    """One user message of a conversation case, with this turn's own expectations."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: str
    expected_tools: list[str | ToolExpectation] | None = None
    tool_order: Literal["any", "strict"] = "any"
    max_tool_calls: MaxToolCalls = None
    expected_docs: list[str] | None = None
    reference: str | None = None
    unanswerable: bool = False


class CaseModel(BaseModel):
    """One eval case as a case file states it. Unknown fields are kept: the system receives them
    with `input`. Validation only: a run keeps each case as a `Case` (see `validate_case`)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str = Field(min_length=1)
    input: str  # a conversation case may leave it out: its first turn's input
    category: str | None = None
    group: str | None = None
    marks: list[str] = []
    xfail: str | None = None
    skip: str | None = None
    expected_tools: list[str | ToolExpectation] | None = None
    # "strict": the expected tools are called in the listed order (others may come between).
    tool_order: Literal["any", "strict"] = "any"
    # At most this many tool calls in all, or per tool name ({"search_kb": 1}).
    max_tool_calls: MaxToolCalls = None
    expected_docs: list[str] | None = None
    reference: str | None = None
    # Other answers that count as the reference (a benchmark's aliases): the benchmark scorers
    # (musique_f1, 2wikimultihopqa_f1, ...) take the best over the reference and these.
    reference_aliases: list[str] | None = None
    # Gold supporting facts, [title, sentence index] pairs (HotpotQA, 2WikiMultihopQA): the
    # *_sp_f1 stages score the trace's `supporting_facts` against them.
    expected_facts: list[tuple[str, int]] | None = None
    # Gold context for the `context_coverage` stage: texts the retrieved context should contain,
    # or {"id": ...} objects the retrieved ids should hold.
    expected_context: list[str | ContextId] | None = None
    # Items the answer must rank, in the right order (the `kendall_tau` stage).
    expected_order: list[str] | None = None
    unanswerable: bool = False
    # Data files this case's system run reads, replacing the suite's `inputs` for this case
    # (None: the suite's). Keyed per case, so an edit stales only the cases that read the file.
    inputs: list[str] | None = None
    # The suite user whose data (conversations, documents, ...) this case asks about: its files
    # key the case, `setup_user` ingests them, and it is the case's group in the reports.
    user: str | None = Field(None, min_length=1)
    # Facts about the case for the people reading it (a benchmark's level, a trap answer): never
    # given to the system, never in a key.
    metadata: dict[str, Any] | None = None
    expected_triples: list[Triple] | None = None  # the `graph` stage's gold edges
    answer_schema: dict[str, Any] | bool | None = None  # the `schema` stage's JSON Schema
    rubric: list[str | RubricItem] | None = None  # the `rubric` stage's items
    # A conversation: user messages (strings, or objects with their own expectations).
    turns: list[str | TurnModel] | None = Field(None, min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _conversation_input(cls, raw: Any) -> Any:
        """A conversation's `input` is its first turn's; giving both would say it twice."""
        if isinstance(raw, dict) and isinstance(raw.get("turns"), list) and raw["turns"]:
            if "input" in raw:
                raise ValueError(
                    'a conversation case gives its messages in "turns"; remove "input" (the '
                    "first turn is the conversation's input)"
                )
            first = raw["turns"][0]
            first_input = first.get("input") if isinstance(first, dict) else first
            if isinstance(first_input, str):
                raw = {**raw, "input": first_input}
        return raw

    _answer_schema = field_validator("answer_schema")(_checked_answer_schema)

    @field_validator("rubric")
    @classmethod
    def _rubric_items(cls, value: Any) -> Any:
        if value is not None and not value:
            raise ValueError("give at least one rubric item, or leave the field out")
        for item in value or []:
            if isinstance(item, str) and not item.strip():
                raise ValueError("a rubric item is an empty string")
        return value

    @field_validator("category", "marks")
    @classmethod
    def _marker_safe(cls, value: Any) -> Any:
        names = value if isinstance(value, list) else [value] if value else []
        for name in names:
            if not name.isidentifier():
                raise ValueError(f"{name!r} cannot be a pytest marker: use letters, digits, _")
            if name in RESERVED_MARKERS:
                raise ValueError(f"{name!r} is a pytest marker with its own meaning; rename it")
        return value

    @model_validator(mode="after")
    def _user_is_the_group(self) -> CaseModel:
        if self.user is not None and self.group is not None and self.group != self.user:
            raise ValueError(
                f'a case of user {self.user!r} is grouped by its user: remove "group" '
                f"({self.group!r}) or make it the user's id"
            )
        return self


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a conversation case as a run keeps it."""

    input: str
    expected_tools: list[str | ToolExpectation] | None = None
    tool_order: str = "any"
    max_tool_calls: int | dict[str, int] | None = None
    expected_docs: list[str] | None = None
    reference: str | None = None
    unanswerable: bool = False

    @property
    def has_expectations(self) -> bool:
        return (
            self.expected_tools is not None
            or self.max_tool_calls is not None
            or self.expected_docs is not None
            or self.reference is not None
            or self.unanswerable
        )


@dataclass(frozen=True, slots=True)
class Case:
    """A validated case as a run keeps it, one per item: CaseModel's fields, with the unknown ones
    in `extra`. A pydantic instance costs ~1.5 KB, this ~0.2 KB (10,000 items: ~13 MB less)."""

    id: str
    input: str
    category: str | None = None
    group: str | None = None
    marks: tuple[str, ...] = ()
    xfail: str | None = None
    skip: str | None = None
    expected_tools: list[str | ToolExpectation] | None = None
    tool_order: str = "any"
    max_tool_calls: int | dict[str, int] | None = None
    expected_docs: list[str] | None = None
    reference: str | None = None
    reference_aliases: list[str] | None = None
    expected_facts: list[tuple[str, int]] | None = None
    expected_context: tuple[str | dict[str, str], ...] | None = None
    expected_order: list[str] | None = None
    unanswerable: bool = False
    inputs: tuple[str, ...] | None = None  # the case's own `inputs`, if it names them
    user: str | None = None  # the suite user the case belongs to (its group)
    metadata: dict[str, Any] | None = None
    expected_triples: list[Triple] | None = None
    answer_schema: dict[str, Any] | bool | None = None
    rubric: tuple[tuple[str, float], ...] | None = None  # (item, weight) pairs
    turns: tuple[Turn, ...] | None = None  # a conversation case's turns (None: one question)
    extra: dict[str, Any] | None = None  # the case file's other fields, for the system


def validate_case(raw: Any) -> Case:
    """One raw case from a case file, validated; raises ValidationError as CaseModel does."""
    model = CaseModel.model_validate(raw)
    fields = dict(model.__dict__)  # the declared fields (pydantic keeps extras apart)
    fields["marks"] = tuple(model.marks)
    if model.inputs is not None:
        fields["inputs"] = tuple(model.inputs)
    if model.user is not None:  # the user is the case's group
        fields["group"] = model.user
    if model.expected_context is not None:  # a tuple: 10,000 cases hold one each
        fields["expected_context"] = tuple(
            item if isinstance(item, str) else {"id": item.id} for item in model.expected_context
        )
    if model.rubric is not None:
        fields["rubric"] = tuple(
            (item, 1.0) if isinstance(item, str) else (item.item, item.weight)
            for item in model.rubric
        )
    if model.turns is not None:
        fields["turns"] = tuple(
            Turn(input=turn) if isinstance(turn, str) else Turn(**turn.__dict__)
            for turn in model.turns
        )
    if model.category:  # a marker name shared by many cases: one string object for all of them
        fields["category"] = sys.intern(model.category)
    # Values many cases repeat (a group or user, tool names, document ids): one string object
    # each, not one per case (10,000 cases: ~1.5 MB less).
    if fields["group"] is not None:
        fields["group"] = sys.intern(fields["group"])
    if model.user is not None:
        fields["user"] = sys.intern(model.user)
    if model.expected_tools is not None:
        fields["expected_tools"] = [
            sys.intern(tool) if isinstance(tool, str) else tool for tool in model.expected_tools
        ]
    if model.expected_docs is not None:
        fields["expected_docs"] = [sys.intern(doc) for doc in model.expected_docs]
    return Case(**fields, extra=model.model_extra or None)


# Fields that describe how to judge a case rather than what the system sees: they are kept out
# of the system's view and out of the trace's recording key, so editing them never needs a
# re-record (judged stages key the ones they read, e.g. `reference`, per verdict).
SYSTEM_HIDDEN_FIELDS = frozenset(
    {
        "id",
        "category",
        "group",
        "marks",
        "xfail",
        "skip",
        "expected_tools",
        "tool_order",
        "max_tool_calls",
        "expected_docs",
        "reference",
        "reference_aliases",
        "expected_facts",
        "expected_context",
        "expected_order",
        "unanswerable",
        "inputs",  # keyed by the files' contents, not by their names
        "metadata",
        "expected_triples",
        "answer_schema",
        "rubric",
    }
)


class User(BaseModel):
    """A suite user (a memory agent's tenant): an id and named data files, each a path or a list
    of paths relative to the rootdir. The plugin never reads inside them: it hashes them into
    the key of that user's cases, and hands their absolute paths to `setup_user(user)`."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str = Field(min_length=1)

    @model_validator(mode="after")
    def _files_only(self) -> User:
        for name, value in (self.model_extra or {}).items():
            paths = value if isinstance(value, list) else [value]
            if not paths or not all(isinstance(p, str) and p for p in paths):
                raise ValueError(
                    f"field {name!r} must be a file path or a non-empty list of file paths "
                    "(every field of a user but `id` names data files)"
                )
        return self

    def files(self) -> dict[str, list[str]]:
        """Field name -> its paths, in the order the suite lists them."""
        return {
            name: value if isinstance(value, list) else [value]
            for name, value in (self.model_extra or {}).items()
        }


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


class Suite(BaseModel):
    """A case file's suite-level settings (cases are validated separately, one by one)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    # "calibration" suites hold judge test cases and are loaded by calibration.collect instead.
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
    # Where an imported suite came from (`python -m pytest_evalcases import`): never read by a run.
    source: dict[str, Any] | None = None
    # Named totals over part of the suite (a paper's headline leaves some cases out).
    totals: list[Total] = []
    graph: GraphOptions | None = None
    citations: CitationOptions | None = None
    rubric: RubricOptions | None = None
    answer_schema: dict[str, Any] | bool | None = None  # the default of the cases' own
    # Case fields for the system whose names are near a case field's (`references`): without
    # this, such a field is taken for a typo of the case field and errors its case.
    system_fields: list[str] = []
    cases: list[Any]  # validated one by one, so one bad case errors only itself

    @property
    def rubric_scale(self) -> str:
        return self.rubric.scale if self.rubric is not None else "binary"

    def threshold_for(self, stage: str, default: float | None = None) -> float:
        if stage in self.thresholds:
            return self.thresholds[stage]
        return self.threshold if default is None else default

    @field_validator("totals")
    @classmethod
    def _distinct_totals(cls, totals: list[Total]) -> list[Total]:
        names = [total.name for total in totals]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"total names must be distinct: {', '.join(map(repr, repeated))}")
        return totals

    _answer_schema = field_validator("answer_schema")(_checked_answer_schema)

    @field_validator("http_ignore")
    @classmethod
    def _json_paths(cls, paths: list[str]) -> list[str]:
        for path in paths:
            parse_json_path(path)  # its ValueError names the path and the forms it reads
        return paths

    @field_validator("http_volatile")
    @classmethod
    def _volatile_entries(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            if entry.startswith("$"):
                parse_json_path(entry)
            elif not _HEADER_NAME.fullmatch(entry):
                raise ValueError(
                    f"{entry!r} is neither a JSONPath of a body field ('$.trace_id') nor a "
                    "response header name ('x-trace-id', or 'x-trace-*' for every header "
                    "starting so)"
                )
        return entries

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

    @field_validator("users")
    @classmethod
    def _unique_user_ids(cls, users: list[User]) -> list[User]:
        seen: set[str] = set()
        for user in users:
            if user.id in seen:
                raise ValueError(f"user id {user.id!r} is declared twice; user ids are unique")
            seen.add(user.id)
        return users
