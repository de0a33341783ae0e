"""The route table: every route of the application, gathered from each concept's module."""

from __future__ import annotations

from . import audit, claims, discovery, fleet, identity, knowledge, messages, registry, routines, workspaces
from .route import Route

ROUTE_MODULES = (
    discovery,
    identity,
    workspaces,
    messages,
    claims,
    knowledge,
    registry,
    routines,
    fleet,
    audit,
)


def all_routes() -> list[Route]:
    return [route for module in ROUTE_MODULES for route in module.ROUTES]
