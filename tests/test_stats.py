"""``stats``: pi's ``/session`` numbers from the catalog columns (``sessionstore.catalog.stats``).

Number formats and the text, the folding of hostile usage values (where pi throws or concatenates,
the store counts 0), the API and the CLI on both backends, and a database written at revision 0007
that gets its stats from the 0008 backfill. What pi itself computes is compared in
``tests/differential/test_stats_against_pi.py``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine, text

from sessionstore.api import SessionStore
from sessionstore.catalog.stats import (
    BreakdownItem,
    Messages,
    SessionStatsReport,
    Tokens,
    UsageBucket,
    UsageTotals,
    fold_usage,
    format_tokens,
    js_fixed,
    js_locale,
)
from sessionstore.cli import cli
from sessionstore.errors import InvalidInputError, SessionNotFoundError
from sessionstore.models.entry_catalog import usage_of
from sessionstore.store import migrate
from sessionstore.store.migrate import SCHEMA_REVISION
from tests.builders import TS, TS_MS, assistant, entry, msg, result, user
from tests.paths import PI_FILES

Json = dict[str, Any]


def usage(input: Any = 0, output: Any = 0, cache_read: Any = 0, cache_write: Any = 0, cost: Any = 0.0) -> Json:
    return {"input": input, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write,
            "totalTokens": 0, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}}


def paid(message: Json, u: Json) -> Json:
    return {**message, "usage": u}


def header(session_id: str, cwd: str = "/w/proj") -> Json:
    return {"type": "session", "version": 3, "id": session_id, "timestamp": TS, "cwd": cwd}


DAY2 = "2025-01-02T10:00:00.000Z"


def rich_entries() -> list[Json]:
    """Every contribution pi counts: assistant (with responseModel too), toolResult usage, a usage entry,
    compaction and branch_summary usage, on two days; a model_change at the end selects the model."""
    return [
        entry("m0", None, "model_change", provider="p1", modelId="m1"),
        msg("u1", "m0", user("hi")),
        msg("a1", "u1", paid(assistant("x", ("c1", "read", {}), ("c2", "bash", {})), usage(100, 10, 1000, 50, 0.5))),
        msg("r1", "a1", paid(result("c1", "read"), usage(1, 1, 0, 0, 0.01))),
        msg("r2", "r1", result("c2", "bash")),
        {**msg("a2", "r2", paid({**assistant("y"), "responseModel": "real"}, usage(200, 20, 0, 0, 0.25))),
         "timestamp": DAY2},
        {**entry("g1", "a2", "usage", provider="p1", model="m1", usage=usage(0, 1, 900, 0, 0.125)),
         "kind": "cache_warm", "timestamp": DAY2},
        entry("k1", "g1", "compaction", summary="s", firstKeptEntryId="a2", tokensBefore=5,
              usage=usage(50, 5, 0, 0, 0.0625)),
        entry("b1", "k1", "branch_summary", fromId="k1", summary="b", usage=usage(7, 3, 0, 0, 0)),
        msg("u2", "b1", user("again")),
    ]


# -- number formats -----------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "digits", "expected"), [
    (0.0625, 3, "0.063"), (0.0005, 3, "0.001"), (1.0005, 3, "1.000"), (2.5, 0, "3"), (-0.0, 3, "0.000"),
    (-1.5, 0, "-2"), (42.596, 3, "42.596"), (1e21, 3, "1e+21"), (math.nan, 1, "NaN"), (math.inf, 3, "Infinity"),
    (97.0, 1, "97.0"),
])
def test_js_fixed_rounds_the_exact_binary_value_half_away_from_zero(value: float, digits: int, expected: str) -> None:
    assert js_fixed(value, digits) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (0, "0"), (999, "999"), (1000, "1,000"), (56382684, "56,382,684"), (1.0005, "1.001"), (1234.5675, "1,234.568"),
    (0.5, "0.5"), (-0.0, "-0"), (-1234.5, "-1,234.5"), (1e21, "1,000,000,000,000,000,000,000"), (math.inf, "∞"),
    (math.nan, "NaN"), (0.0004, "0"),
])
def test_js_locale_is_en_us_to_locale_string(value: float, expected: str) -> None:
    assert js_locale(value) == expected


@pytest.mark.parametrize(("count", "expected"), [
    (0, "0"), (999, "999"), (12.5, "12.5"), (1000, "1.0k"), (1500, "1.5k"), (9999, "10.0k"), (10000, "10k"),
    (999999, "1000k"), (1_000_000, "1.0M"), (9_999_999, "10.0M"), (12_345_678, "12M"), (math.inf, "InfinityM"),
])
def test_format_tokens_is_pis_footer_format(count: float, expected: str) -> None:
    assert format_tokens(count) == expected


# -- folding --------------------------------------------------------------------------------------


def test_a_usage_that_pi_would_choke_on_counts_zero_where_it_is_not_a_finite_number() -> None:
    """pi adds ``usage.input`` as it is: a string concatenates (``0 + "5"`` is ``"05"``), a missing one
    gives ``NaN``, a missing ``usage`` on an assistant throws. The store counts such values 0."""
    hostile = {"input": "5", "output": True, "cacheRead": None, "cacheWrite": [3], "cost": {"total": "0.5"}}
    message = {**assistant("x"), "usage": hostile}
    assert usage_of({"type": "message", "message": message})[1:] == (0, 0, 0, 0, 0)
    assert usage_of({"type": "message", "message": {**assistant("x"), "usage": {"input": 1e308, "cost": 7}}})[1:] \
        == (1e308, 0, 0, 0, 0)
    no_usage = {k: v for k, v in assistant("x").items() if k != "usage"}
    assert usage_of({"type": "message", "message": no_usage}) is None
    assert usage_of({"type": "usage", "provider": "p", "model": "m"}) is None  # pi throws
    assert usage_of({"type": "message", "message": result("c", "read")}) is None  # no usage: nothing
    assert usage_of({"type": "compaction", "usage": None}) is None
    key = usage_of({"type": "message", "message": {**assistant("x"), "responseModel": None}})
    assert key is not None and key.key == "p1/m1"  # responseModel ?? model
    missing = usage_of({"type": "usage", "usage": usage(1)})
    assert missing is not None and missing.key == "undefined/undefined"  # as pi's template literal writes it


def test_fold_usage_sums_buckets_exactly_and_orders_the_breakdown_as_pi() -> None:
    buckets = [
        UsageBucket("b", "2025-01-02", 1, 0.1, 0, 0, 0, 0.1), UsageBucket("b", "2025-01-01", 1, 0.2, 0, 0, 0, 0.2),
        UsageBucket("a", "", 1, 5, 0, 0, 0, 0.0), UsageBucket("z", "", 1, 0, 0, 0, 0, 0.0),
        UsageBucket("c", "2025-01-01", 2, 1, 2, 3, 4, 0.3),
    ]
    folded = fold_usage(buckets)
    assert folded == fold_usage(reversed(buckets))  # fsum: the order rows come back in does not matter
    assert folded.cost == math.fsum([0.1, 0.2, 0.3]) and folded.entries == 6
    assert folded.tokens == Tokens(math.fsum([0.1, 0.2, 5, 0, 1]), 2, 3, 4)
    # most costly first (b: 0.1 + 0.2 is above 0.3), then a: no cost but tokens; z has neither
    assert [i.key for i in folded.breakdown] == ["b", "c", "a"]
    ties = fold_usage([UsageBucket("y", "", 1, 1, 0, 0, 0, 0.0), UsageBucket("x", "", 1, 1, 0, 0, 0, 0.0)])
    assert [i.key for i in ties.breakdown] == ["x", "y"]  # equal costs by key (pi: first appearance)


# -- the text ---------------------------------------------------------------------------------------


PLAIN = Tokens(1000, 20, 0, 0)


def report(breakdown: tuple[BreakdownItem, ...], *, cost: float, selected: str | None,
           tokens: Tokens = PLAIN) -> SessionStatsReport:
    return SessionStatsReport("sid", "named", Messages(5, 2, 2, 1, 1), UsageTotals(tokens, cost, breakdown), selected)


def test_the_text_is_pis_session_info_without_the_cache_warming_block() -> None:
    text = report((BreakdownItem("p/m", 0.0625, 1020),), cost=0.0625, selected="p/other",
                  tokens=Tokens(100, 20, 800, 100)).render(location="In database /tmp/x.db")
    assert text == "\n".join([
        "Session Info", "", "Name: named", "File: In database /tmp/x.db", "ID: sid", "",
        "Messages", "Total: 5", "User: 2", "Assistant: 2", "Tools: 1 calls, 1 results", "",
        "Tokens", "Input: 1,000", "  Cached: 800 (80.0%)", "  Uncached: 200 (100 written to cache)",
        "Output: 20", "Total: 1,020", "",
        "Cost", "Total: $0.063", "  p/m: $0.063 (1.0k tokens)",
    ])


def test_one_key_that_is_the_selected_model_is_not_repeated_and_no_cost_no_cost_block() -> None:
    single = report((BreakdownItem("p/m", 1.0, 1020),), cost=1.0, selected="p/m").render()
    assert single.endswith("Cost\nTotal: $1.000") and "File: In database" in single
    assert "Cached" not in single  # no cache activity
    two = report((BreakdownItem("p/m", 0.6, 10), BreakdownItem("q/n", 0.4, 10)), cost=1.0, selected="p/m").render()
    assert two.endswith("  p/m: $0.600 (10 tokens)\n  q/n: $0.400 (10 tokens)")
    free = report((BreakdownItem("p/m", 0.0, 1020),), cost=0.0, selected=None).render()
    assert free.endswith("Total: 1,020") and "Cost" not in free


# -- the API ------------------------------------------------------------------------------------------


def test_stats_of_a_session_count_every_kind_of_usage_and_every_branch(store: SessionStore) -> None:
    sid = store.import_entries(header("s1"), rich_entries()).session_id
    stats = store.stats(sid)
    data = stats.to_json()
    assert list(data) == ["sessionId", "userMessages", "assistantMessages", "toolCalls", "toolResults",
                          "totalMessages", "tokens", "cost", "breakdown"]
    assert (data["userMessages"], data["assistantMessages"], data["toolCalls"], data["toolResults"],
            data["totalMessages"]) == (2, 2, 2, 2, 6)
    assert data["tokens"] == {"input": 358, "output": 40, "cacheRead": 1900, "cacheWrite": 50, "total": 2348}
    assert data["cost"] == pytest.approx(0.5 + 0.01 + 0.25 + 0.125 + 0.0625, rel=1e-15)
    assert [(i["key"], i["tokens"]) for i in data["breakdown"]] == [
        ("p1/m1", 100 + 10 + 1000 + 50 + 1 + 900), ("p1/real", 220), ("Tools/summaries", 2 + 55 + 10)]
    assert [i["cost"] for i in data["breakdown"]] == pytest.approx([0.625, 0.25, 0.0725], rel=1e-15)
    assert stats.selected_model == "p1/m1" and stats.name is None
    # the same session appended entry by entry has the same stats
    appended = store.create_session(cwd="/w/proj", session_id="s2")
    store.append_model_change(appended, provider="p1", model_id="m1")
    for e in rich_entries()[1:]:
        if e["type"] == "message":
            store.append_message(appended, e["message"])
        elif e["type"] == "usage":
            store.append_usage(appended, kind=e["kind"], provider=e["provider"], model=e["model"], usage=e["usage"])
    store.branch_with_summary(appended, store.leaf(appended), "b", usage=usage(7, 3, 0, 0, 0))
    store.compact(appended, summary="s", first_kept_entry_id=store.leaf(appended), tokens_before=5,
                  usage=usage(50, 5, 0, 0, 0.0625))
    again = store.stats(appended).to_json()
    # (the compaction and the summary appended now fall on today's bucket: their costs add in another order)
    assert {**again, "sessionId": sid, "cost": 0, "breakdown": []} == {**data, "cost": 0, "breakdown": []}
    assert again["cost"] == pytest.approx(data["cost"], rel=1e-15)
    assert [(i["key"], i["tokens"]) for i in again["breakdown"]] == [(i["key"], i["tokens"]) for i in data["breakdown"]]


def test_hostile_usage_is_read_as_zero_and_a_missing_usage_does_not_fail(store: SessionStore) -> None:
    no_usage = {k: v for k, v in assistant("x").items() if k != "usage"}
    entries = [
        msg("a", None, no_usage),  # pi: TypeError (usage.input of undefined)
        msg("b", "a", paid(assistant("y"), {"input": "5", "output": 2, "cost": {"total": "1"}})),  # pi: "05"
        {**entry("u", "b", "usage", provider="p", model="m", usage=None), "kind": "k"},  # pi: TypeError
        msg("c", "u", "not an object"),
    ]
    sid = store.import_entries(header("hostile"), entries).session_id
    data = store.stats(sid).to_json()
    assert (data["assistantMessages"], data["totalMessages"]) == (2, 3)
    assert data["tokens"] == {"input": 0, "output": 2, "cacheRead": 0, "cacheWrite": 0, "total": 2}
    assert data["cost"] == 0 and data["breakdown"] == [{"key": "p1/m1", "cost": 0, "tokens": 2}]


def test_stats_errors_are_the_stores_own(store: SessionStore) -> None:
    with pytest.raises(SessionNotFoundError):
        store.stats("missing")
    with pytest.raises(InvalidInputError, match="by must be one of"):
        store.stats_all(by="week")
    with pytest.raises(InvalidInputError):
        store.stats_all(since_ms="yesterday")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        store.stats(None)  # type: ignore[arg-type]


def test_stats_all_sums_the_sessions_ls_lists_per_model_and_day(store: SessionStore, tmp_path: Path) -> None:
    first = store.import_entries(header("s1", "/w/proj"), rich_entries()).session_id
    store.import_entries(header("s2", "/w/other"), [msg("a", None, paid(assistant("x"), usage(5, 5, 0, 0, 1.0)))])
    store.create_session(cwd="/w/proj", session_id="empty")
    one = store.stats(first)
    everything = store.stats_all()
    assert everything.sessions == 3 and everything.cost == one.cost + 1.0
    assert everything.messages == one.messages + Messages(1, 0, 1, 0, 0)
    assert [i.key for i in everything.breakdown] == ["p1/m1", "p1/real", "Tools/summaries"]  # 0.625 + 1.0 for p1/m1
    in_proj = store.stats_all(cwd="/w/proj/./")
    assert in_proj.sessions == 2 and in_proj.usage == one.usage and in_proj.messages == one.messages
    assert store.stats_all(since_ms=TS_MS).sessions == 3  # the builders' TS_MS; "empty": now
    # (pi's modified, the listing's with sort="modified")
    assert store.stats_all(since_ms=TS_MS + 1).sessions == 1
    assert len(store.list_sessions(since_ms=TS_MS + 1, sort="modified")) == 1
    by_day = store.stats_all(cwd="/w/proj", by="day").to_json()
    assert [g["day"] for g in by_day["groups"]] == ["2025-01-01", "2025-01-02"]
    assert by_day["groups"][1]["breakdown"] == [{"key": "p1/real", "cost": 0.25, "tokens": 220},
                                                {"key": "p1/m1", "cost": 0.125, "tokens": 901}]
    assert by_day["groups"][1]["entries"] == 2
    by_model = store.stats_all(by="model")
    assert [g.value for g in by_model.groups] == ["p1/m1", "p1/real", "Tools/summaries"]
    assert [g.usage.cost for g in by_model.groups] == pytest.approx([1.625, 0.25, 0.0725], rel=1e-15)
    assert "userMessages" not in by_model.to_json()["groups"][0]  # counts are per session, not per model
    store.delete_session(first)
    assert store.stats_all().cost == 1.0
    assert store.stats_all(cwd=str(tmp_path)).to_json() == {
        "sessions": 0, "userMessages": 0, "assistantMessages": 0, "toolCalls": 0, "toolResults": 0,
        "totalMessages": 0, "tokens": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        "cost": 0, "breakdown": []}


# -- the CLI ------------------------------------------------------------------------------------------


@pytest.fixture
def run(db_url: str) -> Any:
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        return runner.invoke(cli, ["--db", db_url, *args], catch_exceptions=False)

    return invoke


def test_cli_stats_of_a_session_text_and_json(run: Any) -> None:
    run("import", str(PI_FILES["before-compaction"]))
    out = run("stats", "ffae").stdout
    assert out.startswith("Session Info\n\nFile: In database ")
    assert "ID: ffae836b-9420-4060-ac13-7745215f90ff\n" in out
    assert "Tools: 454 calls, 448 results" in out and "Input: 56,382,684" in out and "Total: $42.596" in out
    data = json.loads(run("stats", "--json", "ffae836b").stdout)
    assert data["totalMessages"] == 990 and data["breakdown"][0]["key"] == "anthropic/claude-opus-4-5"


def test_cli_stats_all_with_filters_and_groups(run: Any) -> None:
    run("import", str(PI_FILES["before-compaction"]))
    run("import", str(PI_FILES["large-session"]))
    data = json.loads(run("stats", "--all", "--by", "day", "--json").stdout)
    assert data["sessions"] == 2 and len(data["groups"]) == 4 and data["groups"][0]["day"] == "2025-11-20"
    text = run("stats", "--all", "--by", "model").stdout
    assert text.startswith("Session Stats\n\nSessions: 2\n") and "By model\nanthropic/claude-opus-4-5: $42.596" in text
    assert json.loads(run("stats", "--all", "--since", "2030-01-01", "--json").stdout)["sessions"] == 0
    assert json.loads(run("stats", "--all", "--cwd", "/nowhere", "--json").stdout)["sessions"] == 0


@pytest.mark.parametrize(("args", "message"), [
    ((), "Missing argument 'SESSION'"),
    (("abc", "--all"), "not both"),
    (("abc", "--by", "day"), "--by goes with --all"),
    (("abc", "--cwd", "/w"), "--cwd goes with --all"),
    (("--all", "--by", "week"), "Invalid value for '--by'"),
    (("--all", "--since", "someday"), "--since: not a date"),
    (("nope",), "no session 'nope'"),
    (("",), "an empty session id"),
    (("--all", "--cwd", "\udcff"), "not valid UTF-8"),
])
def test_cli_stats_refuses_bad_input_in_one_line_without_a_traceback(run: Any, store: SessionStore,
                                                                     args: tuple[str, ...], message: str) -> None:
    # (store: the database exists; stats only reads, and a read of a missing database is refused first)
    done = run("stats", *args)
    assert done.exit_code == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_cli_stats_names_an_ambiguous_prefix(run: Any, store: SessionStore) -> None:
    store.create_session(cwd="/w", session_id="abc-1")
    store.create_session(cwd="/w", session_id="abc-2")
    done = run("stats", "abc")
    assert done.exit_code == 2 and "ambiguous" in done.stderr
    assert "Total: 0" in run("stats", "abc-1").stdout


# -- a database written at revision 0007 ----------------------------------------------------------------


def test_a_database_written_at_0007_gets_its_stats_from_the_upgrade(engine: Engine) -> None:
    """Rows as revision 0007's code wrote them (a linear session: each entry's parent the one before),
    no counters and no usage rows; after the upgrade the stats equal those of the same entries
    imported now."""
    migrate.upgrade(engine, "0007")
    entries = rich_entries()
    pg = engine.dialect.name == "postgresql"
    as_json = "CAST(:{} AS json)" if pg else ":{}"
    model_seq = [i for i, e in enumerate(entries) if e["type"] == "model_change"
                 or (e["type"] == "message" and e["message"]["role"] == "assistant")]
    last = len(entries) - 1
    with engine.begin() as conn:
        key = conn.execute(text(
            "INSERT INTO sessionstore_sessions (id, version, cwd, created, header, entry_count, message_count,"
            " first_message, modified_ms, deleting, leaf_id, leaf_seq, leaf_run_start, leaf_depth, leaf_ctx_depth,"
            f" leaf_model_seq) VALUES ('old', 3, '/w/proj', :created, {as_json.format('header')}, :n, 6, 'hi',"
            f" :modified, FALSE, :leaf, :last, 0, :last, 0, :model) RETURNING key"),
            {"created": TS, "header": json.dumps(header("old")), "n": len(entries), "modified": TS_MS,
             "leaf": entries[-1]["id"], "last": last, "model": model_seq[-1]}).scalar_one()
        for seq, e in enumerate(entries):
            conn.execute(text(
                "INSERT INTO sessionstore_entries (session_key, seq, entry_id, parent_seq, run_start, depth,"
                f" ctx_depth, model_seq, type, payload) VALUES (:key, :seq, :eid, :parent, 0, :seq, 0, :model,"
                f" :type, {as_json.format('payload')})"),
                {"key": key, "seq": seq, "eid": e["id"], "parent": None if seq == 0 else seq - 1, "type": e["type"],
                 "model": max((s for s in model_seq if s <= seq), default=None), "payload": json.dumps(e)})
    assert migrate.upgrade(engine) == SCHEMA_REVISION
    url = engine.url.render_as_string(hide_password=False)
    with SessionStore(url) as store:
        upgraded = store.stats("old")
        fresh = store.stats(store.import_entries(header("new"), rich_entries()).session_id)
    assert upgraded.to_json() == {**fresh.to_json(), "sessionId": "old"}
    assert upgraded.selected_model == fresh.selected_model == "p1/m1"
    assert upgraded.messages == Messages(6, 2, 2, 2, 2) and upgraded.cost == pytest.approx(0.9475, rel=1e-15)


@pytest.mark.parametrize(("timestamp", "day"), [
    ("0000-01-01T00:00:00.000Z", "0000-01-01"), ("0000-03-01T00:00:00.000Z", "0000-03-01"),
    ("1970-01-01T00:00:00.000Z", "1970-01-01"), ("1969-12-31T23:59:59.999Z", "1969-12-31"),
    ("-000001-12-31T12:00:00.000Z", "-000001-12-31"), ("-271821-04-20T00:00:00.000Z", "-271821-04-20"),
    ("+275760-09-13T00:00:00.000Z", "+275760-09-13"), ("2024-02-29T12:00:00.000Z", "2024-02-29"),
])
def test_the_day_of_an_entry_is_its_utc_date_before_the_common_era_too(timestamp: str, day: str) -> None:
    """(Found by review: the era of a day before 0000-03-01 came out one too low.)"""
    from sessionstore.models.entry_catalog import day_of

    assert day_of({"timestamp": timestamp}) == day
