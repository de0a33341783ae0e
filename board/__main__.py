"""``python -m board``: the ``board`` command, for when it is not on PATH."""

from .cli import main

main()
