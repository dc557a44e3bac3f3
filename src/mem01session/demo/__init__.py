"""The Monday/Wednesday/Friday demo (``mem01session demo``)."""

from .report import Check, DemoReport
from .run import run_demo

__all__ = ["Check", "DemoReport", "run_demo"]
