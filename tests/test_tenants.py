"""Tenants (SPEC 16, issue 23 point 4) on both backends: every session, sync source and deleted source
belongs to one tenant; a store (``SessionStore(tenant=...)``, ``for_tenant``, ``--tenant``) sees only its
own, and another tenant's session is one that does not exist."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from sessionstore.aio import AsyncSessionStore
from sessionstore.api import SessionStore
from sessionstore.cli import cli
from sessionstore.errors import InvalidInputError, SessionNotFoundError
from sessionstore.store import migrate
from sessionstore.store.engine import make_engine
from sessionstore.store.tenant import check_tenant
from tests.builders import assistant, user
from tests.paths import PI_FILES

FILE = PI_FILES["before-compaction"]
FILE_ID = "ffae836b-9420-4060-ac13-7745215f90ff"
BAD_NAMES = ["", ".hidden", "-dash", "a/b", "a b", "a" * 65, "é", "a\x00", "tenant\n"]
GOOD_NAMES = ["a", "_x", "A.b_c-1", "0", "a" * 64]


def exported(store: SessionStore, session_id: str) -> bytes:
    buf = io.BytesIO()
    store.export_jsonl(session_id, buf)
    return buf.getvalue()


def chat(store: SessionStore, words: str, *, session_id: str | None = None, cwd: str = "/w/p") -> str:
    sid = store.create_session(cwd=cwd, session_id=session_id)
    store.append_message(sid, user(words))
    store.append_message(sid, assistant(f"about {words}"))
    return sid


def test_the_same_pi_file_imports_into_two_tenants_and_each_keeps_its_own(store: SessionStore) -> None:
    b = store.for_tenant("b")
    assert (store.tenant, b.tenant) == ("default", "b")
    assert store.import_jsonl(FILE).session_id == b.import_jsonl(FILE).session_id == FILE_ID
    assert exported(store, FILE_ID) == exported(b, FILE_ID)
    leaf = b.leaf(FILE_ID)
    store.append_message(FILE_ID, user("only in default"))
    assert b.leaf(FILE_ID) == leaf and store.leaf(FILE_ID) != leaf
    fork = store.fork(FILE_ID)
    assert [i.id for i in b.list_sessions()] == [FILE_ID]
    with pytest.raises(SessionNotFoundError):
        b.session(fork)
    store.delete_session(FILE_ID)
    assert [i.id for i in store.list_sessions()] == [fork]
    assert b.session(FILE_ID).id == FILE_ID and b.leaf(FILE_ID) == leaf


def test_list_search_stats_and_most_recent_see_only_the_tenant(store: SessionStore) -> None:
    a, b, empty = store.for_tenant("a"), store.for_tenant("b"), store.for_tenant("empty")
    in_a = chat(a, "needle apples")
    in_b = chat(b, "needle pears")
    assert [i.id for i in a.list_sessions()] == [in_a] and [i.id for i in b.list_sessions()] == [in_b]
    assert [r.session.id for r in a.search("needle")] == [in_a]
    assert [r.session.id for r in b.search("needle")] == [in_b]
    assert a.search("pears") == [] and empty.search("needle") == []
    assert a.most_recent_session() == in_a and b.most_recent_session(cwd="/w/p") == in_b
    assert empty.most_recent_session() is None and store.most_recent_session() is None
    assert (a.stats_all().sessions, b.stats_all().sessions, empty.stats_all().sessions) == (1, 1, 0)
    assert empty.stats_all(by="model").groups == ()


def test_another_tenants_session_is_one_that_does_not_exist(store: SessionStore) -> None:
    sid = chat(store, "mine")
    other = store.for_tenant("other")
    leaf = store.leaf(sid)
    assert leaf is not None
    calls = {
        "session": lambda: other.session(sid), "header": lambda: other.header(sid), "leaf": lambda: other.leaf(sid),
        "entries": lambda: other.entries(sid), "entry": lambda: other.entry(sid, leaf),
        "context": lambda: other.context(sid), "tree": lambda: other.tree(sid), "stats": lambda: other.stats(sid),
        "export": lambda: other.export_jsonl(sid, io.BytesIO()), "fork": lambda: other.fork(sid),
        "append": lambda: other.append_message(sid, user("x")), "label": lambda: other.append_label(sid, leaf, "l"),
        "branch": lambda: other.branch(sid, leaf), "delete": lambda: other.delete_session(sid),
        "prefix": lambda: other.entry_ids_with_prefix(sid, leaf[:2]),
    }
    for name, call in calls.items():
        with pytest.raises(SessionNotFoundError):
            call()
            pytest.fail(name)
    assert store.leaf(sid) == leaf and len(store.entries(sid)) == 2
    # The same id is free in the other tenant, and creating it there touches nothing here.
    assert other.create_session(cwd="/else", session_id=sid) == sid
    assert store.session(sid).cwd == "/w/p" and other.session(sid).cwd == "/else"


def test_a_view_of_another_tenant_is_cheap_and_closing_it_leaves_the_database_open(store: SessionStore) -> None:
    view = store.for_tenant("v")
    assert view._entries.backend.shared is store._entries.backend.shared  # one engine
    chat(view, "in v")
    view.close()
    assert store.list_sessions() == [] and len(store.for_tenant("v").list_sessions()) == 1
    assert store.for_tenant("v").for_tenant("default").tenant == "default"


def test_sync_into_two_tenants_keeps_sources_and_deleted_sources_apart(store: SessionStore, tmp_path: Path) -> None:
    directory = tmp_path / "sessions" / "--w-p--"
    directory.mkdir(parents=True)
    (directory / f"2025-01-01T00-00-00-000Z_{FILE_ID}.jsonl").write_bytes(FILE.read_bytes())
    a, b = store.for_tenant("a"), store.for_tenant("b")
    assert (a.sync(tmp_path / "sessions").imported, b.sync(tmp_path / "sessions").imported) == (1, 1)
    a.delete_session(FILE_ID)
    assert a.sync(tmp_path / "sessions").deleted == 1  # a's deletion is remembered for a only
    assert b.sync(tmp_path / "sessions").unchanged == 1
    assert store.sync(tmp_path / "sessions").imported == 1  # a third tenant syncs it afresh
    assert a.sync(tmp_path / "sessions", include_deleted=True).imported == 1
    assert [i.id for i in a.list_sessions()] == [FILE_ID] == [i.id for i in b.list_sessions()]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_bad_tenant_name_is_refused_everywhere(name: str, store: SessionStore, db_url: str) -> None:
    with pytest.raises(InvalidInputError, match="tenant name"):
        store.for_tenant(name)
    with pytest.raises(InvalidInputError, match="tenant name"):
        SessionStore(db_url, tenant=name)
    with pytest.raises(InvalidInputError, match="tenant name"):
        AsyncSessionStore(db_url, tenant=name)


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_the_good_tenant_names(name: str) -> None:
    assert check_tenant(name) == name


async def test_the_async_store_takes_a_tenant_and_its_views_share_the_workers(db_url: str) -> None:
    async with AsyncSessionStore(db_url, tenant="x") as x:
        sid = await x.create_session(cwd="/w")
        y = x.for_tenant("y")
        assert (x.tenant, y.tenant) == ("x", "y")
        assert await y.list_sessions() == []
        with pytest.raises(SessionNotFoundError):
            await y.session(sid)
        other = await y.create_session(cwd="/w", session_id=sid)
        await y.close()  # a view: the database stays open for x
        assert [i.id for i in await x.list_sessions()] == [sid] == [other]
    with SessionStore(db_url, tenant="y") as y_sync:
        assert [i.id for i in y_sync.list_sessions()] == [sid]


def test_a_database_at_0012_upgrades_with_every_session_and_source_in_default(db_url: str, tmp_path: Path) -> None:
    from alembic import command

    directory = tmp_path / "sessions" / "--w-p--"
    directory.mkdir(parents=True)
    (directory / f"2025-01-01T00-00-00-000Z_{FILE_ID}.jsonl").write_bytes(FILE.read_bytes())
    with SessionStore(db_url) as store:
        store.sync(tmp_path / "sessions")
        kept = chat(store, "kept")
        gone = chat(store, "gone")
        store.delete_session(FILE_ID)
        store.delete_session(gone)
        before = exported(store, kept)
    engine = make_engine(db_url)
    try:
        config = migrate.alembic_config()
        with engine.connect() as conn, migrate.foreign_keys_off(conn), conn.begin():
            config.attributes["connection"] = conn
            command.downgrade(config, "0012")
        with engine.connect() as conn:
            assert migrate.current_revision(conn) == "0012"
            assert conn.execute(text("SELECT count(*) FROM sessionstore_deleted_sources")).scalar() == 1
        migrate.upgrade(engine)
        with engine.connect() as conn:
            tenants = conn.execute(text("SELECT DISTINCT tenant FROM sessionstore_sessions")).scalars().all()
            assert tenants == ["default"]
            assert conn.execute(text("SELECT tenant FROM sessionstore_deleted_sources")).scalars().all() == [
                "default"]
    finally:
        engine.dispose()
    with SessionStore(db_url) as store:
        assert [i.id for i in store.list_sessions()] == [kept] and exported(store, kept) == before
        assert store.sync(tmp_path / "sessions").deleted == 1  # the deletion still holds, for default
        assert store.for_tenant("t").list_sessions() == []


def test_downgrade_below_0013_refuses_a_database_holding_other_tenants(db_url: str) -> None:
    from alembic import command

    with SessionStore(db_url, tenant="t") as store:
        chat(store, "t's")
    engine = make_engine(db_url)
    try:
        config = migrate.alembic_config()
        with pytest.raises(RuntimeError, match="tenants"), engine.connect() as conn, \
                migrate.foreign_keys_off(conn), conn.begin():
            config.attributes["connection"] = conn
            command.downgrade(config, "0012")
    finally:
        engine.dispose()
    with SessionStore(db_url, tenant="t") as store:
        assert len(store.list_sessions()) == 1


# -- the command line ----------------------------------------------------------------------------


def test_the_cli_takes_tenant_from_the_option_or_the_environment(db_url: str) -> None:
    runner = CliRunner()

    def run(*args: str, env: dict[str, str] | None = None) -> list[str]:
        result = runner.invoke(cli, ["--db", db_url, *args], env=env, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout.splitlines()

    assert run("--tenant", "a", "import", str(FILE)) == [FILE_ID]
    assert run("import", str(FILE), env={"SESSIONSTORE_TENANT": "b"}) == [FILE_ID]
    assert run("ls", "--json") == ["[]"]
    assert [s["id"] for s in json.loads("\n".join(run("--tenant", "a", "ls", "--json")))] == [FILE_ID]
    run("--tenant", "a", "rm", "--yes", FILE_ID[:8])  # a prefix, expanded among a's sessions
    assert json.loads("\n".join(run("--tenant", "a", "ls", "--json"))) == []
    listed = json.loads("\n".join(run("ls", "--json", env={"SESSIONSTORE_TENANT": "b"})))
    assert [s["id"] for s in listed] == [FILE_ID]
    # The option wins over the environment.
    assert json.loads("\n".join(run("--tenant", "a", "ls", "--json", env={"SESSIONSTORE_TENANT": "b"}))) == []
    missing = runner.invoke(cli, ["--db", db_url, "--tenant", "a", "export", FILE_ID], catch_exceptions=False)
    assert missing.exit_code != 0 and missing.stderr.count("\n") == 1 and "error:" in missing.stderr


@pytest.mark.parametrize("name", ["", ".x", "a/b", "a" * 65])
def test_the_cli_refuses_a_bad_tenant_in_one_line_with_exit_2(name: str, db_url: str) -> None:
    runner = CliRunner()
    ways = [(["--tenant", name], None)] + ([([], {"SESSIONSTORE_TENANT": name})] if name else [])  # ("" is unset)
    for args, env in ways:
        result = runner.invoke(cli, ["--db", db_url, *args, "ls"], env=env, catch_exceptions=False)
        assert result.exit_code == 2, result.output
        assert result.stdout == "" and result.stderr.startswith("error: --tenant: bad tenant name")
        assert result.stderr.count("\n") == 1


def test_the_cli_help_names_the_tenant_option_and_its_variable() -> None:
    out = CliRunner().invoke(cli, ["--help"]).output
    assert "--tenant T" in out and "SESSIONSTORE_TENANT" in out


def test_a_sessions_tenant_never_changes_and_its_id_is_unique_per_tenant_in_sql(
    store: SessionStore, db_url: str
) -> None:
    sid = chat(store, "fixed")
    chat(store.for_tenant("b"), "b's", session_id=sid)
    engine = make_engine(db_url)
    try:
        with pytest.raises(Exception, match="append-only"), engine.begin() as conn:
            conn.execute(text("UPDATE sessionstore_sessions SET tenant = 'c' WHERE tenant = 'default'"))
        with pytest.raises(DBAPIError), engine.begin() as conn:
            conn.execute(text(
                "INSERT INTO sessionstore_sessions (tenant, id, version, cwd, created, header, entry_count,"
                " message_count, deleting) VALUES ('b', :sid, 3, '/w', 'ts', '{}', 0, 0, FALSE)"), {"sid": sid})
    finally:
        engine.dispose()
    assert store.session(sid).cwd == "/w/p" and len(store.for_tenant("b").list_sessions()) == 1
