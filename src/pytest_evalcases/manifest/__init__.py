"""The run manifest: what a run was configured with (results.json `run.config`, manifest.json),
and the check of a run against a locked manifest (`--eval-manifest FILE`).

`config` and `lock` are pure; `project` reads the case folders through the collection code.
"""

from __future__ import annotations

from .config import package_versions, readable, suite_config
from .lock import (
    MANIFEST_FORMAT,
    MANIFEST_JSON,
    ManifestError,
    config_differences,
    dumps_manifest,
    load_manifest,
    manifest_document,
    refusal,
)

__all__ = [
    "MANIFEST_FORMAT",
    "MANIFEST_JSON",
    "ManifestError",
    "config_differences",
    "dumps_manifest",
    "load_manifest",
    "manifest_document",
    "package_versions",
    "readable",
    "refusal",
    "suite_config",
]
