"""The knowledge base: Markdown documents kept as append-only revisions with trust states.

One module per job, and the transports import the one they call:

- ``inputs``: what callers send (the request and query types the routes parse).
- ``documents``: writes, deletes and the compare-and-set on ``base_revision``.
- ``moderation``: disputes, review of proposals (and its queue), redaction.
- ``reads``: lists, search, one document or part of it, history, diffs.
- ``head``: what a document shows, recomputed after every change.
- ``sources``: the references a revision or dispute cites, checked in scope.
- ``render``: stored rows as the API shows them.
- ``counts``: shown/read counters, gathered in memory on the context.
- ``text``, ``pack``, ``prompt``: text rules, the pack and stats, the prompt's parts.

What a document shows: its newest accepted (``settled`` or ``superseded``)
revision, or, while none is accepted, its newest proposal (``proposed``,
unverified). A newer proposal is returned beside it as ``proposal``.
``rejected`` revisions stay in history and are never shown.
"""
