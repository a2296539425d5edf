"""Alembic environment of the audit store. The connection is handed in by
:func:`agentguard.server.audit.migrate` (``config.attributes['connection']``), or built from
``sqlalchemy.url`` when Alembic is run by hand."""

from __future__ import annotations

from alembic import context
from sqlalchemy import engine_from_config, pool

from agentguard.server.schema import metadata

config = context.config


def _run(connection) -> None:
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=metadata,
                      literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    conn = config.attributes.get("connection")
    if conn is not None:
        _run(conn)
    else:
        engine = engine_from_config(config.get_section(config.config_ini_section, {}), prefix="sqlalchemy.",
                                    poolclass=pool.NullPool)
        with engine.connect() as c:
            _run(c)
