"""Public import path of the case and trace models (`pytest_evalcases.schema.Trace`); they live
in `core/schema.py`. Nothing inside the package imports this module."""

from .core.schema import *  # noqa: F403
from .core.schema import __all__  # noqa: F401
