"""The stage registry: a stage is one small module that registers itself here."""

from __future__ import annotations

from .base import Stage, StageResult, skipped

STAGES: dict[str, Stage] = {}


def register(stage: Stage) -> Stage:
    STAGES[stage.name] = stage
    return stage


# Imported for their registrations; order is the order `known stages` are listed in.
from . import tools, retrieval, text, judged  # noqa: E402,F401,I001

__all__ = ["STAGES", "Stage", "StageResult", "register", "skipped"]
