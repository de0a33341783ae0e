"""The route table: every route of the application, gathered from each concept's module."""

from __future__ import annotations

from . import (
    admin,
    audit,
    claims,
    costs,
    discovery,
    fleet,
    identity,
    inbox,
    installer,
    intake,
    knowledge,
    messages,
    notifications,
    registry,
    routines,
    workspaces,
)
from .route import Route

ROUTE_MODULES = (
    discovery,
    installer,
    identity,
    workspaces,
    messages,
    inbox,
    notifications,
    claims,
    costs,
    knowledge,
    registry,
    routines,
    fleet,
    intake,
    audit,
    admin,
)


def all_routes() -> list[Route]:
    return [route for module in ROUTE_MODULES for route in module.ROUTES]
