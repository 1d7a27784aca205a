"""HaluEval "general" (`general_data.json`, JSON Lines): ChatGPT responses to user queries, each
labelled by three human annotators, as a calibration suite of judge test cases.

    {"ID", "user_query", "chatgpt_response", "hallucination": "yes" | "no",
     "hallucination_spans": [...]}

(HaluEval's first release names the label `hallucination_label`, "Yes" | "No", without spans:
read as well.)

Each response is a case judged at `factual_support`, a judged stage the suite declares (no
built-in stage checks facts without retrieved context or a golden answer): `hallucination: yes`
(the annotators' majority) is `"expect": "fail"`; the spans people marked are kept in `metadata`
and quoted in the case's `defect`, so a missed hallucination's failure shows what people saw.
The suite records the annotators' agreement HaluEval reports (`human_agreement`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Parsed, RecordReader, Unit

FORMAT = "halueval"
DESCRIPTION = "HaluEval general: ChatGPT responses labelled hallucinated or not by people"
STAGE = "factual_support"
CRITERIA = (
    "The response to the user's query states only facts that are true: no invented or false "
    "facts, names, numbers, dates, quotations or sources. There is no retrieved context: judge "
    "the facts themselves. A response that declines, or says what it cannot do, is supported."
)
HUMAN_AGREEMENT = {
    "statistic": "fleiss_kappa",
    "value": 0.811,
    "annotators": 3,
    "source": "HaluEval (Li et al., EMNLP 2023): three annotators labelled each general-query "
    "response; their agreement, Fleiss' kappa 0.811",
}
LABELS = {"yes": "fail", "no": "pass"}
SPAN_SHOWN = 160  # characters of each span the failure message quotes (metadata keeps all)
NEXT_STEP = "; expected HaluEval's general_data.json (one JSON record a line)"
FIRST_RELEASE_FIELD = "hallucination_label"  # the label's name in HaluEval's first release


def parse(path: Path, records: list[Any]) -> Parsed:
    return Parsed(
        [
            _unit(RecordReader(path, i, record, None, next_step=NEXT_STEP))
            for i, record in enumerate(records)
        ],
        stages=[],
        report_only=[],
        suite_fields={
            "kind": "calibration",
            "judged_stages": {STAGE: {"criteria": CRITERIA, "reads": ["input", "answer"]}},
            "human_agreement": HUMAN_AGREEMENT,
        },
    )


def _unit(reader: RecordReader) -> Unit:
    raw_id = reader.get("ID", (str, int))
    reader.id = str(raw_id)
    # The first release named the field `hallucination_label` ("Yes"/"No"); the current one
    # `hallucination` ("yes"/"no"): either is read.
    field = "hallucination"
    if reader.get(field, str, required=False) is None:
        if reader.get(FIRST_RELEASE_FIELD, str, required=False) is None:
            raise reader.error(field, f"is missing (and so is {FIRST_RELEASE_FIELD!r})")
        field = FIRST_RELEASE_FIELD
    label = reader.text(field).strip().lower()
    if label not in LABELS:
        raise reader.error(field, f"is {label!r}, expected 'yes' or 'no'")
    spans = reader.get("hallucination_spans", list, required=False) or []
    if not all(isinstance(span, str) for span in spans):
        raise reader.error("hallucination_spans", "must be a list of strings")
    case: dict[str, Any] = {
        "id": f"halueval-{raw_id}",
        "stage": STAGE,
        "input": reader.text("user_query"),
        "answer": reader.get("chatgpt_response", str),
        "expect": LABELS[label],
    }
    if case["expect"] == "fail":
        case["defect"] = defect(spans)
    case["metadata"] = {"id": str(raw_id), "hallucination": label, "hallucination_spans": spans}
    return Unit(case)


def defect(spans: list[str]) -> str:
    """`hallucinated (the annotators' majority): "6. hear (to perceive ...)"`."""
    said = "hallucinated (the annotators' majority)"
    if not spans:
        return f"{said}; no span marked"
    quoted = []
    for span in spans:
        flat = " ".join(span.split())
        quoted.append(f'"{flat[:SPAN_SHOWN]}{"..." if len(flat) > SPAN_SHOWN else ""}"')
    return f"{said}: {'; '.join(quoted)}"
