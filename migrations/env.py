"""Alembic environment for sessionstore.

The library passes an open connection in ``config.attributes["connection"]``; the ``alembic`` command
line gets its URL from ``-x url=...``, ``sqlalchemy.url`` or ``SESSIONSTORE_DB``. The version table is
``sessionstore_alembic_version`` (a shared database may hold another library's ``alembic_version``);
the command line moves a revision 0001-0005 out of ``alembic_version`` first, as the library does.
"""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import create_engine

from sessionstore.store.migrate import VERSION_TABLE, adopt_legacy_version
from sessionstore.store.schema import metadata

config = context.config
target_metadata = metadata


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=target_metadata, version_table=VERSION_TABLE)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    url = url or os.environ.get("SESSIONSTORE_DB")
    if not url:
        raise SystemExit("no database URL: pass -x url=... or set SESSIONSTORE_DB")
    engine = create_engine(url)
    with engine.connect() as conn, conn.begin():
        adopt_legacy_version(conn)
        context.configure(connection=conn, target_metadata=target_metadata, version_table=VERSION_TABLE)
        with context.begin_transaction():
            context.run_migrations()


def run_migrations_offline() -> None:
    url = context.get_x_argument(as_dictionary=True).get("url") or os.environ.get("SESSIONSTORE_DB")
    context.configure(url=url, target_metadata=target_metadata, literal_binds=True, version_table=VERSION_TABLE)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
