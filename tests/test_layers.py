"""Data flows one way: each layer imports only the layers below it (STYLE.md)."""

from __future__ import annotations

import ast
import re
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


CLI = PACKAGE / "cli"
CLI_MODULES = sorted(path.stem for path in CLI.glob("*.py"))
COMMAND_MODULES = [name for name in CLI_MODULES if name.endswith("_cmd")]
"""The modules of commands: each imports what commands share from ``app`` (and ``render``), and the
package's ``__init__`` adds their commands to the ``cli`` group (STYLE.md: a package of commands)."""


def cli_imports(module: str) -> set[tuple[str, str]]:
    """``(cli module, name)`` for each name ``module`` of the cli package imports from another of its
    modules (``(module, "")``: the module itself), wherever in the file the import is."""
    found: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse((CLI / f"{module}.py").read_text())):
        if isinstance(node, ast.Import):
            found |= {(alias.name.split(".")[2], "") for alias in node.names
                      if alias.name.startswith("sessionstore.cli.")}
        elif isinstance(node, ast.ImportFrom):
            source = "sessionstore.cli" + (f".{node.module}" if node.module else "") if node.level else node.module
            if source == "sessionstore.cli":  # a submodule by name, else a name of the package's __init__
                found |= {(a.name, "") if a.name in CLI_MODULES else ("__init__", a.name) for a in node.names}
            elif source is not None and source.startswith("sessionstore.cli."):
                found |= {(source.split(".")[2], alias.name) for alias in node.names}
    return found


def test_the_cli_package_has_no_import_cycle() -> None:
    import graphlib

    graph = {module: {source for source, _name in cli_imports(module)} for module in CLI_MODULES}
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"the cli package imports in a cycle: {' -> '.join(exc.args[1])}")
    assert order.index("app") < min(order.index(module) for module in COMMAND_MODULES) < order.index("__init__")


@pytest.mark.parametrize("module", CLI_MODULES)
def test_no_cli_module_imports_a_private_name_of_another(module: str) -> None:
    private = sorted(f"{source}.{name}" for source, name in cli_imports(module) if name.startswith("_"))
    assert not private, f"cli/{module}.py imports {private}"


@pytest.mark.parametrize("module", COMMAND_MODULES)
def test_a_command_module_imports_only_app_and_render_and_registers_nothing(module: str) -> None:
    imported = cli_imports(module)
    assert {source for source, _name in imported} <= {"app", "render"}, f"cli/{module}.py imports {sorted(imported)}"
    assert ("app", "cli") not in imported  # (its commands are added to the group in one place: __init__)


def test_every_command_comes_from_exactly_one_command_module_and_is_added_once() -> None:
    import importlib

    import click

    from sessionstore.cli import cli

    defined: dict[str, list[str]] = {}
    for module_name in COMMAND_MODULES:
        module = importlib.import_module(f"sessionstore.cli.{module_name}")
        commands = [value for value in vars(module).values() if isinstance(value, click.Command)
                    and getattr(value.callback, "__module__", None) == module.__name__]
        subcommands = {id(sub) for group in commands if isinstance(group, click.Group)
                       for sub in group.commands.values()}
        for command in commands:
            if id(command) not in subcommands:
                defined.setdefault(str(command.name), []).append(module_name)
    assert {name: modules for name, modules in defined.items() if len(modules) > 1} == {}
    assert sorted(defined) == sorted(cli.commands)
    for name, command in cli.commands.items():
        assert getattr(command.callback, "__module__", None) == f"sessionstore.cli.{defined[name][0]}", name
    added = [ast.unparse(node) for node in ast.walk(ast.parse((CLI / "__init__.py").read_text()))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_command"]
    assert len(added) == len(set(added)) == len(cli.commands), sorted(added)  # one line each, none twice


def test_the_json_object_alias_is_declared_once() -> None:
    """``dict[str, Any]`` as a named alias lives in models/wire.py (``JsonObject``); other modules import
    it (as ``Json`` where they like) instead of declaring their own copy."""
    declaring = sorted(path.relative_to(ROOT).as_posix() for path in PACKAGE.rglob("*.py")
                       if re.search(r"^\w+ = dict\[str, Any\]$", path.read_text(), re.MULTILINE))
    assert declaring == ["sessionstore/models/wire.py"]
