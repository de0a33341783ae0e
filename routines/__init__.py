"""The routines runner: fires each approved routine at its times, as a client of the board.

A package of its own beside ``board``, shipped in the same wheel; it reaches the
board only through ``board.client``.

``schedule`` says what a schedule means (the board uses it too); ``runner`` is the
APScheduler loop; ``importer`` turns ``<folder>/<name>/`` into proposals, by default the
routines shipped in ``shipped/``.
"""
