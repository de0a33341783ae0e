"""The store: the only code that speaks SQL.

``db`` owns the connections (one writer task with group commit, a pool of
readers); the other modules hold the queries of one table family each and
take a connection as their first argument.
"""
