"""The schema revision this code needs, and where Alembic records a database's (no imports: opening
a store checks it before anything else is loaded)."""

SCHEMA_REVISION = "0018"
"""The Alembic revision this code needs (a test checks it is the head of ``migrations/versions``).
It lives here, not beside the tables in :mod:`sessionstore.store.schema`: opening a store checks it,
and need not build the table definitions (nor import SQLAlchemy) to do so."""

VERSION_TABLE = "sessionstore_alembic_version"
"""Alembic's version table for sessionstore (``migrations/env.py`` configures it)."""
