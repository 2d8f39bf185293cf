// Writes sessionstore/payloads/models.json from pi-ai's model registry: the facts of every model that
// sessionstore.payloads reads when it builds a request, and its cost (the prices pi-ai's calculateCost
// turns a response's usage into usage.cost with, read by payloads/responses.py); the rest of a registry
// entry — name, context window, limits — stays out.
//
//   SESSIONSTORE_PI_DIR=…/node_modules node sessionstore/payloads/registry/refresh.mjs [OUT]
//
// SESSIONSTORE_PI_DIR names a node_modules directory holding @earendil-works/pi-ai (the one
// .ci/install-pi.sh fills: ${XDG_CACHE_HOME:-$HOME/.cache}/sessionstore/pi-1.6.0/node_modules).
// OUT defaults to models.json beside this script's directory. Output: {"piAi": version, "models":
// {provider: {id: FACTS}}} in the registry's order, FACTS = {api, baseUrl, reasoning, input, maxTokens,
// compat?, thinkingLevelMap?, cost}: baseUrl because pi-ai detects a provider's quirks from it (openrouter.ai,
// api.openai.com, deepseek.com, …), compat verbatim because its defaults are applied per api at request
// time, maxTokens because Anthropic's max_tokens defaults to it, cost ({input, output, cacheRead,
// cacheWrite, tiers?} in dollars per million tokens) verbatim for the usage of a recorded response.
//
// The port reads no other field. A registry entry with a field that changes payloads and that the port
// does not read (sampling parameters, an anthropic-beta header) makes this script fail rather than write
// facts that would build different payloads from pi-ai's.

import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const piDir = process.env.SESSIONSTORE_PI_DIR;
if (!piDir) {
    console.error("SESSIONSTORE_PI_DIR is not set (a node_modules directory holding @earendil-works/pi-ai)");
    process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const out = process.argv[2] ?? path.join(here, "..", "models.json");
const packageDir = path.join(piDir, "@earendil-works", "pi-ai");
const version = JSON.parse(readFileSync(path.join(packageDir, "package.json"), "utf8")).version;
const { MODELS } = await import(pathToFileURL(path.join(packageDir, "dist", "models.generated.js")).href);

const UNREAD_PAYLOAD_FIELDS = ["samplingParams", "samplingParamsByThinkingLevel"];
const problems = [];
const models = {};
for (const [provider, byId] of Object.entries(MODELS)) {
    models[provider] = {};
    for (const [id, model] of Object.entries(byId)) {
        for (const field of UNREAD_PAYLOAD_FIELDS) {
            if (model[field] !== undefined) problems.push(`${provider} ${id}: ${field}`);
        }
        for (const name of Object.keys(model.headers ?? {})) {
            if (name.toLowerCase() === "anthropic-beta") problems.push(`${provider} ${id}: an anthropic-beta header`);
        }
        models[provider][id] = {
            api: model.api,
            baseUrl: model.baseUrl,
            reasoning: model.reasoning,
            input: model.input,
            maxTokens: model.maxTokens,
            ...(model.compat === undefined ? {} : { compat: model.compat }),
            ...(model.thinkingLevelMap === undefined ? {} : { thinkingLevelMap: model.thinkingLevelMap }),
            cost: model.cost,
        };
    }
}
if (problems.length > 0) {
    console.error(`pi-ai ${version}'s registry has facts sessionstore.payloads does not port:\n${problems.join("\n")}`);
    process.exit(1);
}
// One model a line: small, and a refresh shows as a diff of the models that changed.
const providerLines = Object.entries(models).map(([provider, byId]) => {
    const modelLines = Object.entries(byId).map(([id, facts]) => `  ${JSON.stringify(id)}: ${JSON.stringify(facts)}`);
    return ` ${JSON.stringify(provider)}: {\n${modelLines.join(",\n")}\n }`;
});
writeFileSync(out, `{"piAi": ${JSON.stringify(version)}, "models": {\n${providerLines.join(",\n")}\n}}\n`);
console.error(`wrote ${Object.values(models).reduce((n, byId) => n + Object.keys(byId).length, 0)} models to ${out}`);
