"""The top-level names are the public API: typed for ``mypy --strict`` from the README's import, and
imported only on first use (``import sessionstore`` loads no database or model code)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import sessionstore
from tests.paths import ROOT

USE = '''
from sessionstore import LeafConflictError, SessionStore, SessionStoreError, UserMessage, user_message

def resume(url: str, session: str) -> int:
    with SessionStore(url) as store:
        message: UserMessage = user_message("hi")
        try:
            store.append_message(session, message, expected_leaf=None)
        except LeafConflictError as exc:
            reveal_type(exc.actual)
        except SessionStoreError:
            return 2
        context = store.context(session)
        reveal_type(context)
        return len(context.messages)
'''


def test_every_exported_name_resolves() -> None:
    for name in sessionstore.__all__:
        assert getattr(sessionstore, name) is not None, name


def test_the_readme_import_type_checks_under_mypy_strict(tmp_path: Path) -> None:
    from mypy import api

    source = tmp_path / "use_sessionstore.py"
    source.write_text(USE)
    out, err, status = api.run(["--strict", "--no-error-summary", "--cache-dir", str(ROOT / ".mypy_cache"),
                                str(source)])
    notes = [line for line in out.splitlines() if "note: Revealed type" in line]
    assert status == 0, out + err
    assert notes[0].endswith('"str | None"') and notes[1].endswith('"sessionstore.api.ContextResult"')


def test_importing_the_package_loads_no_database_or_model_code() -> None:
    heavy = "('sqlalchemy', 'pydantic', 'alembic')"
    code = f"import sys, sessionstore; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_a_context_offers_its_messages_as_the_models_they_were_appended_as(tmp_path: Path) -> None:
    from sessionstore import SessionStore, UserMessage, user_message

    with SessionStore(f"sqlite:///{tmp_path / 'm.db'}") as store:
        sid = store.create_session(cwd="/w")
        sent = user_message("hi")
        store.append_message(sid, sent)
        context = store.context(sid)
    (model,) = context.message_models()
    assert isinstance(model, UserMessage) and model.to_wire() == sent.to_wire() == context.messages[0]
