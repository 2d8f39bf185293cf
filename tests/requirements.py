"""What tests need beyond the package, and the one rule for a part the machine lacks.

A test that needs an optional part (Node.js, pi 1.6, a PostgreSQL server, chromium, an SDK of an extra)
asks for it here: ``require(PART)`` in a test or fixture, ``pytest.mark.requires(PART)`` on a test or a
``pytest.param`` (``tests/conftest.py`` applies the mark at setup), ``module(NAME, install=...)`` for an
import. A missing part SKIPS the test outside CI, with a reason that says what is missing and names the
one command that installs it. Under CI (``$CI`` set to anything but ``""``, ``0`` or ``false``;
``.ci/run`` sets it and installs every part) the same test FAILS with the same reason: there a missing
part is a broken setup, and nothing skips.
"""

from __future__ import annotations

import importlib
import json
import os
import pwd
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

PI_VERSION = "1.6.0"
PI_PACKAGE = "@earendil-works/pi-coding-agent"
INSTALL_PI = ".ci/install-pi.sh"
"""Installs pi 1.6 where the tests look for it, and Debian's nodejs and npm first when node is missing."""
INSTALL_DEV = "pip install -e '.[dev]'"
"""The dev extra: the test tools and the anthropic and openai SDKs (payloads are checked against their types)."""
INSTALL_AGENTS = "pip install -e '.[agents]'"
"""The agents extra: the OpenAI Agents SDK (openai-agents), whose Session protocol openai_agents.py implements."""


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def missing(reason: str, install: str) -> NoReturn:
    """Skip (outside CI) or fail (under CI) the running test: ``reason`` says what is missing,
    ``install`` is the one command that installs it."""
    message = f"{reason}; run: {install}"
    if in_ci():
        pytest.fail(f"{message} (under CI nothing skips: .ci/run installs every part)", pytrace=False)
    pytest.skip(message, allow_module_level=True)


def module_present(name: str, *, install: str) -> bool:
    """Whether module ``name`` imports, for a conftest that leaves a directory out without it (outside
    CI); under CI its absence raises ``ImportError`` naming ``install``."""
    try:
        importlib.import_module(name)
    except ImportError as exc:
        if in_ci():
            raise ImportError(f"{exc}; run: {install} (under CI nothing skips)") from exc
        return False
    return True


@dataclass(frozen=True)
class Part:
    """An optional part of the test environment: ``absent()`` is None when the part is here, else what
    is missing; ``install`` is the one command that installs it."""

    name: str
    install: str
    absent: Callable[[], str | None]

    def __str__(self) -> str:
        return self.name


def require(part: Part) -> None:
    """Return when ``part`` is here; otherwise skip or fail the test by the rule above."""
    reason = part.absent()
    if reason is not None:
        missing(reason, part.install)


def module(name: str, *, install: str) -> ModuleType:
    """The module ``name``, or a skip/failure by the rule above naming ``install`` (usable at module level)."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        missing(f"{name} is not importable ({error})", install)


# -- the parts --------------------------------------------------------------------------------------
def default_pi_dir() -> Path:
    """Where ``.ci/install-pi.sh`` puts pi (keep the two in step)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "sessionstore" / f"pi-{PI_VERSION}" / "node_modules"


def pi_dir() -> Path:
    """Where the tests look for pi: ``$SESSIONSTORE_PI_DIR``, else where ``.ci/install-pi.sh`` puts it."""
    return Path(os.environ.get("SESSIONSTORE_PI_DIR") or default_pi_dir())


def _node_absent() -> str | None:
    return None if shutil.which("node") else "node is not installed (the tests run pi's own code under Node.js)"


def _pi_absent() -> str | None:
    if (reason := _node_absent()) is not None:
        return reason
    package = pi_dir() / PI_PACKAGE / "package.json"
    if not package.is_file():
        return (f"pi {PI_VERSION} is not installed in {pi_dir()} (or point SESSIONSTORE_PI_DIR at a node_modules "
                f"directory holding {PI_PACKAGE}@{PI_VERSION})")
    version = json.loads(package.read_text(encoding="utf-8")).get("version")
    if version != PI_VERSION:
        return f"{package} is pi {version}, the tests need pi {PI_VERSION}"
    return None


def chromium_path() -> str | None:
    return next((p for name in ("chromium", "chromium-browser") if (p := shutil.which(name))), None)


def _postgres_absent() -> str | None:
    if os.environ.get("SESSIONSTORE_TEST_PG_URL"):
        return None
    return "SESSIONSTORE_TEST_PG_URL is not set (no PostgreSQL server to run the PostgreSQL half on)"


def pg_bindir() -> Path | None:
    """Where PostgreSQL's server programs are (``initdb``, ``pg_ctl``), as ``.ci/pg-cluster.sh`` looks:
    the newest ``/usr/lib/postgresql/*/bin``, else ``pg_config --bindir``."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                   key=lambda p: [int(n) if n.isdigit() else 0 for n in p.parent.name.split(".")])
    if found:
        return found[-1]
    pg_config = shutil.which("pg_config")
    if pg_config is None:
        return None
    done = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None


def _postgres_server_absent() -> str | None:
    bindir = pg_bindir()
    if bindir is None or not (bindir / "initdb").is_file() or not (bindir / "pg_ctl").is_file():
        return "PostgreSQL's server programs (initdb, pg_ctl) are not installed (the test runs a server of its own)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root without a 'postgres' user (initdb refuses root; .ci/pg-cluster.sh adds the user)"
    return None


NODE = Part("Node.js", INSTALL_PI, _node_absent)
PI = Part(f"pi {PI_VERSION}", INSTALL_PI, _pi_absent)
POSTGRES = Part("PostgreSQL", "source .ci/pg-cluster.sh start", _postgres_absent)
POSTGRES_SERVER = Part("PostgreSQL server programs", "source .ci/pg-cluster.sh start", _postgres_server_absent)
"""A PostgreSQL server the test starts and stops itself (``.ci/pg-cluster.sh`` installs Debian's postgresql
when it is missing): not the shared one of ``SESSIONSTORE_TEST_PG_URL``, which nobody may stop."""
CHROMIUM = Part(
    "chromium", ".ci/install-chromium.sh",
    lambda: None if chromium_path() else "chromium is not installed (the HTML export's browser tests open the page)",
)
