// pi-ai 1.6's own stream functions on provider responses, for sessionstore's differential tests of
// sessionstore.payloads.responses (record_anthropic, record_openai_chat, record_openai_response).
//
// Plain Node ESM, no build step. Loads pi-ai from SESSIONSTORE_PI_DIR (a node_modules directory holding
// @earendil-works/pi-ai): its registry (dist/models.generated.js) and the `stream` functions of
// dist/api/anthropic-messages.js, openai-completions.js and openai-responses.js, which run on Node 20.
//
//   node pi_responses.mjs < {"cases": [{"provider", "model", "response"}]}
//     Prints {"results": [RESULT...]}, one per case: {"event": "done"|"error", "message", "request"} with
//     the AssistantMessage of pi-ai's final event for that model of its registry, when the provider
//     answers the request with the SSE stream of `response`; `request` is the method and path the SDK
//     sent the request to. {"failure"} where the case could not be run at all.
//
// `response` is the provider's non-streaming response (an Anthropic `Message`, a `ChatCompletion`, a
// Responses `Response`, as JSON). It is turned into the event stream the provider sends for that
// response (`anthropicEvents`, `chatChunks`, `responsesEvents` below: the events pi-ai's stream code
// consumes, and the ones it skips, in the provider's order, texts and argument JSON cut into pieces).
//
// No socket is opened: `globalThis.fetch` is replaced before the stream function is called. pi-ai
// builds a new SDK client per request and passes it `options.fetch`, which is left unset here, so the
// Anthropic and OpenAI SDKs take the global fetch when the client is made. The replacement answers
// with a `Response` whose body is the SSE text; any request it does not expect fails the case.
// `Date.now` is left alone: the caller pins the message's `timestamp` to the one pi-ai wrote.

import { readFileSync } from "node:fs";
import { API_KEYS, MODELS, STREAMS } from "./pi_ai.mjs";

const CONTEXT = { systemPrompt: "You are pi.", messages: [{ role: "user", content: "Hi", timestamp: 0 }] };
const PATHS = { "anthropic-messages": "/v1/messages", "openai-completions": "/chat/completions",
                "openai-responses": "/responses" };

// -- cutting texts into stream deltas -------------------------------------------------------------------
const PIECE = 7; // code points per delta: several deltas for most texts, none splits a surrogate pair
function pieces(text) {
    const points = Array.from(text ?? "");
    const out = [];
    for (let i = 0; i < points.length; i += PIECE) out.push(points.slice(i, i + PIECE).join(""));
    return out;
}

// -- Anthropic Messages ----------------------------------------------------------------------------------
// What the Messages API streams for a message: message_start (the message without content, stop
// reason or final output count), per block content_block_start / deltas / content_block_stop,
// message_delta (stop reason, stop details, final usage), message_stop. Blocks pi-ai does not keep
// (server tools, their results) start with their whole content, as the API streams them.
function anthropicEvents(message) {
    const events = [];
    const usage = message.usage ?? {};
    const { content, stop_reason, stop_sequence, stop_details, ...rest } = message;
    events.push(["message_start", {
        type: "message_start",
        message: { ...rest, content: [], stop_reason: null, stop_sequence: null,
                   usage: { ...usage, output_tokens: Math.min(usage.output_tokens ?? 0, 1) } },
    }]);
    (content ?? []).forEach((block, index) => {
        const start = (content_block) => events.push(["content_block_start", { type: "content_block_start", index, content_block }]);
        const delta = (d) => events.push(["content_block_delta", { type: "content_block_delta", index, delta: d }]);
        if (block.type === "text") {
            const { text, ...others } = block;
            start({ ...others, text: "" });
            for (const piece of pieces(text)) delta({ type: "text_delta", text: piece });
        } else if (block.type === "thinking") {
            start({ type: "thinking", thinking: "", signature: "" });
            for (const piece of pieces(block.thinking)) delta({ type: "thinking_delta", thinking: piece });
            if (block.signature) delta({ type: "signature_delta", signature: block.signature });
        } else if (block.type === "tool_use") {
            start({ type: "tool_use", id: block.id, name: block.name, input: {} });
            const json = block.input === undefined ? "" : JSON.stringify(block.input);
            delta({ type: "input_json_delta", partial_json: "" });
            for (const piece of pieces(json)) delta({ type: "input_json_delta", partial_json: piece });
        } else {
            start(block); // redacted_thinking (its data at start), server_tool_use, web_search_tool_result, fallback, ...
        }
        events.push(["content_block_stop", { type: "content_block_stop", index }]);
    });
    events.push(["message_delta", {
        type: "message_delta",
        delta: { stop_reason: stop_reason ?? null, stop_sequence: stop_sequence ?? null,
                 ...(stop_details !== undefined ? { stop_details } : {}) },
        usage,
    }]);
    events.push(["message_stop", { type: "message_stop" }]);
    return events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join("");
}

// -- Chat Completions ------------------------------------------------------------------------------------
// What a Chat Completions stream (stream_options.include_usage) sends for a completion: a first chunk
// with the role, the reasoning text in pieces (in the fields the message has it in), each reasoning
// detail in a chunk, the content in pieces, each tool call's id and name then its argument text in
// pieces (by `index`), a chunk with the finish reason, and a last chunk with no choices and the usage.
function chatChunks(completion) {
    const { choices, usage, object, ...rest } = completion;
    const chunks = [];
    const chunk = (choiceFields) => chunks.push({ ...rest, object: "chat.completion.chunk",
                                                  choices: [{ index: 0, ...choiceFields }] });
    const choice = choices?.[0];
    if (choice) {
        const message = choice.message ?? {};
        chunk({ delta: { role: "assistant", content: "" }, finish_reason: null });
        // Each reasoning field the message has, cut alike and sent side by side (some providers send
        // the same text in two fields of one delta).
        const reasoning = ["reasoning_content", "reasoning", "reasoning_text"]
            .filter((field) => typeof message[field] === "string")
            .map((field) => [field, pieces(message[field])]);
        const count = Math.max(0, ...reasoning.map(([, cut]) => cut.length));
        for (let i = 0; i < count; i++) {
            const delta = Object.fromEntries(reasoning.filter(([, cut]) => i < cut.length).map(([field, cut]) => [field, cut[i]]));
            chunk({ delta, finish_reason: null });
        }
        for (const detail of Array.isArray(message.reasoning_details) ? message.reasoning_details : []) {
            chunk({ delta: { reasoning_details: [detail] }, finish_reason: null });
        }
        if (typeof message.content === "string") {
            for (const piece of pieces(message.content)) chunk({ delta: { content: piece }, finish_reason: null });
        }
        (message.tool_calls ?? []).forEach((call, index) => {
            const fn = call.function ?? {};
            chunk({ delta: { tool_calls: [{ index, id: call.id, type: call.type ?? "function",
                                            function: { name: fn.name, arguments: "" } }] }, finish_reason: null });
            for (const piece of pieces(fn.arguments)) {
                chunk({ delta: { tool_calls: [{ index, function: { arguments: piece } }] }, finish_reason: null });
            }
        });
        chunk({ delta: {}, finish_reason: choice.finish_reason ?? null, ...(choice.usage ? { usage: choice.usage } : {}) });
    }
    if (usage !== undefined && usage !== null) chunks.push({ ...rest, object: "chat.completion.chunk", choices: [], usage });
    return chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n";
}

// -- Responses -------------------------------------------------------------------------------------------
// What the Responses API streams for a response: response.created and response.in_progress (the
// response with no output yet), per output item output_item.added (the item without its texts or
// arguments), its deltas and done events, output_item.done (the whole item), then the terminal event
// for its status: response.completed, response.incomplete or response.failed.
function responsesEvents(response) {
    let sequence = 0;
    const events = [];
    const push = (type, fields) => events.push({ type, sequence_number: sequence++, ...fields });
    const pending = { ...response, status: "in_progress", output: [], usage: null, incomplete_details: null, error: null };
    push("response.created", { response: pending });
    push("response.in_progress", { response: pending });
    (response.output ?? []).forEach((item, output_index) => {
        const item_id = item.id;
        if (item.type === "reasoning") {
            const { summary, content, encrypted_content, ...others } = item;
            push("response.output_item.added", { output_index, item: { ...others, summary: [] } });
            (summary ?? []).forEach((part, summary_index) => {
                push("response.reasoning_summary_part.added", { item_id, output_index, summary_index,
                                                                part: { type: part.type, text: "" } });
                for (const delta of pieces(part.text)) {
                    push("response.reasoning_summary_text.delta", { item_id, output_index, summary_index, delta });
                }
                push("response.reasoning_summary_text.done", { item_id, output_index, summary_index, text: part.text });
                push("response.reasoning_summary_part.done", { item_id, output_index, summary_index, part });
            });
            (content ?? []).forEach((part, content_index) => {
                for (const delta of pieces(part.text)) {
                    push("response.reasoning_text.delta", { item_id, output_index, content_index, delta });
                }
                push("response.reasoning_text.done", { item_id, output_index, content_index, text: part.text });
            });
        } else if (item.type === "message") {
            push("response.output_item.added", { output_index, item: { ...item, status: "in_progress", content: [] } });
            (item.content ?? []).forEach((part, content_index) => {
                const refusal = part.type === "refusal";
                const empty = refusal ? { type: "refusal", refusal: "" } : { ...part, text: "", annotations: [] };
                push("response.content_part.added", { item_id, output_index, content_index, part: empty });
                for (const delta of pieces(refusal ? part.refusal : part.text)) {
                    push(refusal ? "response.refusal.delta" : "response.output_text.delta",
                         { item_id, output_index, content_index, delta });
                }
                push(refusal ? "response.refusal.done" : "response.output_text.done",
                     refusal ? { item_id, output_index, content_index, refusal: part.refusal }
                             : { item_id, output_index, content_index, text: part.text });
                push("response.content_part.done", { item_id, output_index, content_index, part });
            });
        } else if (item.type === "function_call") {
            push("response.output_item.added", { output_index, item: { ...item, status: "in_progress", arguments: "" } });
            for (const delta of pieces(item.arguments)) {
                push("response.function_call_arguments.delta", { item_id, output_index, delta });
            }
            push("response.function_call_arguments.done", { item_id, output_index, arguments: item.arguments });
        } else if (item.type === "custom_tool_call") {
            push("response.output_item.added", { output_index, item: { ...item, status: "in_progress", input: "" } });
            for (const delta of pieces(item.input)) {
                push("response.custom_tool_call_input.delta", { item_id, output_index, delta });
            }
            push("response.custom_tool_call_input.done", { item_id, output_index, input: item.input });
        } else {
            push("response.output_item.added", { output_index, item }); // web search calls and the like
        }
        push("response.output_item.done", { output_index, item });
    });
    const terminal = response.status === "incomplete" ? "response.incomplete"
        : response.status === "failed" ? "response.failed" : "response.completed";
    push(terminal, { response });
    return events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join("");
}

const SSE = { "anthropic-messages": anthropicEvents, "openai-completions": chatChunks,
              "openai-responses": responsesEvents };

// -- running pi-ai ---------------------------------------------------------------------------------------
async function run({ provider, model: id, response }) {
    const model = MODELS[provider]?.[id];
    if (!model) return { failure: `no model ${provider} ${id} in pi-ai's registry` };
    const stream = STREAMS[model.api];
    if (!stream) return { failure: `api ${model.api} is not covered` };
    const body = SSE[model.api](response);
    const requests = [];
    globalThis.fetch = async (input, init) => {
        const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
        const method = init?.method ?? input?.method ?? "GET";
        requests.push(`${method} ${url.pathname}`);
        if (method !== "POST" || !url.pathname.endsWith(PATHS[model.api])) {
            return new Response(JSON.stringify({ error: { message: `unexpected request ${method} ${url}` } }),
                                { status: 418, headers: { "content-type": "application/json" } });
        }
        const bytes = new TextEncoder().encode(body);
        const sse = new ReadableStream({
            start(controller) {
                // Arbitrary chunk boundaries, as the network gives them: lines and UTF-8 sequences are cut.
                for (let i = 0; i < bytes.length; i += 97) controller.enqueue(bytes.slice(i, i + 97));
                controller.close();
            },
        });
        return new Response(sse, { status: 200, headers: { "content-type": "text/event-stream" } });
    };
    let final;
    for await (const event of stream(model, CONTEXT, { apiKey: API_KEYS[model.api] ?? API_KEYS.default })) {
        if (event.type === "done") final = { event: "done", message: event.message };
        else if (event.type === "error") final = { event: "error", message: event.error };
    }
    if (!final) return { failure: "the stream ended without a done or error event" };
    if (requests.length !== 1) return { failure: `expected one request, the SDK sent ${JSON.stringify(requests)}` };
    return { ...final, request: requests[0] };
}

const input = JSON.parse(readFileSync(0, "utf8"));
const results = [];
for (const testCase of input.cases) results.push(await run(testCase));
process.stdout.write(JSON.stringify({ results }));
