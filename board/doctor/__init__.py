"""``board doctor``: what is wrong with this board, one line per check, each with what to do.

It runs on the board's machine. Each check is a small function returning
:class:`~.check.Check` lines: ``host`` looks at what is on this machine (the
board's answer, the database file, the settings, pid and lock files, free
disk), ``fleet`` at what the board knows of its keepers, bots and routines
runner, read through the service layer on a read-only store. Nothing is ever
written. ``run`` puts them together.
"""
