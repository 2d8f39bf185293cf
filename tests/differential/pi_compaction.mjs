// pi 1.6's compaction planning (prepareCompaction) at the leaves of session files, for the
// differential tests. Usage: node pi_compaction.mjs --keep 0,50,400,2000 --max-leaves N FILE...
// Prints one JSON line per file: {"file", "plans": [{"leafId", "keep", "plan": null | {...}}]}.
// SESSIONSTORE_PI_DIR names the node_modules directory holding @earendil-works/pi-coding-agent.
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const root = join(resolve(process.env.SESSIONSTORE_PI_DIR ?? ""), "@earendil-works", "pi-coding-agent");
if (!existsSync(join(root, "package.json"))) throw new Error(`no pi in SESSIONSTORE_PI_DIR=${process.env.SESSIONSTORE_PI_DIR}`);
const sm = await import(pathToFileURL(join(root, "dist", "core", "session-manager.js")).href);
const compaction = await import(pathToFileURL(join(root, "dist", "core", "compaction", "compaction.js")).href);

const args = process.argv.slice(2);
let keeps = [20000];
let maxLeaves = 40;
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--keep") keeps = args[++i].split(",").map(Number);
  else if (args[i] === "--max-leaves") maxLeaves = Number(args[++i]);
  else files.push(args[i]);
}

function pathTo(entries, leafId) {
  const byId = new Map(entries.map((e) => [e.id, e]));
  const path = [];
  for (let e = byId.get(leafId); e; e = e.parentId ? byId.get(e.parentId) : undefined) path.push(e);
  return path.reverse();
}

for (const file of files) {
  const all = sm.loadEntriesFromFile(file);
  sm.migrateSessionEntries(all);
  const entries = all.filter((e) => e.type !== "session");
  const step = Math.max(1, Math.ceil(entries.length / maxLeaves));
  const plans = [];
  entries.forEach((entry, index) => {
    if (index % step !== 0 && index !== entries.length - 1) return;
    const path = pathTo(entries, entry.id);
    for (const keep of keeps) {
      let plan = null;
      try {
        const p = compaction.prepareCompaction(path, { ...compaction.DEFAULT_COMPACTION_SETTINGS, keepRecentTokens: keep });
        if (p) {
          plan = {
            firstKeptEntryId: p.firstKeptEntryId, isSplitTurn: p.isSplitTurn, tokensBefore: p.tokensBefore,
            previousSummary: p.previousSummary, messagesToSummarize: p.messagesToSummarize,
            turnPrefixMessages: p.turnPrefixMessages,
            fileOps: { read: [...p.fileOps.read], written: [...p.fileOps.written], edited: [...p.fileOps.edited] },
          };
        }
      } catch (error) {
        plan = { error: String(error) };
      }
      plans.push({ leafId: entry.id, keep, plan });
    }
  });
  process.stdout.write(JSON.stringify({ file, plans }) + "\n");
}
