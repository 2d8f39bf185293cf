// pi 1.6 writing a session file the way a running pi does, for the sync tests (tests/test_sync.py
// and tests/differential/test_sync_against_pi.py):
//
//   node pi_sync.mjs append FILE N    open FILE with pi's SessionManager (a v1/v2 file is migrated and
//                                     REWRITTEN as v3; a last line without its newline gets one), then
//                                     append N user/assistant messages (appendFileSync, one line each)
//
// pi is loaded from $SESSIONSTORE_PI_DIR (a node_modules directory holding @earendil-works/pi-coding-agent).
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.env.SESSIONSTORE_PI_DIR;
if (!dir) throw new Error("SESSIONSTORE_PI_DIR is not set");
const root = join(dir, "@earendil-works", "pi-coding-agent");
const { SessionManager } = await import(pathToFileURL(join(root, "dist", "core", "session-manager.js")).href);

const [mode, file, count] = process.argv.slice(2);
if (mode !== "append") throw new Error(`unknown mode ${mode}`);
const sm = SessionManager.open(file, dirname(file));
const n = Number(count);
let ts = 1767225600000;
for (let i = 0; i < n; i++) {
  sm.appendMessage({ role: "user", content: `question ${i} über 日本語`, timestamp: ts++ });
  sm.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: `answer ${i}` }],
    api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5",
    usage: { input: 10 + i, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15 + i,
             cost: { input: 0.001, output: 0.002, cacheRead: 0, cacheWrite: 0, total: 0.003 } },
    stopReason: "stop", timestamp: ts++,
  });
}
process.stdout.write(JSON.stringify({ file: sm.getSessionFile(), leafId: sm.getLeafId(), entries: sm.getEntries().length }) + "\n");
