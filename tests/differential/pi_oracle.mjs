// pi's own code as the oracle for sessionstore's differential tests.
//
// Plain Node ESM, no build step, no dependency beyond pi's packages. It loads pi 1.6 from
// SESSIONSTORE_PI_DIR, which names a node_modules directory holding
// @earendil-works/pi-coding-agent (and @earendil-works/pi-ai beside it), e.g. the one
// `.ci/install-pi.sh` fills: ${XDG_CACHE_HOME:-$HOME/.cache}/sessionstore/pi-1.6.0/node_modules.
// Only dist/core/session-manager.js and dist/core/messages.js are imported (agent-session.js needs
// Node 22; these two run on Node 18 and 20).
//
//   node pi_oracle.mjs generate --seed N --sessions K --out DIR
//     Writes K seeded pseudo-random sessions through pi's SessionManager, group i in DIR/sNNN/
//     (the session and the forks createBranchedSession made from it), and DIR/manifest.json:
//     {"pi": version, "seed", "groups": [{"name", "profile", "files": [...], "ops": {op: count},
//     "refused": {reason: count}}]}. Profile "classic" uses only what pi had before 1.6 (no system
//     messages, context edits or usage entries); "pi16" uses everything.
//   node pi_oracle.mjs eval [--max-leaves N] FILE...
//     For each file, one JSON line:
//       {"file", "entries": n, "idsRegenerated": bool, "pool": [MESSAGE...], "leaves": [LEAF...]}
//       or {"file", "error"} when pi cannot open the file.
//     LEAF = {"leaf": "entry", "leafId", "position", "context", "llm", "sources"}   context at that entry
//          | {"leaf": "default", "leafId", "context", "llm", "sources"}  pi's own leaf after opening the file
//          | {"leaf": "none", "leafId": null, "context", "llm", "sources"}  the leaf reset before the first entry
//          | {... "error": "..."} instead of context/llm where pi throws (or would never return)
//     context = buildSessionContext() and llm = convertToLlm(context.messages), as JSON.stringify
//     writes them, except that each message is written once, in "pool", and context.messages and
//     llm hold indexes into it (60 leaves of a 1,000-entry session would otherwise repeat the same
//     messages 60 times: hundreds of megabytes for the repository's real pi files). "sources" names
//     the entry each of context.messages comes from (buildSessionProjection's provenance).
//     "position" is the leaf's index in pi's entry list (header excluded); "idsRegenerated" says pi
//     gave the entries new random ids while loading (a v1 file), so only positions identify them.
//     Each file is loaded from a temporary copy: pi's loader may append a newline or rewrite a
//     migrated file, and the inputs must stay as they are. At most N (default 60) entry leaves per
//     file, evenly spaced, the last entry always among them.
//
//   node pi_oracle.mjs list DIR...
//     For each directory, one JSON line: pi's SessionManager.listAll(DIR), the SessionInfo of every
//     session file pi lists there in pi's order ({"path", "id", "cwd", "name", "parentSessionPath",
//     "created", "modified", "messageCount", "firstMessage", "allMessagesText"}; times in milliseconds,
//     null if invalid).
//     It only reads the files.
//
//   node pi_oracle.mjs resolve BASE PATH...
//     One JSON array: pi's resolvePath(PATH, BASE) of each PATH (utils/paths.js).
//
//   node pi_oracle.mjs upgrade FILE...
//     For each file, one JSON line: {"file", "text"}, the file as pi's SessionManager.open(copy)
//     leaves it (a v1/v2 file migrated by migrateToCurrentVersion and rewritten by _rewriteFile; a v3
//     file as it was, with the newline pi adds to a last line without one), or {"file", "error"}.
//     The n-th id pi draws for a file (randomUUID().slice(0, 8)) is n as 8 hex digits, sessionstore's
//     id for the v1 entry at position n (header = 0), so pi's rewrite can be compared byte for byte.
//     Each file is opened from a temporary copy; the inputs stay as they are.
//
// Determinism: Date (a seeded clock) and the random sources of ids (crypto.randomUUID,
// crypto.getRandomValues) are replaced before pi is imported, so a seed gives the same files.

import { createRequire, syncBuiltinESMExports } from "node:module";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const DEFAULT_MAX_LEAVES = 60;
const require = createRequire(import.meta.url);

// ---------------------------------------------------------------------------------------------
// Seeded randomness

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Rng {
  constructor(seed) {
    this.next = mulberry32(seed);
  }
  int(lo, hi) {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p) {
    return this.next() < p;
  }
  pick(items) {
    return items[Math.floor(this.next() * items.length)];
  }
  weighted(table) {
    const total = table.reduce((sum, [, w]) => sum + w, 0);
    let r = this.next() * total;
    for (const [item, w] of table) {
      r -= w;
      if (r < 0) return item;
    }
    return table[table.length - 1][0];
  }
  hex(n) {
    let s = "";
    for (let i = 0; i < n; i++) s += "0123456789abcdef"[this.int(0, 15)];
    return s;
  }
}

let idRng = new Rng(1);
let clockRng = new Rng(2);
let clockMs = Date.UTC(2026, 0, 5, 9, 0, 0);

function installDeterminism(seed) {
  idRng = new Rng(seed * 7919 + 17);
  clockRng = new Rng(seed * 104729 + 3);
  clockMs = Date.UTC(2026, 0, 5, 9, 0, 0) + seed * 1000;
  const RealDate = Date;
  const tick = () => {
    clockMs += clockRng.int(1, 4000);
    return clockMs;
  };
  class SeededDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(tick());
      else super(...args);
    }
    static now() {
      return tick();
    }
  }
  globalThis.Date = SeededDate;
  const nodeCrypto = require("node:crypto");
  nodeCrypto.randomUUID = () => {
    const h = idRng.hex(32);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
  };
  syncBuiltinESMExports();
  // Node 18 (Debian 12's nodejs) has no global Web Crypto without a flag; pi-ai's uuidv7 needs it.
  if (globalThis.crypto === undefined) {
    Object.defineProperty(globalThis, "crypto", { configurable: true, value: nodeCrypto.webcrypto });
  }
  Object.defineProperty(globalThis.crypto, "getRandomValues", {
    configurable: true,
    value: (bytes) => {
      for (let i = 0; i < bytes.length; i++) bytes[i] = idRng.int(0, 255);
      return bytes;
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Loading pi

function packageRoot() {
  const dir = process.env.SESSIONSTORE_PI_DIR;
  if (!dir) throw new Error("SESSIONSTORE_PI_DIR is not set (a node_modules directory holding pi)");
  const root = join(resolve(dir), "@earendil-works", "pi-coding-agent");
  if (!existsSync(join(root, "package.json"))) {
    throw new Error(`no @earendil-works/pi-coding-agent in SESSIONSTORE_PI_DIR=${dir}`);
  }
  return root;
}

async function loadPi() {
  const root = packageRoot();
  const version = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;
  const sm = await import(pathToFileURL(join(root, "dist", "core", "session-manager.js")).href);
  const messages = await import(pathToFileURL(join(root, "dist", "core", "messages.js")).href);
  return { version, ...sm, convertToLlm: messages.convertToLlm };
}

// ---------------------------------------------------------------------------------------------
// Random content

const WORDS = [
  "alpha", "beta", "refactor", "the", "test", "fails", "because", "über", "naïve", "日本語", "🙂",
  "path/to/file.ts", "`code`", "line\nbreak", "tab\there", "quote\"d", "back\\slash", "</summary>", "",
];
const PROVIDERS = [
  ["anthropic", "anthropic-messages", ["claude-sonnet-4-5", "claude-opus-4-5"]],
  ["openai", "openai-responses", ["gpt-5", "gpt-5-mini"]],
  ["google", "google-generative-ai", ["gemini-2.5-pro"]],
];
const TOOL_NAMES = ["read", "bash", "edit", "write", "grep"];
const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh"];

function words(rng, lo = 1, hi = 8) {
  const n = rng.int(lo, hi);
  const out = [];
  for (let i = 0; i < n; i++) out.push(rng.pick(WORDS));
  return out.join(" ");
}

function image(rng) {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  let data = "";
  for (let i = 0, n = rng.int(4, 40); i < n; i++) data += chars[rng.int(0, 63)];
  return { type: "image", data: `${data}==`, mimeType: rng.pick(["image/png", "image/jpeg", "image/webp"]) };
}

function textBlock(rng) {
  const block = { type: "text", text: words(rng) };
  if (rng.chance(0.1)) block.textSignature = `sig_${rng.hex(12)}`;
  return block;
}

function textOrImages(rng) {
  const blocks = [];
  for (let i = 0, n = rng.int(0, 3); i < n; i++) blocks.push(rng.chance(0.25) ? image(rng) : textBlock(rng));
  return blocks;
}

function jsonValue(rng, depth = 0) {
  const kind = rng.int(0, depth > 2 ? 4 : 6);
  switch (kind) {
    case 0: return words(rng, 0, 3);
    case 1: return rng.int(-1000, 100000);
    case 2: return rng.int(0, 99999) / 100;
    case 3: return rng.chance(0.5);
    case 4: return null;
    case 5: return Array.from({ length: rng.int(0, 3) }, () => jsonValue(rng, depth + 1));
    default: return jsonObject(rng, depth + 1);
  }
}

function jsonObject(rng, depth = 0) {
  const obj = {};
  for (let i = 0, n = rng.int(0, 4); i < n; i++) obj[rng.pick(["path", "limit", "query", "nested", "ünï", "x y", "0", "flag"])] = jsonValue(rng, depth);
  return obj;
}

function usage(rng) {
  const input = rng.int(0, 50000);
  const output = rng.int(0, 4000);
  const cacheRead = rng.int(0, 20000);
  const cacheWrite = rng.int(0, 5000);
  const cost = {
    input: input * 3e-6,
    output: output * 1.5e-5,
    cacheRead: cacheRead * 3e-7,
    cacheWrite: cacheWrite * 3.75e-6,
  };
  cost.total = cost.input + cost.output + cost.cacheRead + cost.cacheWrite;
  if (rng.chance(0.2)) cost.totalFromProvider = rng.chance(0.5);
  const u = { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost };
  if (rng.chance(0.15)) u.reasoning = rng.int(0, 2000);
  return u;
}

// ---------------------------------------------------------------------------------------------
// Messages

class Conversation {
  constructor(rng, profile) {
    this.rng = rng;
    this.profile = profile;
    this.pendingCalls = [];
    this.toolNames = new Set();
  }

  user() {
    const rng = this.rng;
    const content = rng.chance(0.5) ? words(rng) : textOrImages(rng);
    return { role: "user", content, timestamp: Date.now() };
  }

  assistant() {
    const rng = this.rng;
    const [provider, api, models] = rng.pick(PROVIDERS);
    const content = [];
    if (rng.chance(0.4)) {
      const thinking = { type: "thinking", thinking: words(rng, 0, 10) };
      if (rng.chance(0.5)) thinking.thinkingSignature = `ts_${rng.hex(24)}`;
      content.push(thinking);
    }
    if (rng.chance(0.1)) content.push({ type: "thinking", thinking: "", thinkingSignature: `enc_${rng.hex(32)}`, redacted: true });
    if (rng.chance(0.8)) content.push(textBlock(rng));
    const calls = rng.chance(0.4) ? rng.int(1, 3) : 0;
    for (let i = 0; i < calls; i++) {
      const call = { type: "toolCall", id: `call_${rng.hex(10)}`, name: rng.pick(TOOL_NAMES), arguments: jsonObject(rng) };
      if (rng.chance(0.15)) call.thoughtSignature = `th_${rng.hex(16)}`;
      if (rng.chance(0.05)) {
        call.arguments = {};
        call.argumentsError = "Unexpected token } in JSON";
      }
      content.push(call);
      this.pendingCalls.push(call);
    }
    const stopReason = calls > 0 && rng.chance(0.85)
      ? "toolUse"
      : rng.weighted([["stop", 6], ["length", 1], ["error", 1], ["aborted", 1]]);
    const message = {
      role: "assistant",
      content,
      api,
      provider,
      model: rng.pick(models),
      usage: usage(rng),
      stopReason,
      timestamp: Date.now(),
    };
    if (stopReason === "error") message.errorMessage = words(rng, 1, 4);
    if (stopReason === "aborted" && rng.chance(0.5)) message.errorMessage = "Request was aborted";
    if (rng.chance(0.3)) message.responseId = `resp_${rng.hex(16)}`;
    if (rng.chance(0.15)) message.thinkingLevel = rng.pick(THINKING_LEVELS);
    if (rng.chance(0.15)) message.durationMs = rng.int(100, 90000);
    return message;
  }

  toolResult() {
    const rng = this.rng;
    const call = this.pendingCalls.length > 0 && rng.chance(0.85) ? this.pendingCalls.shift() : null;
    const content = rng.chance(0.8) ? [textBlock(rng)] : textOrImages(rng);
    if (rng.chance(0.15)) content.push(image(rng));
    const message = {
      role: "toolResult",
      toolCallId: call ? call.id : `call_${rng.hex(10)}`,
      toolName: call ? call.name : rng.pick(TOOL_NAMES),
      content,
      isError: rng.chance(0.2),
      timestamp: Date.now(),
    };
    if (rng.chance(0.3)) message.details = { diff: words(rng), lines: rng.int(0, 400) };
    if (rng.chance(0.1)) message.durationMs = rng.int(1, 5000);
    return message;
  }

  bash() {
    const rng = this.rng;
    const truncated = rng.chance(0.2);
    const message = {
      role: "bashExecution",
      command: rng.pick(["ls -la", "npm test", "git status", "cat 'a b.txt'", "echo `date`"]),
      output: rng.chance(0.2) ? "" : words(rng, 1, 12),
      exitCode: rng.weighted([[0, 5], [1, 2], [127, 1], [undefined, 1]]),
      cancelled: rng.chance(0.15),
      truncated,
      timestamp: Date.now(),
    };
    if (message.exitCode === undefined) delete message.exitCode;
    if (truncated ? rng.chance(0.8) : rng.chance(0.1)) message.fullOutputPath = `/tmp/pi-bash-${rng.hex(8)}.log`;
    const exclude = rng.weighted([[undefined, 6], [true, 2], [false, 1]]);
    if (exclude !== undefined) message.excludeFromContext = exclude;
    return message;
  }

  custom() {
    const rng = this.rng;
    const message = {
      role: "custom",
      customType: rng.pick(["note", "reminder", "ext.status"]),
      content: rng.chance(0.5) ? words(rng) : textOrImages(rng),
      display: rng.chance(0.5),
      timestamp: Date.now(),
    };
    if (rng.chance(0.4)) message.details = jsonObject(rng);
    return message;
  }

  system() {
    const rng = this.rng;
    const message = { role: "system", content: rng.chance(0.5) ? words(rng, 0, 10) : Array.from({ length: rng.int(0, 3) }, () => textBlock(rng)) };
    if (rng.chance(0.6)) {
      message.sections = {};
      for (let i = 0, n = rng.int(1, 3); i < n; i++) {
        message.sections[rng.pick(["<env>", "<rules>", "## Skills", "agents-md"])] = rng.chance(0.25) ? null : words(rng);
      }
    }
    if (rng.chance(0.5)) {
      message.toolsAdded = [];
      for (let i = 0, n = rng.int(1, 3); i < n; i++) {
        const name = rng.pick(TOOL_NAMES);
        this.toolNames.add(name);
        const tool = {
          name,
          description: words(rng),
          parameters: { type: "object", properties: { path: { type: "string" } }, required: rng.chance(0.5) ? ["path"] : [] },
        };
        if (rng.chance(0.2)) tool.constrainedSampling = rng.chance(0.5);
        message.toolsAdded.push(tool);
      }
    }
    if (rng.chance(0.3)) {
      const known = [...this.toolNames];
      message.toolsRemoved = [{ name: known.length > 0 && rng.chance(0.8) ? rng.pick(known) : rng.pick(TOOL_NAMES) }];
    }
    message.timestamp = Date.now();
    return message;
  }
}

// ---------------------------------------------------------------------------------------------
// generate

const OPS_CLASSIC = [
  ["user", 10], ["assistant", 10], ["toolResult", 6], ["bash", 3], ["customRole", 2],
  ["thinkingLevel", 2], ["modelChange", 2], ["compaction", 2], ["branchWithSummary", 2],
  ["customEntry", 1], ["customMessage", 2], ["label", 2], ["sessionInfo", 1],
  ["branch", 3], ["resetLeaf", 0.5], ["fork", 0.8],
];
const OPS_PI16 = [...OPS_CLASSIC, ["system", 4], ["contextEdit", 5], ["usage", 1.5]];

function randomEntryId(rng, sm) {
  const entries = sm.getEntries();
  return entries.length > 0 ? rng.pick(entries).id : undefined;
}

function randomPathEntryId(rng, sm) {
  const path = sm.getBranch();
  return path.length > 0 ? rng.pick(path).id : undefined;
}

function editTarget(rng, sm) {
  const path = sm.getBranch();
  const editable = path.filter(
    (e) => e.type === "custom_message" || (e.type === "message" && ["user", "assistant", "toolResult"].includes(e.message.role)),
  );
  // Mostly targets pi accepts; sometimes any entry of the session, which pi's writer may refuse.
  if (editable.length > 0 && rng.chance(0.85)) return rng.pick(editable).id;
  return randomEntryId(rng, sm);
}

function replacement(rng) {
  switch (rng.int(0, 2)) {
    case 0: return null;
    case 1: return { content: words(rng) };
    default: return { content: textOrImages(rng) };
  }
}

function applyOp(op, rng, sm, conv) {
  switch (op) {
    case "user": return sm.appendMessage(conv.user());
    case "assistant": return sm.appendMessage(conv.assistant());
    case "toolResult": return sm.appendMessage(conv.toolResult());
    case "bash": return sm.appendMessage(conv.bash());
    case "customRole": return sm.appendMessage(conv.custom());
    case "system": return sm.appendMessage(conv.system());
    case "thinkingLevel": return sm.appendThinkingLevelChange(rng.pick(THINKING_LEVELS));
    case "modelChange": {
      const [provider, , models] = rng.pick(PROVIDERS);
      return sm.appendModelChange(provider, rng.pick(models));
    }
    case "compaction": {
      // Mostly an entry on the path; sometimes none (pi then keeps nothing before the compaction), or
      // any entry of the session (pi does not check; one off the path keeps nothing either).
      const firstKept = rng.weighted([[() => randomPathEntryId(rng, sm), 7], [() => undefined, 2], [() => randomEntryId(rng, sm), 1]])();
      const details = rng.chance(0.4) ? { readFiles: ["a.ts"], modifiedFiles: rng.chance(0.5) ? ["b.ts"] : [] } : undefined;
      const fromHook = rng.weighted([[undefined, 3], [true, 1], [false, 1]]);
      return sm.appendCompaction(`Summary: ${words(rng)}`, firstKept, rng.int(1000, 200000), details, fromHook, rng.chance(0.4) ? usage(rng) : undefined);
    }
    case "branchWithSummary": {
      const target = rng.chance(0.9) ? randomEntryId(rng, sm) ?? null : null;
      const summary = rng.chance(0.85) ? words(rng) : "";
      return sm.branchWithSummary(target, summary, rng.chance(0.3) ? jsonObject(rng) : undefined, rng.chance(0.3) ? rng.chance(0.5) : undefined, rng.chance(0.3) ? usage(rng) : undefined);
    }
    case "customEntry": return sm.appendCustomEntry(rng.pick(["ext.state", "todo"]), rng.chance(0.7) ? jsonObject(rng) : undefined);
    case "customMessage": {
      const content = rng.chance(0.5) ? words(rng) : textOrImages(rng);
      return sm.appendCustomMessageEntry(rng.pick(["note", "ext.inject"]), content, rng.chance(0.5), rng.chance(0.4) ? jsonObject(rng) : undefined);
    }
    case "label": {
      const target = randomEntryId(rng, sm);
      if (target === undefined) throw new Error("no entry to label");
      return sm.appendLabelChange(target, rng.weighted([[words(rng, 1, 2) || "mark", 3], [undefined, 1], ["", 0.5]]));
    }
    case "sessionInfo": return sm.appendSessionInfo(rng.chance(0.2) ? "" : `${words(rng, 1, 3)}\r\n${words(rng, 0, 2)}`);
    case "contextEdit": {
      const target = editTarget(rng, sm);
      if (target === undefined) throw new Error("no entry to edit");
      return sm.appendContextEdit(target, replacement(rng));
    }
    case "usage": {
      const [provider, , models] = rng.pick(PROVIDERS);
      return sm.appendUsage(rng.pick(["cache_warm", "summary"]), provider, rng.pick(models), usage(rng), rng.chance(0.5) ? words(rng) : undefined);
    }
    case "branch": {
      const target = randomEntryId(rng, sm);
      if (target === undefined) throw new Error("no entry to branch from");
      return sm.branch(target);
    }
    case "resetLeaf": return sm.resetLeaf();
    case "fork": {
      const leaf = randomEntryId(rng, sm);
      if (leaf === undefined) throw new Error("no entry to fork at");
      const original = sm.getSessionFile();
      const file = sm.createBranchedSession(leaf);
      // sm is now the fork; sometimes go back to the original session.
      if (rng.chance(0.5)) return { reopen: original };
      return file;
    }
    default: throw new Error(`unknown op ${op}`);
  }
}

function ensureWritten(sm, conv) {
  // pi writes a file only once the session holds a user or assistant message.
  if (!existsSync(sm.getSessionFile())) sm.appendMessage(conv.user());
}

function generateGroup(pi, seed, index, outDir) {
  const rng = new Rng(seed * 1000003 + index * 7777 + 1);
  const profile = index % 4 === 3 ? "classic" : "pi16";
  const dir = join(outDir, `s${String(index).padStart(3, "0")}`);
  mkdirSync(dir, { recursive: true });
  const conv = new Conversation(rng, profile);
  const counts = {};
  const refused = {};
  let sm = pi.SessionManager.create(`/work/project-${index}`, dir);
  // Setup entries first, as pi does (model, thinking level, system prompt), then the first prompt.
  if (rng.chance(0.6)) applyOp("modelChange", rng, sm, conv);
  if (rng.chance(0.4)) sm.appendThinkingLevelChange(rng.pick(THINKING_LEVELS));
  if (profile === "pi16" && rng.chance(0.7)) sm.appendMessage(conv.system());
  sm.appendMessage(conv.user());
  const table = profile === "classic" ? OPS_CLASSIC : OPS_PI16;
  const steps = rng.int(20, 110);
  for (let step = 0; step < steps; step++) {
    const op = rng.weighted(table);
    try {
      const result = applyOp(op, rng, sm, conv);
      counts[op] = (counts[op] ?? 0) + 1;
      if (result && typeof result === "object" && result.reopen) {
        ensureWritten(sm, conv);
        sm = pi.SessionManager.open(result.reopen, dir);
      }
    } catch (error) {
      const reason = String(error.message).replace(/[0-9a-f]{8}/g, "<id>");
      refused[`${op}: ${reason}`] = (refused[`${op}: ${reason}`] ?? 0) + 1;
    }
  }
  ensureWritten(sm, conv);
  const files = readdirSync(dir).filter((f) => f.endsWith(".jsonl")).sort();
  return { name: basename(dir), profile, files, ops: counts, refused };
}

async function generate(args) {
  const seed = Number(args.seed ?? 1);
  const sessions = Number(args.sessions ?? 40);
  const out = resolve(args.out ?? "pi-sessions");
  if (!Number.isInteger(seed) || !Number.isInteger(sessions)) throw new Error("--seed and --sessions take integers");
  installDeterminism(seed);
  const pi = await loadPi();
  mkdirSync(out, { recursive: true });
  const groups = [];
  for (let i = 0; i < sessions; i++) groups.push(generateGroup(pi, seed, i, out));
  writeFileSync(join(out, "manifest.json"), `${JSON.stringify({ pi: pi.version, seed, groups }, null, 1)}\n`);
}

// ---------------------------------------------------------------------------------------------
// eval

function spread(count, max) {
  if (count <= max) return Array.from({ length: count }, (_, i) => i);
  const picked = new Set();
  for (let i = 0; i < max; i++) picked.add(Math.round((i * (count - 1)) / (max - 1)));
  return [...picked].sort((a, b) => a - b);
}

/** The entry where pi's parent walk from `leafId` revisits an entry, if it does (pi then loops forever). */
function cycleFrom(byId, leafId) {
  const seen = new Set();
  let current = byId.get(leafId);
  while (current) {
    if (seen.has(current)) return current.id;
    seen.add(current);
    current = current.parentId ? byId.get(current.parentId) : undefined;
  }
  return undefined;
}

/** Each distinct message once (as JSON.stringify writes it); add() gives its index. */
class MessagePool {
  messages = [];
  #byObject = new Map();
  #byText = new Map();
  add = (message) => {
    let index = this.#byObject.get(message);
    if (index !== undefined) return index;
    const text = JSON.stringify(message);
    index = this.#byText.get(text);
    if (index === undefined) {
      index = this.messages.length;
      this.messages.push(JSON.parse(text));
      this.#byText.set(text, index);
    }
    this.#byObject.set(message, index);
    return index;
  };
}

function contextAt(pi, sm, pool, leaf) {
  try {
    if (leaf.leaf === "none") sm.resetLeaf();
    else if (leaf.leaf === "entry") sm.branch(leaf.leafId);
    const start = leaf.leaf === "default" ? sm.getLeafId() : leaf.leafId;
    const cycle = leaf.leaf === "none" ? undefined : cycleFrom(sm.byId, start ?? sm.getEntries().at(-1)?.id);
    if (cycle !== undefined) return { ...leaf, error: `parent cycle through ${cycle}: pi's buildSessionPath never returns` };
    const context = sm.buildSessionContext();
    const llm = pi.convertToLlm(context.messages);
    // The entry each message comes from (buildSessionContext is this projection without them).
    const sources = sm.buildSessionProjection().entries.flatMap((e) => e.messages.map(() => e.sourceEntry?.id ?? null));
    return {
      ...leaf,
      context: { ...context, messages: context.messages.map(pool.add) },
      llm: llm.map(pool.add),
      sources,
    };
  } catch (error) {
    return { ...leaf, error: `${error?.name ?? "Error"}: ${error?.message ?? String(error)}` };
  }
}

function evalFile(pi, file, scratch, maxLeaves) {
  const copy = join(scratch, `${evalFile.count++}-${basename(file)}`);
  copyFileSync(file, copy);
  let raw;
  let sm;
  try {
    raw = pi.loadEntriesFromFile(copy);
    sm = pi.SessionManager.open(copy, scratch);
  } catch (error) {
    return { file, error: `${error?.name ?? "Error"}: ${String(error?.message ?? error).replaceAll(copy, file)}` };
  }
  const version = raw[0]?.version;
  const defaultLeafId = sm.getLeafId() ?? null;
  const entries = sm.getEntries();
  const positions = new Map();
  entries.forEach((entry, position) => {
    if (entry && typeof entry.id === "string" && entry.id !== "") positions.set(entry.id, position);
  });
  // One leaf per distinct id (pi resolves an id to the LAST entry holding it), in file order.
  const ids = [...positions.entries()].sort((a, b) => a[1] - b[1]).map(([id]) => id);
  // "default" first: contextAt() moves sm's leaf for the others.
  const leaves = [{ leaf: "default", leafId: defaultLeafId }, { leaf: "none", leafId: null }];
  for (const i of spread(ids.length, maxLeaves)) leaves.push({ leaf: "entry", leafId: ids[i], position: positions.get(ids[i]) });
  const pool = new MessagePool();
  const evaluated = leaves.map((leaf) => contextAt(pi, sm, pool, leaf));
  return {
    file,
    entries: entries.length,
    idsRegenerated: raw.length > 0 && (typeof version !== "number" || version < 2),
    pool: pool.messages,
    leaves: evaluated,
  };
}

evalFile.count = 0;

async function evaluate(args) {
  const files = args._;
  const maxLeaves = Number(args["max-leaves"] ?? DEFAULT_MAX_LEAVES);
  if (!Number.isInteger(maxLeaves) || maxLeaves < 2) throw new Error("--max-leaves takes an integer >= 2");
  const pi = await loadPi();
  const scratch = mkdtempSync(join(tmpdir(), "pi-oracle-"));
  try {
    for (const file of files) {
      let line;
      try {
        line = evalFile(pi, resolve(file), scratch, maxLeaves);
      } catch (error) {
        line = { file: resolve(file), error: `${error?.name ?? "Error"}: ${error?.message ?? String(error)}` };
      }
      process.stdout.write(`${JSON.stringify(line)}\n`);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Listing: pi's SessionManager.listAll(dir) for each directory, one JSON line per directory: the
// SessionInfo of every file pi lists there, in pi's order (times as milliseconds, null when invalid).

async function list(args) {
  const pi = await loadPi();
  const time = (date) => (date instanceof Date && !Number.isNaN(date.getTime()) ? date.getTime() : null);
  for (const dir of args._) {
    const infos = await pi.SessionManager.listAll(resolve(dir));
    const rows = infos.map((info) => ({
      path: info.path,
      id: info.id,
      cwd: info.cwd,
      name: info.name ?? null,
      parentSessionPath: info.parentSessionPath ?? null,
      created: time(info.created),
      modified: time(info.modified),
      messageCount: info.messageCount,
      firstMessage: info.firstMessage,
      allMessagesText: info.allMessagesText,
    }));
    process.stdout.write(`${JSON.stringify(rows)}\n`);
  }
}

// Paths: pi's resolvePath(PATH, BASE) for each PATH, one JSON array (how pi matches a session's cwd).

async function resolvePaths(args) {
  const paths = await import(pathToFileURL(join(packageRoot(), "dist", "utils", "paths.js")).href);
  const [base, ...inputs] = args._;
  process.stdout.write(`${JSON.stringify(inputs.map((input) => paths.resolvePath(input, base)))}\n`);
}

// ---------------------------------------------------------------------------------------------
// Upgrades: the file pi's SessionManager rewrites when it opens a v1/v2 session, with the ids it
// draws counted (1, 2, ... per file) instead of random.

async function upgrade(args) {
  const nodeCrypto = require("node:crypto");
  let drawn = 0;
  nodeCrypto.randomUUID = () => `${(++drawn).toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`;
  syncBuiltinESMExports();
  const pi = await loadPi();
  const scratch = mkdtempSync(join(tmpdir(), "pi-oracle-"));
  try {
    args._.forEach((file, i) => {
      const copy = join(scratch, `${i}-${basename(file)}`);
      let line;
      try {
        copyFileSync(file, copy);
        drawn = 0;
        pi.SessionManager.open(copy, scratch);
        line = { file: resolve(file), text: readFileSync(copy, "utf8") };
      } catch (error) {
        line = { file: resolve(file), error: `${error?.name ?? "Error"}: ${error?.message ?? String(error)}` };
      }
      process.stdout.write(`${JSON.stringify(line)}\n`);
    });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
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
  if (mode === "generate") await generate(parseArgs(rest));
  else if (mode === "eval") await evaluate(parseArgs(rest));
  else if (mode === "list") await list(parseArgs(rest));
  else if (mode === "resolve") await resolvePaths({ _: rest });
  else if (mode === "upgrade") await upgrade({ _: rest });
  else {
    process.stderr.write("usage: pi_oracle.mjs generate --seed N --sessions K --out DIR | eval [--max-leaves N] FILE... | list DIR... | resolve BASE PATH... | upgrade FILE...\n");
    process.exit(2);
  }
} catch (error) {
  process.stderr.write(`pi_oracle: ${error?.stack ?? error}\n`);
  process.exit(1);
}
