"""The service layer: every transport calls these functions with a resolved principal.

Authorization and workspace scope are decided here, never in a handler alone.
Each module holds the rules of one concept; the SQL lives in ``board.server.store``.
"""
