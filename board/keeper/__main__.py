"""``python -m board.keeper``: the ``keeper`` command."""

from .cli import main

main()
