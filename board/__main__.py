"""``python -m board``: the ``board`` command."""

from .cli import main

main()
