// pi's own session stats, the oracle of sessionstore's `stats` (tests/differential/test_stats_against_pi.py).
//
// Loads pi 1.6 from SESSIONSTORE_PI_DIR as pi_oracle.mjs does (a node_modules directory holding
// @earendil-works/pi-coding-agent). Imported from pi: dist/core/session-manager.js (SessionManager:
// loading files, building sessions), dist/core/usage-totals.js (createUsageTotals, addUsageToTotals,
// getUsageCostBreakdown) and formatTokens from dist/modes/interactive/components/footer.js.
// dist/core/agent-session.js does not load on Node 20, so two things are PORTS, line for line:
//   - getSessionStats() (agent-session.js, AgentSession.getSessionStats): the loop over
//     sessionManager.getEntries(), with pi's own addUsageToTotals;
//   - the text of /session (interactive-mode.js, handleSessionCommand's renderInfo) without the theme's
//     colours, without the "Cache Warming" block and the "Cache Re-billed" line (live-session state
//     and model prices the store does not have), and with the Cost block shown when cost > 0.
//
//   node pi_stats.mjs stats [--location TEXT] FILE...
//     One JSON line per file: {"file", "sessionId", "name", "selectedModel", "stats": {userMessages,
//     assistantMessages, toolCalls, toolResults, totalMessages, tokens: {input, output, cacheRead,
//     cacheWrite, total}, cost}, "breakdown": [{key, cost, tokens}], "text"} or {"file", "error"} where
//     pi throws. selectedModel = `${provider}/${modelId}` of buildSessionContext().model (the model a
//     resume selects), null without one; "text" prints TEXT (default "In database") as the File.
//   node pi_stats.mjs formats JSON
//     For each number of the JSON array: [toFixed(3), toFixed(1), toLocaleString(), formatTokens()].
//   node pi_stats.mjs build --out DIR
//     Writes session files through pi's SessionManager that hold every kind of usage pi counts
//     (assistant with and without responseModel, toolResult usage, usage entries, compaction and
//     branch_summary usage), several days, zero costs, fractional tokens and the rounding edges of
//     the text; prints a JSON array of their paths.

import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

function packageRoot() {
  const dir = process.env.SESSIONSTORE_PI_DIR;
  if (!dir) throw new Error("SESSIONSTORE_PI_DIR is not set (a node_modules directory holding pi)");
  return join(resolve(dir), "@earendil-works", "pi-coding-agent");
}

async function loadPi() {
  const root = packageRoot();
  const load = (...parts) => import(pathToFileURL(join(root, "dist", ...parts)).href);
  const sm = await load("core", "session-manager.js");
  const usage = await load("core", "usage-totals.js");
  const footer = await load("modes", "interactive", "components", "footer.js");
  return { ...sm, ...usage, formatTokens: footer.formatTokens };
}

// ---------------------------------------------------------------------------------------------
// Port of AgentSession.getSessionStats (pi 1.6 dist/core/agent-session.js), sessionManager = sm.

function getSessionStats(pi, sm) {
  let userMessages = 0;
  let assistantMessages = 0;
  let toolResults = 0;
  let totalMessages = 0;
  let toolCalls = 0;
  const usageTotals = pi.createUsageTotals();
  for (const entry of sm.getEntries()) {
    if (entry.type === "usage") {
      pi.addUsageToTotals(usageTotals, entry.usage);
    } else if ((entry.type === "branch_summary" || entry.type === "compaction") && entry.usage) {
      pi.addUsageToTotals(usageTotals, entry.usage);
    }
    if (entry.type !== "message") continue;
    totalMessages++;
    const message = entry.message;
    if (message.role === "user") {
      userMessages++;
    } else if (message.role === "toolResult") {
      toolResults++;
      if (message.usage) {
        pi.addUsageToTotals(usageTotals, message.usage);
      }
    } else if (message.role === "assistant") {
      assistantMessages++;
      if (Array.isArray(message.content)) {
        toolCalls += message.content.filter((c) => c.type === "toolCall").length;
      }
      pi.addUsageToTotals(usageTotals, message.usage);
    }
  }
  return {
    userMessages,
    assistantMessages,
    toolCalls,
    toolResults,
    totalMessages,
    tokens: {
      input: usageTotals.input,
      output: usageTotals.output,
      cacheRead: usageTotals.cacheRead,
      cacheWrite: usageTotals.cacheWrite,
      total: usageTotals.input + usageTotals.output + usageTotals.cacheRead + usageTotals.cacheWrite,
    },
    cost: usageTotals.cost,
  };
}

// Port of renderInfo (pi 1.6 dist/modes/interactive/interactive-mode.js, handleSessionCommand).
function renderInfo(pi, stats, sessionName, sessionId, location, usageBreakdown, selectedModelKey) {
  let info = "Session Info\n\n";
  if (sessionName) info += `Name: ${sessionName}\n`;
  info += `File: ${location}\n`;
  info += `ID: ${sessionId}\n\n`;
  info += "Messages\n";
  info += `Total: ${stats.totalMessages}\n`;
  info += `User: ${stats.userMessages}\n`;
  info += `Assistant: ${stats.assistantMessages}\n`;
  info += `Tools: ${stats.toolCalls} calls, ${stats.toolResults} results\n\n`;
  info += "Tokens\n";
  const { input, cacheRead, cacheWrite } = stats.tokens;
  const promptTokens = input + cacheRead + cacheWrite;
  info += `Input: ${promptTokens.toLocaleString()}\n`;
  if (promptTokens > 0 && (cacheRead > 0 || cacheWrite > 0)) {
    const hitRate = `(${((cacheRead / promptTokens) * 100).toFixed(1)}%)`;
    info += `  Cached: ${cacheRead.toLocaleString()} ${hitRate}\n`;
    const written = cacheWrite > 0 ? ` (${cacheWrite.toLocaleString()} written to cache)` : "";
    info += `  Uncached: ${(input + cacheWrite).toLocaleString()}${written}\n`;
  }
  info += `Output: ${stats.tokens.output.toLocaleString()}\n`;
  info += `Total: ${stats.tokens.total.toLocaleString()}\n`;
  // (Cache Warming block left out)
  if (stats.cost > 0) {
    info += "\nCost\n";
    info += `Total: $${stats.cost.toFixed(3)}`;
    if (usageBreakdown.length > 1 || usageBreakdown[0]?.key !== selectedModelKey) {
      for (const entry of usageBreakdown) {
        info += `\n  ${entry.key}: $${entry.cost.toFixed(3)} (${pi.formatTokens(entry.tokens)} tokens)`;
      }
    }
    // (Cache Re-billed line left out)
  }
  return info.replace(/\n$/, "");
}

function statsOf(pi, file, scratch, location) {
  const copy = join(scratch, `${statsOf.count++}-${basename(file)}`);
  copyFileSync(file, copy);
  try {
    const sm = pi.SessionManager.open(copy, scratch);
    const stats = getSessionStats(pi, sm);
    const breakdown = pi.getUsageCostBreakdown(sm.getEntries());
    const model = sm.buildSessionContext().model;
    const selectedModel = model ? `${model.provider}/${model.modelId}` : null;
    const name = sm.getSessionName() ?? null;
    const sessionId = sm.getSessionId();
    const text = renderInfo(pi, stats, name, sessionId, location, breakdown, selectedModel);
    return { file, sessionId, name, selectedModel, stats, breakdown, text };
  } catch (error) {
    return { file, error: `${error?.name ?? "Error"}: ${error?.message ?? String(error)}` };
  }
}
statsOf.count = 0;

async function stats(args) {
  const pi = await loadPi();
  const scratch = mkdtempSync(join(tmpdir(), "pi-stats-"));
  try {
    for (const file of args._) {
      process.stdout.write(`${JSON.stringify(statsOf(pi, resolve(file), scratch, args.location ?? "In database"))}\n`);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// build: sessions holding every kind of usage

function installClock() {
  // Entries 7 hours apart: a session spans several UTC days (stats --by day, and sums across days).
  const RealDate = Date;
  let clockMs = RealDate.UTC(2026, 1, 27, 20, 0, 0);
  class SteppedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) {
        clockMs += 7 * 3600 * 1000;
        super(clockMs);
      } else super(...args);
    }
    static now() {
      clockMs += 7 * 3600 * 1000;
      return clockMs;
    }
  }
  globalThis.Date = SteppedDate;
}

function usage(input, output, cacheRead, cacheWrite, total) {
  const cost = { input: input * 3e-6, output: output * 1.5e-5, cacheRead: cacheRead * 3e-7, cacheWrite: cacheWrite * 3.75e-6 };
  cost.total = total ?? cost.input + cost.output + cost.cacheRead + cost.cacheWrite;
  return { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost };
}

const user = (text) => ({ role: "user", content: text, timestamp: Date.now() });

function assistant(provider, model, u, { calls = 0, responseModel, stopReason } = {}) {
  const content = [{ type: "text", text: "ok" }];
  for (let i = 0; i < calls; i++) content.push({ type: "toolCall", id: `call_${model}_${i}_${Date.now()}`, name: "read", arguments: { path: "a" } });
  const message = { role: "assistant", content, api: "anthropic-messages", provider, model, usage: u, stopReason: stopReason ?? (calls ? "toolUse" : "stop"), timestamp: Date.now() };
  if (responseModel !== undefined) message.responseModel = responseModel;
  return message;
}

function toolResult(u) {
  const message = { role: "toolResult", toolCallId: "call_x", toolName: "read", content: [{ type: "text", text: "x" }], isError: false, timestamp: Date.now() };
  if (u !== undefined) message.usage = u;
  return message;
}

const BUILDERS = {
  // every contribution kind, over several days and three keys
  "every-kind"(sm) {
    sm.appendModelChange("anthropic", "claude-sonnet-4-5");
    sm.appendMessage(user("start"));
    sm.appendMessage(assistant("anthropic", "claude-sonnet-4-5", usage(1200, 300, 40000, 2500), { calls: 2 }));
    sm.appendMessage(toolResult(usage(10, 5, 0, 0)));
    sm.appendMessage(toolResult());
    const mid = sm.appendMessage(assistant("openrouter", "auto", usage(900, 120, 0, 0), { calls: 1, responseModel: "anthropic/claude-opus-4-5" }));
    sm.appendMessage(toolResult(usage(3, 2, 1, 1)));
    sm.appendUsage("cache_warm", "anthropic", "claude-sonnet-4-5", usage(0, 1, 38000, 0), "warm");
    sm.appendMessage(assistant("anthropic", "claude-sonnet-4-5", usage(700, 80, 41000, 300), { stopReason: "aborted" }));
    sm.appendCompaction("Summary", mid, 50000, undefined, undefined, usage(20000, 900, 0, 0));
    sm.appendMessage(user("again"));
    sm.appendMessage(assistant("anthropic", "claude-sonnet-4-5", usage(50, 40, 42000, 100), { stopReason: "error" }));
    sm.branchWithSummary(mid, "left that", undefined, undefined, usage(5000, 200, 0, 0));
    sm.appendMessage(assistant("openrouter", "auto", usage(80, 20, 0, 0), { responseModel: null }));
    sm.appendSessionInfo("every kind");
  },
  // zero costs: tokens without cost stay in the breakdown, a key with neither goes
  "zero-cost"(sm) {
    sm.appendMessage(user("hi"));
    sm.appendMessage(assistant("local", "llama", usage(100, 10, 0, 0, 0)));
    sm.appendMessage(assistant("local", "nothing", usage(0, 0, 0, 0, 0)));
    sm.appendUsage("summary", "google", "gemini-2.5-pro", usage(10, 10, 0, 0, 0.0625));
  },
  // one key, the selected model: the per-key lines are left out
  "single-selected"(sm) {
    sm.appendModelChange("openai", "gpt-5");
    sm.appendMessage(user("hi"));
    sm.appendMessage(assistant("openai", "gpt-5", usage(1500, 9999, 0, 0)));
    sm.appendMessage(assistant("openai", "gpt-5", usage(999999, 1, 0, 0)));
  },
  // one key, but the model selected last is another: the line is printed
  "single-other"(sm) {
    sm.appendMessage(user("hi"));
    sm.appendMessage(assistant("openai", "gpt-5", usage(12345678, 2, 0, 0)));
    sm.appendModelChange("openai", "gpt-5-mini");
  },
  // fractional tokens and rounding ties in the text
  "fractions"(sm) {
    sm.appendMessage(user("hi"));
    sm.appendMessage(assistant("anthropic", "claude-opus-4-5", usage(1234.5675, 0.5, 1.0005, 0, 0.0005)));
    sm.appendMessage(assistant("anthropic", "claude-opus-4-5", usage(2, 3, 0, 8.0005, 1.0625)));
  },
  // no usage at all: no Cost block
  "no-usage"(sm) {
    sm.appendMessage(user("hi"));
    sm.appendMessage(user("anyone?"));
    sm.appendMessage(toolResult());
  },
};

async function build(args) {
  installClock();
  const pi = await loadPi();
  const out = resolve(args.out ?? "pi-stats-sessions");
  const files = [];
  for (const [name, fill] of Object.entries(BUILDERS)) {
    const dir = join(out, name);
    mkdirSync(dir, { recursive: true });
    const sm = pi.SessionManager.create(`/work/stats-${name}`, dir);
    fill(sm);
    if (!sm.getEntries().some((e) => e.type === "message" && e.message.role === "assistant")) {
      // pi writes the file once an assistant message is there; write the rest as pi would have
      sm.appendMessage(assistant("local", "nothing", usage(0, 0, 0, 0, 0)));
    }
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".jsonl")).sort()) files.push(join(dir, file));
  }
  process.stdout.write(`${JSON.stringify(files)}\n`);
}

// ---------------------------------------------------------------------------------------------

function parseArgs(argv) {
  const args = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith("--")) args[argv[i].slice(2)] = argv[++i];
    else args._.push(argv[i]);
  }
  return args;
}

const [mode, ...rest] = process.argv.slice(2);
try {
  if (mode === "stats") await stats(parseArgs(rest));
  else if (mode === "build") await build(parseArgs(rest));
  else if (mode === "formats") {
    const pi = await loadPi();
    const values = JSON.parse(rest[0]);
    process.stdout.write(`${JSON.stringify(values.map((v) => [v.toFixed(3), v.toFixed(1), v.toLocaleString(), pi.formatTokens(v)]))}\n`);
  }
  else {
    process.stderr.write("usage: pi_stats.mjs stats [--location TEXT] FILE... | formats JSON | build --out DIR\n");
    process.exit(2);
  }
} catch (error) {
  process.stderr.write(`pi_stats: ${error?.stack ?? error}\n`);
  process.exit(1);
}
