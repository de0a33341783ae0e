"""Sending the outbox: one sender per kind of destination, and the dispatcher that runs them.

Services only enqueue (``services/outbound.py``, inside the write of the event); this
package sends what committed. The dispatcher (:mod:`.dispatch`) takes due ``pending``
rows, marks them ``sending`` in a write of its own, calls the sender of each row's
destination kind with a timeout, and records the outcome: ``sent``, ``pending`` again
with exponential backoff, or ``failed`` with its error after the last attempt.

Adding a kind of destination (say ``matrix``: a message in a Matrix room) is three steps:

1. a module here with one coroutine function decorated ``@sender("matrix")``; it is
   given a :class:`~.senders.Delivery` (the row as a :class:`~.senders.Note`, the
   destination's kind and decoded settings, the board's HTTP session and the send
   timeout) and returns on success or raises :class:`~.senders.SendFailed` with a
   message fit for the log page (never a secret);
2. the kind added to ``destinations.kind``'s CHECK in a migration, and to
   ``services/destinations.py`` ``FIELDS`` (which settings it takes, which are secret);
3. the module imported in :mod:`.dispatch` so its decorator runs.

The ``forge`` kind (``forge.py``: replies out to a GitHub or Forgejo issue,
``services/replies.py``) is the one whose rows name no human's destination: such a row
names an intake source, a repository and an issue instead (migration 0029), and the
dispatcher reads the source's settings, its API token included, when it sends the row.
A sender may return the id the receiver gave what it took (the forge's comment id); it
is kept in the row's ``remote_id``.

The registry is a dict from kind to function, nothing more: a sender is looked up by
the row's destination kind when the row is sent.
"""
