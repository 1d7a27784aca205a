"""Importers: a local file in a benchmark's published format, or in another eval tool's own
format (DeepEval, promptfoo, inspect-ai, ragas), becomes a suite; a human-labelled set
(TruthfulQA, HaluEval general, a team's own labels) becomes a calibration suite.

One module a format (hotpotqa, musique, twowiki, locomo, zep; deepeval, promptfoo, inspect_ai,
ragas; truthfulqa, halueval, labelled); each has `FORMAT`, `DESCRIPTION` and
`parse(path, records) -> Parsed`, which checks every record (a problem is one
BenchmarkFormatError naming the record and the field), and may have `read(path) -> records`
(CSV, YAML; default: JSON or JSON Lines) and `OPTIONS` (the format's own options, e.g.
promptfoo's `input_var`); a format that is a folder (zep) has `load(path) -> (records, sha256)`
instead. A labelled set's Parsed says `"kind": "calibration"` in its suite fields.
`import_suite` then samples, builds the suite, its data files and any stage module, and writes
them all or nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..core.names import unsafe_id_reason, unsafe_suite_name_reason
from ..core.schema import ValidationError, validate_case
from ..core.suite_schema import Suite
from ..core.validation import format_validation_error, misspelled_fields
from ..domain.calibration_schema import CalibrationCase, CalibrationSuite
from . import (
    deepeval,
    halueval,
    hotpotqa,
    inspect_ai,
    labelled,
    locomo,
    musique,
    promptfoo,
    ragas,
    truthfulqa,
    twowiki,
    zep,
)
from .base import (
    IDS_FILE_CAP,
    BenchmarkFormatError,
    Parsed,
    TextFiles,
    Unit,
    read_file,
    read_records,
)
from .peer_files import recorded_count
from .sampling import (
    SAMPLING,
    STRATIFIED,
    check_stratum_field,
    named_cases,
    sample,
    stratified_sample,
)

EXCLUSIONS_FILE = "exclusions.json"
EXCLUSION_TOTAL = "without gold exclusions"
FORMATS: dict[str, ModuleType] = {
    module.FORMAT: module
    for module in (
        hotpotqa,
        musique,
        twowiki,
        locomo,
        zep,
        deepeval,
        promptfoo,
        inspect_ai,
        ragas,
        truthfulqa,
        halueval,
        labelled,
    )
}
# `--stratify label` keeps each label's share: a calibration case's label is its `expect`.
STRATUM_FIELDS = {"label": "expect"}
# A labelled set's suite judges each item once: a deterministic judge needs no more, and an LLM
# judge over hundreds of items costs a call each (raise the suite's "repeats" to measure spread).
LABELLED_REPEATS = 1

__all__ = ["FORMATS", "BenchmarkFormatError", "ImportOptions", "import_suite", "build_suite"]


@dataclass(slots=True)
class ImportOptions:
    format: str
    file: Path
    output: Path  # the suite file, e.g. cases/hotpot.json
    data_dir: Path  # where the corpus and the users' files go, e.g. data/hotpot
    root: Path  # the project's rootdir: the suite names its files relative to it
    limit: int | None = None
    seed: int = 0
    stratify: str | None = None  # a case field whose values keep their shares in the sample
    ids: Path | None = None  # a file naming exactly the cases to import (ids or 0-based indices)
    max_sessions: int | None = None  # LoCoMo: each conversation's first N sessions
    # a file of gold exclusions (ids or indices): a total that leaves them out
    exclude_ids: Path | None = None
    system: str | None = None
    name: str | None = None
    force: bool = False
    input_var: str | None = None  # promptfoo: the var that is the case's input
    stage: str | None = None  # labelled sets: the judged stage the cases test
    columns: dict[str, str] | None = None  # labelled FILE: role (input, label, ...) -> column
    label_threshold: float | None = None  # labelled FILE: a score label of at least this passes
    download: dict[str, Any] | None = None  # --download: the source's URL and hash (downloads.py)


def import_suite(options: ImportOptions) -> tuple[dict[str, Any], list[Path]]:
    """Read, check, sample, write. Returns the suite and the files written; raises
    BenchmarkFormatError (nothing written) for a bad file or bad options."""
    module = FORMATS[options.format]
    _check_paths(options)
    if hasattr(module, "load"):  # a folder (Zep's layout): its files read, and one digest
        records, file_sha256 = module.load(options.file)
    else:
        raw = read_file(options.file, what="the benchmark file")
        records = getattr(module, "read", read_records)(options.file)
        file_sha256 = hashlib.sha256(raw).hexdigest()
    if not records:
        raise BenchmarkFormatError(
            f"{options.file}: holds no records; check that it is the {options.format} file "
            "you meant"
        )
    own: dict[str, Any] = {}
    if options.max_sessions is not None:
        own["max_sessions"] = options.max_sessions
    if options.input_var is not None:
        own["input_var"] = options.input_var
    for name in ("stage", "columns", "label_threshold"):
        if getattr(options, name) is not None:
            own[name] = getattr(options, name)
    parsed = module.parse(options.file, records, **own)
    _check_unique_ids(options.file, parsed.units)
    if options.ids is not None:
        picked = named_cases(parsed.units, _read_ids(options.ids), str(options.ids))
    elif options.stratify is not None:
        field = STRATUM_FIELDS.get(options.stratify, options.stratify)
        check_stratum_field(parsed.units, field, str(options.file))
        picked = stratified_sample(parsed.units, options.limit, options.seed, field)
    else:
        picked = sample(parsed.units, options.limit, options.seed)
    excluded = None
    if options.exclude_ids is not None:
        named = named_cases(parsed.units, _read_ids(options.exclude_ids), str(options.exclude_ids))
        excluded = [unit.case["id"] for unit in named]
    if is_calibration(parsed):
        suite, files = build_calibration_suite(parsed, picked, options, file_sha256), {}
    else:
        suite, files = build_suite(parsed, picked, options, file_sha256, excluded)
    if options.download:  # --download: where the file came from, beside its own hash
        suite["source"]["download"] = options.download
    if is_calibration(parsed):
        _check_calibration_suite(options.file, suite)
    else:
        _check_suite(options.file, suite)
    written = _write_all({options.output: suite, **files}, options.force)
    return suite, written


def build_suite(
    parsed: Parsed,
    chosen: list[Unit],
    options: ImportOptions,
    file_sha256: str,
    excluded: list[str] | None = None,
) -> tuple[dict[str, Any], dict[Path, Any]]:
    """The suite document and its data files (path -> JSON content) for the sampled cases."""
    name = options.name or options.output.stem
    files: dict[Path, Any] = {}
    suite: dict[str, Any] = {"name": name}
    if options.system:
        suite["system"] = options.system
    corpus: dict[tuple[str, str], dict[str, str]] = {}
    for unit in chosen:
        for paragraph in unit.paragraphs:
            corpus.setdefault((paragraph["title"], paragraph["text"]), paragraph)
    if corpus:
        path = options.data_dir / "paragraphs.json"
        files[path] = list(corpus.values())
        suite["inputs"] = [_relative(path, options.root)]
    users_used = list(dict.fromkeys(u.case["user"] for u in chosen if u.case.get("user")))
    if users_used:
        suite["users"] = []
        for user_id in users_used:
            entry: dict[str, Any] = {"id": user_id}
            for field, content in parsed.users[user_id].items():
                if isinstance(content, TextFiles):  # files as they are, listed by the user
                    paths = [options.data_dir / name for name in content]
                    files.update(zip(paths, map(_Text, content.values()), strict=True))
                    entry[field] = [_relative(path, options.root) for path in paths]
                    continue
                path = options.data_dir / user_id / f"{field}.json"
                files[path] = content
                entry[field] = _relative(path, options.root)
            suite["users"].append(entry)
    suite.update(stages=parsed.stages, report_only=parsed.report_only, k=parsed.k)
    suite.update(parsed.suite_fields)
    modules = _stage_modules(parsed, options, name)
    if modules:
        suite["stage_modules"] = list(modules)
        files.update(modules.values())
    # A total may name only categories and ids the sample holds (a run refuses others).
    totals = _totals_within(parsed.totals, chosen)
    if excluded is not None:  # the excluded cases stay in the suite: only this total skips them
        kept = {unit.case["id"] for unit in chosen}
        excluded = [case_id for case_id in excluded if case_id in kept]
        path = options.data_dir / EXCLUSIONS_FILE
        files[path] = excluded
        base = parsed.exclusion_total or {"name": EXCLUSION_TOTAL, "exclude": {}}
        ids = {"ids": _relative(path, options.root)}
        totals += _totals_within([{**base, "exclude": {**base["exclude"], **ids}}], chosen)
    if totals:
        suite["totals"] = totals
    suite["source"] = _source(parsed, chosen, options, file_sha256, excluded)
    suite["cases"] = [unit.case for unit in chosen]
    return suite, files


def is_calibration(parsed: Parsed) -> bool:
    """A human-labelled set: its cases are judge test cases, its suite a calibration suite."""
    return parsed.suite_fields.get("kind") == "calibration"


def build_calibration_suite(
    parsed: Parsed, chosen: list[Unit], options: ImportOptions, file_sha256: str
) -> dict[str, Any]:
    """A calibration suite of the sampled judge test cases (no system, no data files)."""
    fields = {key: value for key, value in parsed.suite_fields.items() if key != "kind"}
    return {
        "name": options.name or options.output.stem,
        "kind": "calibration",
        "repeats": LABELLED_REPEATS,
        **fields,
        "source": _source(parsed, chosen, options, file_sha256, None),
        "cases": [unit.case for unit in chosen],
    }


def _source(
    parsed: Parsed,
    chosen: list[Unit],
    options: ImportOptions,
    file_sha256: str,
    excluded: list[str] | None,
) -> dict[str, Any]:
    """The suite's `source`: the file, its sha256 and how the cases were sampled from it."""
    source = {
        "format": options.format,
        "file": options.file.name,
        "sha256": file_sha256,
        "records": len(parsed.units),
        "cases": len(chosen),
        "limit": options.limit,
        "seed": options.seed,
        "sampling": _sampling(options),
        **parsed.source_notes,
    }
    if options.stage is not None:
        source["stage"] = options.stage
    if options.label_threshold is not None:
        source["label_threshold"] = options.label_threshold
    unmapped = [item for unit in chosen for item in unit.unmapped]
    if unmapped:
        source["unmapped"] = unmapped
    recorded = recorded_count([unit.case for unit in chosen])
    if recorded:
        source["recorded_outputs"] = recorded
    if options.exclude_ids is not None:
        source["exclusions"] = {
            "file": options.exclude_ids.name,
            "sha256": hashlib.sha256(_read_ids_file(options.exclude_ids)).hexdigest(),
            "cases": len(excluded or ()),
        }
    if options.ids is not None:
        source["ids"] = {
            "file": options.ids.name,
            "sha256": hashlib.sha256(_read_ids_file(options.ids)).hexdigest(),
        }
    return source


def _totals_within(totals: list[dict[str, Any]], chosen: list[Unit]) -> list[dict[str, Any]]:
    """The benchmark's totals with the categories the sampled cases lack left out."""
    present = {unit.case.get("category") for unit in chosen}
    within = []
    for total in totals:
        exclude = dict(total.get("exclude", {}))
        if "category" in exclude:
            exclude["category"] = [name for name in exclude["category"] if name in present]
        within.append({**total, "exclude": exclude})
    return within


def _stage_modules(
    parsed: Parsed, options: ImportOptions, suite_name: str
) -> dict[str, tuple[Path, str]]:
    """Module name -> (file, source) of each stage module, written next to the suite and
    imported by its dotted path from the rootdir (`cases.hotpot_promptfoo`)."""
    modules = {}
    folder = options.output.parent
    for key, source in parsed.modules.items():
        stem = re.sub(r"\W+", "_", f"{options.output.stem}_{key}").strip("_")
        path = folder / f"{stem}.py"
        parts = Path(_relative(path, options.root)).with_suffix("").parts
        if not all(part.isidentifier() for part in parts):
            raise BenchmarkFormatError(
                f"{path}: the suite's stage module would be imported as "
                f"{'.'.join(parts)!r}, which is not a module name; write the suite into a "
                "folder whose name is a Python identifier (e.g. cases/)"
            )
        text = source(folder.resolve(), _relative(options.output, options.root))
        modules[".".join(parts)] = (path, _Text(text))
    return modules


class _Text(str):
    """A file written as it is (a stage module), not as JSON."""


def _sampling(options: ImportOptions) -> str:
    if options.ids is not None:
        return "exactly the cases the ids file names, in file order"
    if options.limit is None:
        return "all cases, in file order"
    if options.stratify is not None:
        return STRATIFIED.format(field=options.stratify)
    return SAMPLING


def _read_ids(path: Path) -> list[str | int]:
    """A JSON array of ids (strings) and 0-based indices (integers), or a text file of one id or
    index a line (blank lines and `#` comments skipped)."""
    text = _read_ids_file(path).decode("utf-8-sig", errors="replace")
    if not text.lstrip().startswith("["):
        return [s for line in text.splitlines() if (s := line.split("#", 1)[0].strip())]
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BenchmarkFormatError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    if not isinstance(doc, list) or not all(
        isinstance(entry, str) or (isinstance(entry, int) and not isinstance(entry, bool))
        for entry in doc
    ):
        raise BenchmarkFormatError(
            f"{path}: a JSON ids file is an array of case ids (strings) and 0-based indices "
            "(integers)"
        )
    return doc


def _check_paths(options: ImportOptions) -> None:
    if options.format not in FORMATS:
        raise BenchmarkFormatError(
            f"unknown format {options.format!r}; known: {', '.join(FORMATS)}"
        )
    if options.limit is not None and options.limit < 1:
        raise BenchmarkFormatError(f"--limit {options.limit}: give at least 1 case")
    if options.ids is not None and (options.limit is not None or options.stratify is not None):
        raise BenchmarkFormatError(
            "--ids imports exactly the cases it names: leave out --limit and --stratify"
        )
    if options.stratify is not None and options.limit is None:
        raise BenchmarkFormatError(f"--stratify {options.stratify}: give --limit N as well")
    if options.input_var is not None and "input_var" not in getattr(
        FORMATS[options.format], "OPTIONS", ()
    ):
        raise BenchmarkFormatError("--input-var applies to promptfoo files only")
    _check_labelled_options(options)
    if options.max_sessions is not None:
        if options.format != "locomo":
            raise BenchmarkFormatError("--max-sessions applies to locomo files only")
        if options.max_sessions < 1:
            raise BenchmarkFormatError(f"--max-sessions {options.max_sessions}: keep at least 1")
    if options.output.suffix != ".json":
        raise BenchmarkFormatError(f"{options.output}: a suite file ends in .json")
    if not options.force and options.output.exists():
        raise BenchmarkFormatError(
            f"{options.output} exists; pass --force to replace it (its recordings go stale "
            "only where cases changed)"
        )
    for path, what in ((options.output, "the suite"), (options.data_dir, "the data folder")):
        if not path.resolve().is_relative_to(options.root.resolve()):
            raise BenchmarkFormatError(
                f"{path}: {what} must be inside the project ({options.root}), whose files the "
                "suite names; run the command from the project's root"
            )
    cases_dir = options.output.resolve().parent
    if options.data_dir.resolve().is_relative_to(cases_dir):
        raise BenchmarkFormatError(
            f"{options.data_dir}: the data folder is inside {cases_dir}, where its .json files "
            "would be collected as case files; pass --data with a folder outside it"
        )


def _read_ids_file(path: Path) -> bytes:
    return read_file(
        path,
        IDS_FILE_CAP,
        "the ids file",
        "an ids file holds case ids or 0-based indices, one a line (or a JSON array): check "
        "that it is the file you meant",
    )


def _check_labelled_options(options: ImportOptions) -> None:
    """The labelled sets' options go with the formats that read them, and the eval suites'
    options (a system, gold exclusions) not with a labelled set, which runs no system."""
    own = getattr(FORMATS[options.format], "OPTIONS", ())
    for name, flag, formats in (
        ("stage", "--stage", "truthfulqa and labelled files"),
        ("columns", "--input/--answer/--reference/--context/--label", "labelled files"),
        ("label_threshold", "--label-threshold", "labelled files"),
    ):
        if getattr(options, name) is not None and name not in own:
            raise BenchmarkFormatError(f"{flag} applies to {formats} only")
    labelled_set = options.format in (truthfulqa.FORMAT, halueval.FORMAT, labelled.FORMAT)
    if options.stratify == "label" and not labelled_set:
        raise BenchmarkFormatError(
            "--stratify label applies to labelled sets (truthfulqa, halueval, labelled), whose "
            "cases carry a label; stratify by category or user"
        )
    if labelled_set:
        for given, flag in ((options.system, "--system"), (options.exclude_ids, "--exclude-ids")):
            if given is not None:
                raise BenchmarkFormatError(
                    f"{flag}: a {options.format} file becomes a calibration suite, which runs "
                    "no system and has no totals; leave it out"
                )


def _check_unique_ids(path: Path, units: list[Unit]) -> None:

    seen: dict[str, int] = {}
    for index, unit in enumerate(units):
        case_id = unit.case["id"]
        unsafe = unsafe_id_reason(case_id)
        if unsafe:
            raise BenchmarkFormatError(
                f"{path}: case {index} has the id {case_id!r}, which cannot name a cassette "
                f"file: {unsafe}"
            )
        if case_id in seen:
            raise BenchmarkFormatError(
                f"{path}: case id {case_id!r} appears twice (cases {seen[case_id]} and "
                f"{index}); ids name the recordings, so they must be unique"
            )
        seen[case_id] = index


def _check_suite_name(suite: dict[str, Any]) -> None:
    unsafe = unsafe_suite_name_reason(suite["name"])
    if unsafe:
        raise BenchmarkFormatError(
            f"suite name {suite['name']!r} cannot name the cassette folder: {unsafe}; pass "
            "another --name"
        )


def _check_suite(path: Path, suite: dict[str, Any]) -> None:
    """What was built is a suite the plugin loads (e.g. no category is a reserved marker)."""
    _check_suite_name(suite)
    problems = []
    try:
        Suite.model_validate(suite)
        for index, case in enumerate(suite["cases"]):
            extra = validate_case(case).extra
            for line in misspelled_fields(extra, suite.get("system_fields", ())):
                problems.append(f"cases[{index}].{line}")
    except ValidationError as exc:
        problems.append(format_validation_error(exc))
    if problems:
        raise BenchmarkFormatError(
            f"{path}: the imported suite would not load:\n" + "\n".join(problems)
        )


def _check_calibration_suite(path: Path, suite: dict[str, Any]) -> None:
    """What was built is a calibration suite the plugin loads, every case included."""
    _check_suite_name(suite)
    prefix = ""
    try:
        checked = CalibrationSuite.model_validate(suite)
        for index, case in enumerate(suite["cases"]):
            prefix = f"cases[{index}] ({case['id']})"
            CalibrationCase.model_validate(case, context={"declared": checked.judged_stages})
    except ValidationError as exc:
        raise BenchmarkFormatError(
            f"{path}: the imported calibration suite would not load:\n"
            + format_validation_error(exc, prefix=prefix)
        ) from None


def _relative(path: Path, root: Path) -> str:
    return Path(os.path.relpath(path.resolve(), root.resolve())).as_posix()


def _write_all(documents: dict[Path, Any], force: bool) -> list[Path]:
    """Every file as `<name>.tmp.<pid>` first, then all renamed: a failure before the renames
    leaves nothing behind."""
    staged: list[tuple[Path, Path]] = []
    try:
        for path, content in documents.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
            text = (
                content
                if isinstance(content, _Text)
                else json.dumps(content, indent=1, ensure_ascii=False) + "\n"
            )
            tmp.write_text(text, encoding="utf-8")
            staged.append((tmp, path))
        for tmp, path in staged:
            os.replace(tmp, path)
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
    return [path for _, path in staged]
