// pi-ai 1.6's request payloads, for sessionstore's differential tests of sessionstore.payloads.
//
// Plain Node ESM, no build step. Loads pi-ai from SESSIONSTORE_PI_DIR (a node_modules directory holding
// @earendil-works/pi-ai). Only the registry (dist/models.generated.js) and the three request builders
// (dist/api/anthropic-messages.js, openai-completions.js, openai-responses.js) are imported; they run on
// Node 20.
//
//   node pi_payloads.mjs < {"cases": [{"provider", "model", "context": {"systemPrompt"?, "messages",
//                                      "tools"?}, "options"?}]}
//     Prints {"payloads": [PAYLOAD...]}, one per case: {"api", "payload", "text"} with the request body pi-ai's
//     `Models.stream(model, context, options)` builds for that model of its registry (the context
//     folded by normalizeContext, then the api's `stream`), as JSON.stringify writes it (undefined
//     fields left out) and that JSON text itself, or {"error"} where pi-ai throws before sending.
//
// No request is sent: the payload is taken from the `onPayload` hook, which then throws, so the stream
// ends with an error event before any network access. `options` are passed to `stream` as they are,
// besides an API key (one that selects neither OAuth nor ChatGPT sign-in) and the hook.

import { readFileSync } from "node:fs";
import { API_KEYS, MODELS, STREAMS, load } from "./pi_ai.mjs";

const { normalizeContext } = await load("utils/transcript.js");
const CAPTURED = "pi_payloads: payload captured";

async function payloadFor({ provider, model: id, context, options }) {
    const model = MODELS[provider]?.[id];
    if (!model) return { error: `no model ${provider} ${id} in pi-ai's registry` };
    const build = STREAMS[model.api];
    if (!build) return { error: `api ${model.api} is not covered` };
    let payload;
    let text;
    // What pi-ai's Models.stream does first: systemPrompt and tools become a leading system message.
    const stream = build(model, normalizeContext(context), {
        apiKey: API_KEYS[model.api] ?? API_KEYS.default,
        ...options,
        onPayload: (params) => {
            text = JSON.stringify(params);
            payload = JSON.parse(text);
            throw new Error(CAPTURED);
        },
    });
    let failure;
    for await (const event of stream) {
        if (event.type === "error") failure = event.error.errorMessage;
    }
    if (payload === undefined) return { error: failure ?? "no payload was built" };
    return { api: model.api, payload, text };
}

const input = JSON.parse(readFileSync(0, "utf8"));
const payloads = [];
for (const testCase of input.cases) payloads.push(await payloadFor(testCase));
process.stdout.write(JSON.stringify({ payloads }));
