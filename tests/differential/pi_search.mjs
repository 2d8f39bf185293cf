// pi's session-picker search as the oracle for sessionstore.catalog.search_rules.
//
// Plain Node ESM, loads pi 1.6 from SESSIONSTORE_PI_DIR (a node_modules directory holding
// @earendil-works/pi-coding-agent and @earendil-works/pi-tui), like pi_oracle.mjs.
//
//   node pi_search.mjs < INPUT.json > OUTPUT.json
//
// INPUT = {"sessions": [{"id", "name", "cwd", "allMessagesText", "modified" (ms)}],
//          "queries": [string], "fuzzy": [[query, text]], "lower": [string],
//          "regex": [[pattern, [text]]], "caseClasses": {unit: [unit]}}
// OUTPUT = {"parsed": [{"mode", "tokens", "error"}],                 per query (parseSearchQuery)
//           "scores": [[score | null]],                              per query, per session (matchSession)
//           "sorted": [{"relevance", "recent", "threaded", "named"}], per query: ids (filterAndSortSessions;
//                                                                    "named" = relevance with nameFilter "named")
//           "fuzzy": [score | null],                                 per pair (fuzzyMatch)
//           "lower": [string],                                       toLowerCase per string
//           "regex": [{"error"} | {"tests": [bool]}],                new RegExp(pattern, "i").test(text)
//           "caseMatches": {unit: [unit]}}                           units d != c with /\uC/i.test(d)
// "caseMatches" tests, for every BMP code unit c, the candidates that could share c's case class
// (units with the same toUpperCase, c's toLowerCase and toUpperCase, and the class sessionstore
// computed for c, sent as "caseClasses").

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const piDir = process.env.SESSIONSTORE_PI_DIR;
if (!piDir) throw new Error("SESSIONSTORE_PI_DIR is not set");
const load = (path) => import(pathToFileURL(join(piDir, "@earendil-works", path)).href);
const search = await load("pi-coding-agent/dist/modes/interactive/components/session-selector-search.js");
const { fuzzyMatch } = await load("pi-tui/dist/fuzzy.js");

const input = JSON.parse(readFileSync(0, "utf8"));
const sessions = input.sessions.map((s) => ({ ...s, name: s.name ?? undefined, modified: new Date(s.modified) }));
const ids = (list) => list.map((s) => s.id);

const parsed = [];
const scores = [];
const sorted = [];
for (const query of input.queries) {
  const p = search.parseSearchQuery(query);
  parsed.push({ mode: p.mode, tokens: p.tokens, error: p.error ?? null });
  scores.push(sessions.map((s) => {
    const m = search.matchSession(s, p);
    return m.matches ? m.score : null;
  }));
  sorted.push({
    relevance: ids(search.filterAndSortSessions(sessions, query, "relevance")),
    recent: ids(search.filterAndSortSessions(sessions, query, "recent")),
    threaded: ids(search.filterAndSortSessions(sessions, query, "threaded")),
    named: ids(search.filterAndSortSessions(sessions, query, "relevance", "named")),
  });
}

const fuzzy = input.fuzzy.map(([q, t]) => {
  const m = fuzzyMatch(q, t);
  return m.matches ? m.score : null;
});

const lower = input.lower.map((s) => s.toLowerCase());

const regex = input.regex.map(([pattern, texts]) => {
  let r;
  try {
    r = new RegExp(pattern, "i");
  } catch (err) {
    return { error: err.message };
  }
  return { tests: texts.map((t) => r.test(t)) };
});

const caseMatches = {};
if (input.caseClasses) {
  const byUpper = new Map();
  for (let d = 0; d < 0x10000; d++) {
    const u = String.fromCharCode(d).toUpperCase();
    if (!byUpper.has(u)) byUpper.set(u, []);
    byUpper.get(u).push(d);
  }
  for (let c = 0; c < 0x10000; c++) {
    const ch = String.fromCharCode(c);
    const candidates = new Set([
      ...(byUpper.get(ch.toUpperCase()) ?? []), ...(byUpper.get(ch) ?? []),
      ...(input.caseClasses[c] ?? []),
    ]);
    for (const s of [ch.toLowerCase(), ch.toUpperCase()]) if (s.length === 1) candidates.add(s.charCodeAt(0));
    const r = new RegExp("\\u" + c.toString(16).padStart(4, "0"), "i");
    const hits = [...candidates].filter((d) => d !== c && r.test(String.fromCharCode(d))).sort((a, b) => a - b);
    if (hits.length) caseMatches[c] = hits;
  }
}

process.stdout.write(JSON.stringify({ parsed, scores, sorted, fuzzy, lower, regex, caseMatches }));
