// pi 1.6 doing what each sessionstore read command does, on a session file, as one node process:
// the peer that benchmarks/cli.py times `sessionstore <command>` against.
//
//   node pi_read.mjs OP FILE [ARG]
//
// OP (output to stdout, as the sessionstore command prints it, JSON.stringify(..., null, 2)):
//   context   open the file, buildSessionContext(), convertToLlm() of its messages
//   validate  the same, printing nothing (pi checks a session by loading it)
//   tree      open, getTree(), written by an explicit stack (JSON.stringify overflows the call stack on
//             a tree thousands of entries deep; entries are stringified one by one, compact)
//   show      open, getEntry(ARG)
//   export    open, the header and getEntries() as JSONL lines
//   stats     open, AgentSession.getSessionStats's counting and usage totals (usage-totals.js)
//   ls        SessionManager.listAll(dirname(FILE)): the facts of every file in that directory
//   search    listAll, then the session picker's filterAndSortSessions(sessions, ARG, "relevance")
//   time      pi's resume timed inside this process, ARG times (default 3): open the file, move the leaf
//             to the header's leafId when it has one (sessionstore's export writes it; pi itself takes the
//             last entry), buildSessionContext(), convertToLlm(); prints {"ms": [each run], "messages": N,
//             "llm": N} (the first run is the one a resuming pi pays: code not yet compiled)
//
// pi is loaded from SESSIONSTORE_PI_DIR (a node_modules directory holding @earendil-works/*).
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

const piDir = process.env.SESSIONSTORE_PI_DIR;
if (!piDir) throw new Error("SESSIONSTORE_PI_DIR is not set");
const load = (path) => import(pathToFileURL(join(piDir, "@earendil-works", "pi-coding-agent", "dist", path)).href);
const [op, file, arg] = process.argv.slice(2);
const out = (value) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

const pi = await load("core/session-manager.js");
const open = () => pi.SessionManager.open(file, dirname(file));

if (op === "context" || op === "validate") {
  const { convertToLlm } = await load("core/messages.js");
  const sm = open();
  const context = sm.buildSessionContext();
  const llm = convertToLlm(context.messages);
  if (op === "context") out({ ...context, llm });
} else if (op === "time") {
  const { convertToLlm } = await load("core/messages.js");
  const ms = [];
  let counts = {};
  for (let run = 0; run < Number(arg ?? 3); run++) {
    const start = performance.now();
    const sm = open();
    const leafId = sm.getHeader()?.leafId;
    if (leafId) sm.branch(leafId);
    const context = sm.buildSessionContext();
    const llm = convertToLlm(context.messages);
    ms.push(performance.now() - start);
    counts = { messages: context.messages.length, llm: llm.length };
  }
  out({ ms, ...counts });
} else if (op === "tree") {
  writeTree(open().getTree());
} else if (op === "show") {
  out(open().getEntry(arg));
} else if (op === "export") {
  const sm = open();
  const lines = [JSON.stringify(sm.getHeader()), ...sm.getEntries().map((e) => JSON.stringify(e))];
  process.stdout.write(`${lines.join("\n")}\n`);
} else if (op === "stats") {
  const usage = await load("core/usage-totals.js");
  const sm = open();
  const totals = usage.createUsageTotals();
  const counts = { user: 0, assistant: 0, toolResults: 0, toolCalls: 0, total: 0 };
  for (const entry of sm.getEntries()) {
    if (entry.type === "usage") usage.addUsageToTotals(totals, entry.usage);
    if (entry.type !== "message") continue;
    counts.total++;
    const m = entry.message;
    if (m.role === "user") counts.user++;
    if (m.role === "toolResult") counts.toolResults++;
    if (m.role === "assistant") {
      counts.assistant++;
      if (Array.isArray(m.content)) counts.toolCalls += m.content.filter((c) => c.type === "toolCall").length;
      if (m.usage) usage.addUsageToTotals(totals, m.usage);
    }
  }
  out({ counts, totals, breakdown: usage.getUsageCostBreakdown(sm.getEntries()) });
} else if (op === "ls" || op === "search") {
  const sessions = await pi.SessionManager.listAll(dirname(file));
  if (op === "ls") {
    out(sessions.map(({ allMessagesText, ...info }) => info));
  } else {
    const search = await load("modes/interactive/components/session-selector-search.js");
    out(search.filterAndSortSessions(sessions, arg, "relevance").map((s) => s.id));
  }
} else {
  throw new Error(`unknown op ${op}`);
}

function writeTree(roots) {
  const parts = ["["];
  const stack = [{ nodes: roots, next: 0 }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    if (top.next >= top.nodes.length) {
      parts.push("]");
      stack.pop();
      if (stack.length > 0) parts.push("}");
      continue;
    }
    const node = top.nodes[top.next++];
    if (top.next > 1) parts.push(",");
    const label = node.label === undefined ? "" : `,"label":${JSON.stringify(node.label)}`;
    parts.push(`{"entry":${JSON.stringify(node.entry)}${label},"children":[`);
    stack.push({ nodes: node.children, next: 0 });
  }
  process.stdout.write(`${parts.join("")}\n`);
}
