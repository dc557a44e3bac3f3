"""Help text that reads well at any width.

The commands' help comes from their docstrings, wrapped at 88 columns in the source;
typer prints those line breaks as they are, so a paragraph came out ragged at 80 columns
(a full line, then two words, then a full line). :func:`reflow` joins the lines of each
paragraph so that the terminal wraps them instead; a line that starts with ``Example`` or
is indented (a command to copy) keeps its own line. Options that take no value (``--yes``)
get no type column (recent typer releases print ``<bool>`` there).

:class:`TidyCommand` and :class:`TidyGroup` apply both; every command of the ``mem01session``
tree is made with one of them (checked by the tests).
"""

from __future__ import annotations

import inspect
from typing import Any

from typer.core import TyperCommand, TyperGroup


def reflow(text: str | None) -> str | None:
    """``text`` with the line breaks inside each paragraph removed (see the module doc)."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(_paragraph(p) for p in paragraphs)


def _paragraph(paragraph: str) -> str:
    lines: list[str] = []
    for line in paragraph.splitlines():
        own_line = line.startswith((" ", "\t", "Example")) or not lines
        if own_line:
            lines.append(line.rstrip())
        else:
            lines[-1] += " " + line.strip()
    return "\n".join(lines)


def _no_type_for_flags(params: list[Any]) -> None:
    for param in params:
        if getattr(param, "is_flag", False) and getattr(param, "metavar", None) is None:
            param.metavar = ""  # typer prints the metavar, if any, instead of "<bool>"


class TidyCommand(TyperCommand):
    """A command whose help is reflowed and whose flags show no type."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _tidy(self)

    def get_help_option(self, ctx: Any) -> Any:
        return _untyped(super().get_help_option(ctx))


class TidyGroup(TyperGroup):
    """A command group whose help is reflowed and whose flags show no type."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _tidy(self)

    def get_help_option(self, ctx: Any) -> Any:
        return _untyped(super().get_help_option(ctx))


def _tidy(command: TyperCommand | TyperGroup) -> None:
    command.help = reflow(command.help)
    _no_type_for_flags(command.params)


def _untyped(option: Any) -> Any:
    if option is not None:
        _no_type_for_flags([option])
    return option
