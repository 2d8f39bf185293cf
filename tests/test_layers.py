"""Data flows one way: each layer imports only the layers below it (STYLE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.paths import ROOT

PACKAGE = ROOT / "sessionstore"
#: layer -> the sessionstore layers it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "models": {"errors"},
    "validate": {"models"},
    "provider": {"errors"},
    "wire": {"errors", "models", "validate"},
    "store": {"errors", "models", "wire", "validate", "_migrations"},
    "context": {"errors", "models", "validate", "wire"},
    "catalog": {"errors", "models", "wire", "validate", "store"},
    "payloads": {"errors", "models", "wire", "context"},
    "api": {"errors", "models", "wire", "validate", "store", "context", "catalog", "payloads"},
    "views": {"errors", "models", "wire", "validate", "store", "context", "catalog", "payloads", "api"},
    "aio": {"errors", "models", "validate", "store", "context", "catalog", "api"},
    "recording": {"errors", "models", "api", "provider", "store"},
    "demo": {"errors", "models", "api", "provider", "recording", "_fixtures"},
    "protocol": set(),
    "service": {"errors", "models", "wire", "validate", "store", "context", "catalog", "payloads", "api", "views",
                "protocol"},
    "client": {"errors", "models", "wire", "validate", "store", "context", "catalog", "api", "protocol"},
    "cli": {"errors", "models", "wire", "validate", "store", "context", "api", "demo", "catalog", "payloads",
            "views", "service", "client", "protocol"},
    "openai_agents": {"errors", "models", "wire", "api", "aio", "payloads", "client"},
    "__init__": {"aio", "api", "models", "validate", "errors", "store", "catalog"},
}


def layer_of(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0].removesuffix(".py")


def imported_layers(path: Path) -> set[str]:
    layers = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "sessionstore" and len(parts) > 1:
                layers.add(parts[1])
    return layers


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_import_only_lower_layers(path: Path) -> None:
    layer = layer_of(path)
    assert layer in ALLOWED, f"{layer} has no place in the layering"
    illegal = imported_layers(path) - ALLOWED[layer] - {layer}
    assert not illegal, f"{path.relative_to(PACKAGE)} imports {sorted(illegal)}"


ABOVE_THE_BACKEND_CONTRACT = [
    PACKAGE / "store" / "entry_store.py", PACKAGE / "store" / "facts.py", PACKAGE / "api.py",
    PACKAGE / "aio.py", *sorted((PACKAGE / "cli").glob("*.py")),
]
"""Modules above the backend contract: they name no database and write no SQL (store/backend.py)."""


@pytest.mark.parametrize("path", ABOVE_THE_BACKEND_CONTRACT, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_code_above_the_backend_contract_names_no_database_and_writes_no_sql(path: Path) -> None:
    tree = ast.parse(path.read_text())
    modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    modules |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {m for m in modules if m.split(".")[-1] in ("sqlite", "postgres", "sqltx", "sqlite3", "psycopg")}
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)}
    code_strings = [node.value for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]
    sql = [text for text in code_strings if any(word in text for word in ("SELECT ", "INSERT ", "UPDATE ", "DELETE "))]
    assert sql == []
    names = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert "dialect" not in names
