"""The service's routes, one module per area; each has ``register(app, service)``."""

from __future__ import annotations

__all__: list[str] = []
