"""Who may call each routine route: the expected status per role, on populated data.

Roles: ``human`` (alice), ``bot`` (pb, in proj), ``admin_bot`` (ab, in admin),
``other_bot`` (ob, in another workspace), ``runner`` (the board's runner token)
and ``anon``. The data: routine ``nightly`` of proj, proposed by pb, its first
version approved by alice and a second pending; each call is the representative
one ``test_routines_scope.py`` makes. Bots propose; only a human decides; only
the runner creates, starts and finishes runs.
"""

from __future__ import annotations

ROLES = ("human", "bot", "admin_bot", "other_bot", "runner", "anon")


def _decide(human: int, bot: int, admin_bot: int, other_bot: int, runner: int) -> dict[str, int]:
    return {
        "human": human,
        "bot": bot,
        "admin_bot": admin_bot,
        "other_bot": other_bot,
        "runner": runner,
        "anon": 401,
    }


HUMANS_DECIDE = _decide(200, 403, 403, 404, 403)
RUNNER_ONLY = _decide(403, 403, 403, 403, 200)  # refused whatever the routine

ROUTINE_DECISIONS: dict[tuple[str, str], dict[str, int]] = {
    ("GET", "/api/routines"): _decide(200, 200, 200, 200, 200),
    ("POST", "/api/routines"): _decide(201, 201, 201, 404, 403),
    ("GET", "/api/routines/{name}"): _decide(200, 200, 200, 404, 200),
    ("POST", "/api/routines/{name}/versions"): _decide(201, 201, 201, 404, 403),
    ("POST", "/api/routines/{name}/versions/{v}/approve"): HUMANS_DECIDE,
    ("POST", "/api/routines/{name}/versions/{v}/reject"): HUMANS_DECIDE,
    ("POST", "/api/routines/{name}/pause"): HUMANS_DECIDE,
    ("POST", "/api/routines/{name}/resume"): HUMANS_DECIDE,
    ("POST", "/api/routines/{name}/run-now"): _decide(201, 403, 403, 404, 403),
    ("GET", "/api/routines/{name}/runs"): _decide(200, 200, 200, 404, 200),
    ("POST", "/api/routines/{name}/runs"): _decide(403, 403, 403, 403, 201),
    ("POST", "/api/routines/{name}/runs/{id}/start"): RUNNER_ONLY,
    ("POST", "/api/routines/{name}/runs/{id}/finish"): RUNNER_ONLY,
}
