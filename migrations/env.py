"""Alembic environment for sessionstore.

The library passes an open connection in ``config.attributes["connection"]`` (its transaction holds
the schema lock and our revision is already out of ``alembic_version``: see ``store/migrate.py``); the
``alembic`` command line gets its URL from ``-x url=...``, ``sqlalchemy.url`` or ``SESSIONSTORE_DB``
and does the same first: the store's engine (on SQLite ``BEGIN IMMEDIATE``, WAL, 8 KiB pages, a
``0600`` file), the schema lock, and a revision 0001-0005 moved out of ``alembic_version``. Either way
an upgrade from no sessionstore schema starts at the newest schema a revision creates in one step
(``migrate.create_newest_schema``), so ``alembic upgrade head`` and ``sessionstore db upgrade`` give
the same schema, also beside another library's ``sessions`` table. The version table is
``sessionstore_alembic_version`` (a shared database may hold another library's ``alembic_version``).
"""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import Connection

from sessionstore.store import migrate
from sessionstore.store.engine import WRITE, make_engine
from sessionstore.store.migrate import VERSION_TABLE
from sessionstore.store.schema import metadata

config = context.config
target_metadata = metadata


def run_migrations_on(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, version_table=VERSION_TABLE)
    migrate.create_newest_schema(context.get_context(), context.script)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run_migrations_on(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    url = url or os.environ.get("SESSIONSTORE_DB")
    if not url:
        raise SystemExit("no database URL: pass -x url=... or set SESSIONSTORE_DB")
    engine = make_engine(url)
    try:
        with engine.connect().execution_options(**WRITE) as conn, migrate.foreign_keys_off(conn), conn.begin():
            migrate.lock_schema(conn)
            migrate.adopt_legacy_version(conn)
            run_migrations_on(conn)
    finally:
        engine.dispose()


def run_migrations_offline() -> None:
    url = context.get_x_argument(as_dictionary=True).get("url") or os.environ.get("SESSIONSTORE_DB")
    context.configure(url=url, target_metadata=target_metadata, literal_binds=True, version_table=VERSION_TABLE)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
