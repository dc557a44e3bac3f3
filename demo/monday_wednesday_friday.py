"""Monday/Wednesday/Friday: memory that lasts across conversations.

Run: ``python demo/monday_wednesday_friday.py [--check] [--json PATH] [--keep]``
(the same as ``mem01session demo``). Offline with nothing configured; real models when
OPENAI_API_KEY is set.
"""

import typer

from mem01session.cli.demo import demo

if __name__ == "__main__":
    typer.run(demo)
