"""Public import path of the baseline gate (`pytest_evalcases.baseline.compare`); it lives in
`report/baseline.py`. Nothing inside the package imports this module."""

from .report.baseline import *  # noqa: F403
from .report.baseline import __all__  # noqa: F401
