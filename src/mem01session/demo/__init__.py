"""The Monday/Wednesday/Friday demo (``mem01session demo``) and its offline answering model."""

from .offline_model import OfflineAnswerModel
from .report import Check, DemoReport
from .run import run_demo

__all__ = ["Check", "DemoReport", "OfflineAnswerModel", "run_demo"]
