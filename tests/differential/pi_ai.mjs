// pi-ai 1.6's own code, loaded from $SESSIONSTORE_PI_DIR for the differential scripts that call it
// (pi_payloads.mjs, pi_responses.mjs): its model registry and the `stream` function of each api.
// PI_CACHE_RETENTION is cleared so that the caller's environment cannot change what pi-ai sends.

import { pathToFileURL } from "node:url";
import path from "node:path";

const piDir = process.env.SESSIONSTORE_PI_DIR;
if (!piDir) {
    console.error("SESSIONSTORE_PI_DIR is not set");
    process.exit(2);
}
delete process.env.PI_CACHE_RETENTION;
const dist = path.join(piDir, "@earendil-works", "pi-ai", "dist");

export const load = (file) => import(pathToFileURL(path.join(dist, file)).href);
export const { MODELS } = await load("models.generated.js");
export const STREAMS = {
    "anthropic-messages": (await load("api/anthropic-messages.js")).stream,
    "openai-completions": (await load("api/openai-completions.js")).stream,
    "openai-responses": (await load("api/openai-responses.js")).stream,
};
// An API key per api that selects neither Claude Code OAuth nor ChatGPT sign-in.
export const API_KEYS = { "anthropic-messages": "sk-ant-api03-oracle", default: "sk-oracle" };
