"""The calibration case-file contract: a suite of judge test cases."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ..core.field_checks import checked_marker_names
from ..core.suite_schema import DECLARED_NAME, JudgedStageOptions
from .stages.judged import JUDGE_READS, OWN_SCORER

# The judged stages a calibration case can test: those scored from the verdict alone (a rubric
# is graded against the case's own items, which calibration cases do not have).
CALIBRATED_STAGES = tuple(name for name in JUDGE_READS if name not in OWN_SCORER)

DEFAULT_REPEATS = 3


class StageOptions(BaseModel):
    """Options of one judged stage (`"faithfulness": {"strict": true}`), per suite or per case;
    unset fields fall back on the suite's block, then on the defaults of ordinary suites."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    strict: bool | None = None
    accept_partial: bool | None = None
    correctness_criteria: str | None = None
    threshold: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)


def _stage_blocks(raw: Any) -> Any:
    """Move `"<judged stage>": {...}` blocks into `stage_options` (the issue's own spelling)."""
    if not isinstance(raw, dict):
        return raw
    blocks = {name: raw[name] for name in CALIBRATED_STAGES if name in raw}
    if not blocks:
        return raw
    rest = {key: value for key, value in raw.items() if key not in blocks}
    return {**rest, "stage_options": blocks}


class CalibrationCase(BaseModel):
    """One judge test case: the material a judged stage reads, and the verdict expected."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    # a judged stage of CALIBRATED_STAGES, or one the suite declares (`judged_stages`: the
    # validation context's "declared", name -> its options)
    stage: str
    input: str = ""
    answer: str = ""
    context: list[str] = []
    reference: str | None = None
    unanswerable: bool = False
    expect: Literal["fail", "pass"]
    defect: str | None = None
    xfail: str | None = None
    skip: str | None = None
    stage_options: dict[str, StageOptions] = {}
    # A labelled set's grouping (TruthfulQA's category), for figures per category; not keyed.
    category: str | None = None
    # What the source says of the item beyond the material (its type, the spans people marked):
    # shown to a reviewer, never read by the judge, so editing it never needs a re-record.
    metadata: dict[str, Any] | None = None

    _blocks = model_validator(mode="before")(_stage_blocks)
    _marker_safe = field_validator("category")(checked_marker_names)

    @field_validator("stage")
    @classmethod
    def _judged_stage(cls, stage: str, info: ValidationInfo) -> str:
        declared = (info.context or {}).get("declared") or {}
        if stage not in CALIBRATED_STAGES and stage not in declared:
            known = ", ".join(repr(name) for name in (*CALIBRATED_STAGES, *declared))
            raise ValueError(f"stage {stage!r} is not a judged stage to calibrate; one of {known}")
        return stage

    @model_validator(mode="after")
    def _defect_named(self, info: ValidationInfo) -> CalibrationCase:
        others = sorted(set(self.stage_options) - {self.stage})
        if others:
            raise ValueError(
                f"options for {', '.join(others)} in a case judged at {self.stage}: a case "
                f'holds options of its own stage only ("{self.stage}": {{...}})'
            )
        if self.expect == "fail" and not self.defect:
            raise ValueError(
                'a case with "expect": "fail" plants a defect: describe it in "defect" '
                '(e.g. "claims --format csv removes colour codes")'
            )
        declared = ((info.context or {}).get("declared") or {}).get(self.stage)
        reads = JUDGE_READS[self.stage] if declared is None else declared.reads
        if (
            self.reference is None
            and "reference" in reads
            and not (self.stage == "answer_accuracy" and self.unanswerable)
        ):
            raise ValueError(
                f'stage {self.stage} reads a "reference" (the golden answer the judge compares '
                "with): give the case one"
            )
        if self.expect == "pass" and self.defect:
            raise ValueError(
                '"defect" describes a planted defect: a control ("expect": '
                '"pass") has none; remove it or set "expect": "fail"'
            )
        return self


class HumanAgreement(BaseModel):
    """How far the people who labelled a set agree with each other, as its source reports it
    (HaluEval: Fleiss' kappa 0.811, three annotators): the ceiling a judge can be held to on
    those labels, printed beside the judge's own agreement."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    statistic: Literal["fleiss_kappa", "cohen_kappa", "krippendorff_alpha", "percent_agreement"]
    value: float = Field(ge=-1, le=1, allow_inf_nan=False)
    annotators: int | None = Field(None, ge=2)
    source: str = Field(min_length=1)


class CalibrationSuite(BaseModel):
    """A calibration suite's settings (cases are validated one by one)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    kind: Literal["calibration"]
    version: int = 1
    judge: str | None = None
    repeats: int = Field(DEFAULT_REPEATS, ge=1)
    threshold: float = Field(0.5, ge=0, le=1, allow_inf_nan=False)
    stage_options: dict[str, StageOptions] = {}
    # Judged stages of the suite's own, as an eval suite declares them: its cases may test them.
    judged_stages: dict[Annotated[str, Field(pattern=DECLARED_NAME)], JudgedStageOptions] = {}
    # A labelled set's source agreement between people (set by the HaluEval importer).
    human_agreement: HumanAgreement | None = None
    # Where an imported set came from (file, sha256, sampling), as the importers write it.
    source: dict[str, Any] | None = None
    cases: list[Any]

    _blocks = model_validator(mode="before")(_stage_blocks)

    @field_validator("judged_stages")
    @classmethod
    def _own_names(cls, declared: dict[str, JudgedStageOptions]) -> dict[str, JudgedStageOptions]:
        taken = [name for name in declared if name in JUDGE_READS]
        if taken:
            raise ValueError(
                f"{', '.join(map(repr, taken))}: the name of a built-in judged stage; give "
                "yours another name"
            )
        return declared

    def options_for(self, case: CalibrationCase) -> dict[str, Any]:
        """The stage options a case is judged and scored with: the case's block, then the
        suite's, then the defaults of ordinary suites."""
        merged: dict[str, Any] = {"threshold": self.threshold}
        for block in (self.stage_options.get(case.stage), case.stage_options.get(case.stage)):
            if block is not None:
                merged.update(block.model_dump(exclude_none=True))
        return merged
