"""One suite's configuration, and the versions of the packages that score, as plain dicts.

Readable where a person can read a value (a model name, a temperature), a hash where not (a
prompt of 2,000 characters): the same rule as the labels beside cassette keys.
"""

from __future__ import annotations

import json
import math
import platform
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..core.hashing import LABEL_CHARS, content_hash

if TYPE_CHECKING:
    from ..domain.context import SuiteContext

# Suite settings longer than this (as JSON) are kept as a hash: criteria texts, alias maps.
SETTING_CHARS = 200
# Suite fields the suite's entry shows under their own names (the rest go under `settings`).
_OWN_FIELDS = frozenset(
    {
        "cases",
        "name",
        "system",
        "version",
        "stages",
        "report_only",
        "inputs",
        "judge",
        "code",
        "threshold",
        "thresholds",
    }
)
# The packages whose versions change what a run scores or how it runs (deepeval: the metrics).
VERSIONED_PACKAGES = ("pytest", "pydantic", "deepeval")


def readable(value: Any, limit: int = LABEL_CHARS) -> Any:
    """A value as the manifest shows it: a string of at most `limit` characters, a finite
    number, a bool or null as itself; anything else as `{"hash": <content hash>}`."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            return {"hash": content_hash(repr(value))}
        return value if len(json.dumps(value)) <= limit else {"hash": content_hash(value)}
    if isinstance(value, str) and len(value) <= limit:
        return value
    try:
        return {"hash": content_hash(value)}
    except (TypeError, ValueError):  # not JSON: the key check names it; here, its text
        return {"hash": content_hash(repr(value))}


def _setting(value: Any) -> Any:
    """A suite setting as itself while its JSON is short, else its hash."""
    try:
        text = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return readable(value)
    return value if len(text) <= SETTING_CHARS else {"hash": content_hash(value)}


def suite_config(
    ctx: SuiteContext,
    file: str,
    file_hash: str,
    case_count: int,
    case_inputs: Mapping[str, str],
    judge_version: str | None,
) -> dict[str, Any]:
    """What one suite runs with: its file (and the hash of its cases), system, version, stages,
    thresholds, judge, fingerprint values, inputs with their hashes, code hashes, settings."""
    suite = ctx.suite
    settings = {
        name: _setting(value)
        for name, value in suite.model_dump(mode="json").items()
        if name not in _OWN_FIELDS
    }
    return {
        "file": file,
        "file_hash": file_hash,
        "cases": case_count,
        "system": ctx.system.spec,
        "version": suite.version,
        "stages": list(suite.stages),
        "report_only": list(ctx.report_only),
        "threshold": suite.threshold,
        "thresholds": dict(sorted(suite.thresholds.items())),
        "judge": ctx.judge_spec,
        "judge_version": judge_version,
        # verdicts per judged stage, system runs per case (null: as recorded)
        "judge_repeats": getattr(ctx, "judge_repeats", None),
        "runs": getattr(ctx, "runs", None),
        "fingerprint": {name: readable(v) for name, v in sorted(ctx.system.fingerprint().items())},
        "inputs": dict(sorted(ctx.input_fields.items())),
        "case_inputs": dict(sorted(case_inputs.items())),
        "code": {
            name.removeprefix("code."): digest
            for name, digest in sorted(ctx.key_fields.items())
            if name.startswith("code.")
        },
        "settings": dict(sorted(settings.items())),
        **_users(ctx),
        **({"ingestion": suite.ingestion} if suite.ingestion is not None else {}),
    }


def _users(ctx: SuiteContext) -> dict[str, Any]:
    """A suite with users: each user's files, as the hash its key field `user.<id>` holds (or
    why they cannot be read), so an edited user file changes the manifest as an input does."""
    users = getattr(ctx, "users", None)
    if users is None:
        return {}
    return {
        "users": {
            user_id: user.key_hash if hasattr(user, "key_hash") else f"unreadable: {user}"
            for user_id, user in sorted(users.items())
        }
    }


def calibration_config(
    ctx: Any, file: str, file_hash: str, case_count: int, judge_version: str | None
) -> dict[str, Any]:
    """A calibration suite (judge test cases, no system): its file, judge and settings."""
    settings = {
        name: _setting(value)
        for name, value in ctx.suite.model_dump(mode="json").items()
        if name not in ("cases", "name", "judge", "kind")
    }
    return {
        "file": file,
        "file_hash": file_hash,
        "cases": case_count,
        "kind": "calibration",
        "judge": ctx.judge_spec,
        "judge_version": judge_version,
        "settings": dict(sorted(settings.items())),
    }


def package_versions() -> dict[str, str | None]:
    """The plugin's, Python's and the scoring packages' versions (None: not installed). Read
    from the installed metadata: nothing is imported."""
    found: dict[str, str | None] = {
        "pytest-evalcases": __version__,
        "python": platform.python_version(),
    }
    for name in VERSIONED_PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found
