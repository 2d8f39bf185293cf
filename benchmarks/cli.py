"""Start-up and whole-process times of the ``sessionstore`` command line (issue 14, item 1).

Every figure is a fresh process, timed from spawn to exit (the median of ``--repeat`` runs, the
commands measured round-robin so that a slow moment of the machine hits all of them alike), against
floors measured in the same run:

- ``python -c pass`` (the interpreter's own start): ``--help`` and every command's ``-h`` must finish
  within 4x of it (they need no database);
- ``python -c "import sqlalchemy"`` (the floor the issue sets for a read; a read of an existing SQLite
  file at the current schema no longer imports SQLAlchemy at all): ``ls`` and ``context`` on a small
  SQLite database within 1.25x of it;
- pi 1.6's own node process doing the same read on the same session file (``benchmarks/pi_read.mjs``;
  needs node and ``$SESSIONSTORE_PI_DIR``): every read command on a 10,000-entry session must be
  faster as a whole process.

    python benchmarks/cli.py [--repeat N] [--entries N] [--keep DIR] [--quick]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from _common import BENCH_DIR, add_common_args, log, met, print_table, work_dir, write_synth_file

HELP_FLOOR_RATIO = 4.0
READ_FLOOR_RATIO = 1.25
PI_READ = BENCH_DIR / "pi_read.mjs"
SEARCH_WORD = "function"

Command = list[str]


def sessionstore_command() -> Command:
    """The installed console script beside this interpreter (what a user runs), else the module."""
    script = Path(sys.executable).with_name("sessionstore")
    if script.exists():
        return [str(script)]
    found = shutil.which("sessionstore")
    return [found] if found else [sys.executable, "-c", "from sessionstore.cli import main; main()"]


def time_once(command: Command, env: dict[str, str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False)
    elapsed = time.perf_counter() - began
    if done.returncode not in ((0, 1) if "validate" in command else (0,)):  # (validate: 1 = errors found)
        raise SystemExit(f"{' '.join(command)} failed (exit {done.returncode}): {done.stderr.decode()[-500:]}")
    return elapsed


def medians(commands: dict[str, Command], repeat: int, env: dict[str, str]) -> dict[str, float]:
    """The median time of each command, the commands run round-robin ``repeat`` times (after one
    untimed warm-up round, so every run finds the files in the page cache)."""
    for command in commands.values():
        time_once(command, env)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _round in range(repeat):
        for name, command in commands.items():
            times[name].append(time_once(command, env))
    return {name: statistics.median(values) for name, values in times.items()}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def command_names() -> list[str]:
    """Every command of the CLI, subgroups' commands as ``db upgrade`` (read from the click group)."""
    import click

    from sessionstore.cli import cli

    names = []
    for name, command in sorted(cli.commands.items()):
        names.append(name)
        if isinstance(command, click.Group):
            names.extend(f"{name} {sub}" for sub in sorted(command.commands))
    return names


def build_database(url: str, path: Path, entries: int) -> tuple[str, str]:
    """A SQLite database at ``url`` holding the one synthetic session of ``path`` (``entries`` entries);
    returns the session id and the id of an entry in the middle."""
    from sessionstore.api import SessionStore

    write_synth_file(path, entries=entries, tag=path.stem)
    with SessionStore(url) as store:
        result = store.import_jsonl(path)
        ids = [e["id"] for e in store.path(result.session_id)]
        return result.session_id, ids[len(ids) // 2]


def read_commands(url: str, session_id: str, entry_id: str) -> dict[str, Command]:
    """The read commands, as a user types them (JSON where a command has it)."""
    base = [*sessionstore_command(), "--db", url]
    return {
        "ls": [*base, "ls", "--json"],
        "context": [*base, "context", session_id, "--json"],
        "validate": [*base, "validate", session_id],
        "tree": [*base, "tree", session_id, "--json"],
        "show": [*base, "show", session_id, entry_id],
        "export": [*base, "export", session_id],
        "stats": [*base, "stats", session_id, "--json"],
        "search": [*base, "search", SEARCH_WORD, "--json"],
    }


def pi_commands(node: str, path: Path, entry_id: str) -> dict[str, Command]:
    arg = {"show": [entry_id], "search": [SEARCH_WORD]}
    ops = ("ls", "context", "validate", "tree", "show", "export", "stats", "search")
    return {op: [node, str(PI_READ), op, str(path), *arg.get(op, [])] for op in ops}


def report(title: str, headers: Sequence[str], rows: list[list[str]]) -> None:
    print(f"\n{title}")
    print_table(headers, rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(parser)
    parser.add_argument("--repeat", type=int, default=7, help="timed runs of each command (default 7)")
    parser.add_argument("--entries", type=int, default=10_000, help="entries of the large session (default 10,000)")
    args = parser.parse_args(argv)
    repeat = 2 if args.quick else args.repeat
    entries = 500 if args.quick else args.entries
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("SESSIONSTORE_DB", None)
    # Bytecode as an installed package has it (pip compiles it on install): the warm-up round writes
    # it, to a cache of the run's own, even where PYTHONDONTWRITEBYTECODE is set.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    all_met = True

    def verdict(ok: bool) -> str:
        nonlocal all_met
        all_met = all_met and ok
        return met(ok)

    with work_dir(args.keep, "sessionstore-cli-bench-") as work:
        env["HOME"] = str(work)  # (the default database would live there; every command names its --db)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        small_url = f"sqlite:///{work / 'small.db'}"
        large_url = f"sqlite:///{work / 'large.db'}"
        for name in ("small.db", "large.db"):
            for suffix in ("", "-wal", "-shm"):
                (work / f"{name}{suffix}").unlink(missing_ok=True)
        log("building the databases ...")
        small_id, _small_entry = build_database(small_url, work / "small.jsonl", 40)
        large_path = work / "session.jsonl"
        large_id, large_entry = build_database(large_url, large_path, entries)

        floors = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "python -c 'import sqlalchemy'": [sys.executable, "-c", "import sqlalchemy"],
        }
        cmd = sessionstore_command()
        helps = {"sessionstore --help": [*cmd, "--help"]}
        helps.update({f"sessionstore {name} -h": [*cmd, *name.split(), "-h"] for name in command_names()})
        small = {
            "ls (small database)": [*cmd, "--db", small_url, "ls"],
            "context (small database)": [*cmd, "--db", small_url, "context", small_id],
            "context --json (small database)": [*cmd, "--db", small_url, "context", small_id, "--json"],
        }
        log(f"timing {len(floors) + len(helps) + len(small)} start-up commands, {repeat} runs each ...")
        times = medians({**floors, **helps, **small}, repeat, env)
        bare, alchemy = times["python -c pass"], times["python -c 'import sqlalchemy'"]
        rows = [[name, ms(times[name]), "floor", ""] for name in floors]
        rows += [[n, ms(times[n]), f"{times[n] / bare:.2f}x pass", verdict(times[n] <= HELP_FLOOR_RATIO * bare)]
                 for n in helps]
        rows += [[n, ms(times[n]), f"{times[n] / alchemy:.2f}x sqlalchemy",
                  verdict(times[n] <= READ_FLOOR_RATIO * alchemy)] for n in small]
        report(f"start-up (median of {repeat}; targets: help <= {HELP_FLOOR_RATIO}x `python -c pass`, ls and"
               f" context <= {READ_FLOOR_RATIO}x `python -c 'import sqlalchemy'`)",
               ["command", "time", "ratio", "target"], rows)
        worst_help = max(times[n] / bare for n in helps)
        print(f"slowest help: {worst_help:.2f}x `python -c pass` (target <= {HELP_FLOOR_RATIO}x)")

        ours = read_commands(large_url, large_id, large_entry)
        node = shutil.which("node")
        pi_dir = os.environ.get("SESSIONSTORE_PI_DIR")
        peers: dict[str, Command] = {}
        if node is None or not pi_dir:
            print("note: pi's side skipped (needs node on PATH and $SESSIONSTORE_PI_DIR)")
        else:
            peers = pi_commands(node, large_path, large_entry)
        log(f"timing the read commands on the {entries:,}-entry session ...")
        measured = medians({**{f"ours {k}": v for k, v in ours.items()},
                            **{f"pi {k}": v for k, v in peers.items()}}, repeat, env)
        rows = []
        for name in ours:
            mine = measured[f"ours {name}"]
            if peers:
                theirs = measured[f"pi {name}"]
                rows.append([name, ms(mine), ms(theirs), f"{mine / theirs:.2f}x", verdict(mine < theirs)])
            else:
                rows.append([name, ms(mine), "-", "-", "-"])
        size = large_path.stat().st_size / 1e6
        report(f"read commands on one {entries:,}-entry session ({size:.1f} MB file; median of {repeat};"
               " target: faster than pi's node process on the same file)",
               ["command", "sessionstore", "pi 1.6 (node)", "ratio", "target"], rows)
    print(f"\nall targets {'met' if all_met else 'NOT met'}")
    return 0 if all_met else 1


if __name__ == "__main__":
    raise SystemExit(main())
