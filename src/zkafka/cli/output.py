"""How every `zkafka` command writes: the one console policy of the CLI.

* Results and status go to stdout, progress and warnings to stderr (`console()` and
  `console(stderr=True)`; plain `print` follows the same rule).
* Libraries keep quiet (`quiet_libraries`): kazoo's connection warnings say in many lines what
  the command's own progress or one-line error says, unless --log-level asks for them.
* On a terminal a console is rich's usual one: the terminal's width, colours.
* Redirected (a pipe, a file, a CI log): no colour or cursor codes, and no wrapping. rich would
  otherwise wrap at 80 columns (or `$COLUMNS`), breaking table rows and paths over several lines
  that `grep` and `cut` then cannot read; here a table is as wide as its content and a line of
  text is never broken.

rich is imported when a console is built, not when this module is: `--help` and commands that
print plain lines do not load it.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

UNWRAPPED_WIDTH = 4096
"""The width of a console that is not a terminal: wider than any table or line we print."""

RULE_WIDTH = 100
"""Section rules (`heading`) when not on a terminal: a rule has no content width to fit."""


def console(*, stderr: bool = False) -> Console:
    """A rich console on stdout (or stderr) following the policy above."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if _is_terminal(stream):
        return Console(file=stream, highlight=False)
    return Console(
        file=stream,
        force_terminal=False,
        color_system=None,
        width=UNWRAPPED_WIDTH,
        soft_wrap=True,
        highlight=False,
        emoji=False,
    )


def heading(out: Console, title: str) -> None:
    """A section rule with `title`: the terminal's width on a terminal, `RULE_WIDTH` otherwise."""
    from rich.rule import Rule

    out.print(Rule(title), width=None if out.is_terminal else RULE_WIDTH)


def print_table(out: Console, table: Table) -> None:
    """Print `table`; not on a terminal, its title goes on a line of its own first (rich would wrap
    a title longer than the table to the table's width)."""
    if not out.is_terminal and table.title is not None:
        out.out(str(table.title))
        table.title = None
    out.print(table)


def quiet_libraries() -> None:
    """Silence kazoo's connection warnings (a dropped or refused connection, each reconnect attempt)
    unless the user lowered --log-level below WARNING to see them."""
    if logging.getLogger().getEffectiveLevel() >= logging.WARNING:
        logging.getLogger("kazoo").setLevel(logging.ERROR)


def _is_terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # closed
        return False
