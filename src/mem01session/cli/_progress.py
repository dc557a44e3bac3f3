"""A progress column for rich's bars: how many things per second."""

from __future__ import annotations

from rich.progress import ProgressColumn, Task
from rich.text import Text


class Rate(ProgressColumn):
    """``1,234 turns/s`` (nothing until there is a rate)."""

    def __init__(self, unit: str = "records") -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.speed
        return Text(f"{speed:,.0f} {self.unit}/s" if speed else "")
