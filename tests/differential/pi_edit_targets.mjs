// pi 1.6's own appendContextEdit on every kind of target, the oracle of the context edit's append check
// (models/kinds/context_edit.py, the roles' edit_target in models/roles.py; test_edit_targets_against_pi.py).
//
//   node pi_edit_targets.mjs FILE ID...
//     For each ID: FILE copied, opened with pi's SessionManager.open, then appendContextEdit(ID, null);
//     one JSON line {"target": ID, "error": MESSAGE or null}.
// Loads pi from SESSIONSTORE_PI_DIR as pi_oracle.mjs does.

import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.env.SESSIONSTORE_PI_DIR;
if (!dir) throw new Error("SESSIONSTORE_PI_DIR is not set (a node_modules directory holding pi)");
const root = join(resolve(dir), "@earendil-works", "pi-coding-agent");
const pi = await import(pathToFileURL(join(root, "dist", "core", "session-manager.js")).href);

const [file, ...targets] = process.argv.slice(2);
const scratch = mkdtempSync(join(tmpdir(), "pi-edit-"));
try {
  for (const target of targets) {
    const copy = join(scratch, `${targets.indexOf(target)}.jsonl`);
    copyFileSync(file, copy);
    const sm = pi.SessionManager.open(copy, scratch);
    let error = null;
    try {
      sm.appendContextEdit(target, null);
    } catch (exc) {
      error = String(exc.message);
    }
    process.stdout.write(JSON.stringify({ target, error }) + "\n");
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
