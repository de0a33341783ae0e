"""The routines runner: fires each approved routine at its times, as a client of the board.

``schedule`` says what a schedule means (the board uses it too); ``runner`` is the
APScheduler loop; ``importer`` turns ``docs/routines/<name>/`` into proposals.
"""
