"""pytest-evalcases. What a project's own code uses is here: `stage` and `Score`, to declare
stages of its own (docs/extending.md). The package root is loaded in every pytest run, so it
imports nothing heavy: a declaration is only recorded here, and becomes a stage when a suite
is collected."""

from .core.stage_declarations import Score, stage

__version__ = "0.1.0"

__all__ = ["Score", "__version__", "stage"]
