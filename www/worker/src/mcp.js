// The Model Context Protocol endpoint (POST /mcp, Streamable HTTP): an AI agent searches the
// knowledge bases, fetches a chunk or document by id and asks what the bases hold. Read-only and
// stateless: every POST carries one JSON-RPC message (or a batch, for 2025-03-26 clients) and is
// answered with JSON; notifications get 202; GET is 405 (no server-initiated stream).
//
// The tools answer with text (JSON an agent reads) and the same data as structuredContent.

// The tools, their schemas, the default k and the instructions are the core's
// (`defaults().tools.mcp`, `defaults().tools.mcp_k`, `defaults().prompts.mcp_instructions`), and so
// is the `base:id` form of ids (`qualifyId`): this file checks arguments against the generated
// schemas generically and answers JSON-RPC.
import { defaults, qualifyId } from 'sextant-search';

/** Protocol versions this endpoint speaks, newest first. */
const VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];
const SERVER = { name: 'sextant', version: '0.1.0' };

/** The MCP tools, as the core generates them (after ready()). */
const tools = () => defaults().tools.mcp;

/** A JSON-RPC error: thrown by a method, answered as `{error: {code, message}}`. */
class RpcError extends Error {
  constructor(code, message) {
    super(message);
    this.rpcCode = code;
  }
}

const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;

function jsonResponse(body, status = 200, headers = {}) {
  return new Response(body === null ? null : JSON.stringify(body), {
    status,
    headers: body === null ? headers : { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}

/** The JSON type of a value, as JSON Schema names it. */
function jsonType(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** What `schema` asks of a value, in words. */
function wanted(schema) {
  if (schema.enum) return `one of ${schema.enum.join(', ')}`;
  const range = schema.minimum !== undefined || schema.maximum !== undefined ? ` from ${schema.minimum ?? '-∞'} to ${schema.maximum ?? '∞'}` : '';
  const items = schema.type === 'array' && schema.items ? ` of ${schema.items.type}s` : '';
  return `${/^[aeiou]/.test(schema.type) ? 'an' : 'a'} ${schema.type}${items}${range}`;
}

/** Whether `value` is what `schema` (the JSON Schema subset the core generates) allows. */
function conforms(value, schema) {
  const type = jsonType(value);
  if (schema.type && !(type === schema.type || (schema.type === 'number' && type === 'integer'))) return false;
  if (schema.enum && !schema.enum.includes(value)) return false;
  if (typeof value === 'number' && ((schema.minimum !== undefined && value < schema.minimum) || (schema.maximum !== undefined && value > schema.maximum))) return false;
  if (type === 'array' && schema.items && !value.every((item) => conforms(item, schema.items))) return false;
  if (type === 'object') {
    const properties = schema.properties ?? {};
    for (const [key, item] of Object.entries(value)) {
      const inner = Object.hasOwn(properties, key) ? properties[key] : schema.additionalProperties;
      if (inner === false || (typeof inner === 'object' && !conforms(item, inner))) return false;
    }
    if (schema.maxProperties !== undefined && Object.keys(value).length > schema.maxProperties) return false;
  }
  if (schema.anyOf && !schema.anyOf.some((s) => conforms(value, s))) return false;
  return true;
}

/** Checks a tool's arguments against its input schema (the core's); throws INVALID_PARAMS. */
function argumentsOf(tool, args) {
  if (args == null) args = {};
  if (jsonType(args) !== 'object') throw new RpcError(INVALID_PARAMS, `${tool.name}: arguments must be an object`);
  const { properties = {}, required = [], additionalProperties = true } = tool.inputSchema;
  for (const key of Object.keys(args)) {
    if (!Object.hasOwn(properties, key) && additionalProperties === false) {
      throw new RpcError(INVALID_PARAMS, `${tool.name}: unknown argument ${JSON.stringify(key)}; it takes ${Object.keys(properties).join(', ') || 'none'}`);
    }
  }
  for (const key of required) {
    if (args[key] === undefined) throw new RpcError(INVALID_PARAMS, `${tool.name}: ${key} is required`);
  }
  for (const [key, value] of Object.entries(args)) {
    const schema = properties[key];
    if (schema && !conforms(value, schema)) throw new RpcError(INVALID_PARAMS, `${tool.name}: ${key} must be ${wanted(schema)}`);
  }
  return args;
}

/** A tool's answer: its data as JSON text and as structuredContent. */
function toolResult(data) {
  return { content: [{ type: 'text', text: JSON.stringify(data, null, 1) }], structuredContent: data };
}

/** A tool that ran and failed (a bad id, no base answered): the agent reads why. */
function toolError(message) {
  return { content: [{ type: 'text', text: message }], isError: true };
}

async function callTool(name, rawArgs, ctx, trace) {
  const tool = tools().find((t) => t.name === name);
  if (!tool) throw new RpcError(INVALID_PARAMS, `there is no tool ${JSON.stringify(name)}; the tools are ${tools().map((t) => t.name).join(', ')}`);
  const args = argumentsOf(tool, rawArgs);
  trace.tool = name;
  let loaded;
  try {
    loaded = await ctx.engine();
  } catch (e) {
    return toolError(`the knowledge bases are not available: ${e.message}`);
  }
  // Ids say their base when the bases hold more than one (as those an LLM reads: `Bases`).
  const several = loaded.bases.names.length > 1;
  const qualified = (base, id) => qualifyId(base, id, several);
  try {
    if (name === 'describe') {
      const described = loaded.bases.describe();
      const bases = loaded.names.map((base) => {
        const missing = loaded.unavailable.find((u) => u.base === base);
        if (missing) return { base, loaded: false, code: missing.code, message: missing.message };
        const d = described.find((x) => x.base === base);
        return d.loaded ? { base, loaded: true, documents: d.documents, chunks: d.chunks } : d;
      });
      return toolResult({ bases, ids: qualified('base', 'chunk_id') });
    }
    if (name === 'search') {
      const chosen = ctx.choose(loaded, args.bases);
      if (ctx.logQueries) trace.query = args.query;
      const answer = ctx.withMissing(await chosen.bases.search(args.query, { k: args.k ?? defaults().tools.mcp_k, ...(args.mode ? { mode: args.mode } : {}), ...(args.filters ? { filters: args.filters } : {}), ...(args.sort ? { sort: args.sort } : {}), bases: chosen.live }), chosen.missing);
      Object.assign(trace, { bases: chosen.live, stages: answer.timings, results: answer.results.length });
      if (answer.partial) trace.failed = answer.failed.map((f) => f.base);
      return toolResult({
        results: answer.results.map((r) => ({
          id: qualified(r.base, r.chunk_id),
          doc_id: qualified(r.base, r.doc_id),
          base: r.base,
          title: r.title,
          heading_path: r.heading_path,
          url: r.url,
          score: r.score,
          text: r.text,
          ...(Object.keys(r.metadata ?? {}).length ? { metadata: r.metadata } : {}),
        })),
        partial: answer.partial,
        failed: answer.failed,
      });
    }
    if (name === 'graph') {
      const chosen = ctx.choose(loaded, undefined);
      if (ctx.logQueries) trace.query = args.question;
      const framed = ctx.withMissing(await chosen.bases.context(args.question, { graph: true, k: defaults().tools.mcp_k, bases: chosen.live }), chosen.missing);
      Object.assign(trace, { bases: chosen.live, stages: framed.timings, results: framed.included.length, graph: framed.graph.used ? 'used' : framed.graph.fallback?.code });
      const base = chosen.live[0];
      const cited = new Set(framed.graph.lines.flatMap((l) => l.chunk_ids));
      return toolResult({
        used: framed.graph.used,
        ...(framed.graph.fallback ? { fallback: framed.graph.fallback.message } : {}),
        lines: framed.graph.lines.map((l) => ({ kind: l.kind, name: l.name, type: l.type, description: l.description, ids: l.chunk_ids.map((id) => qualified(base, id)) })),
        passages: framed.results
          .filter((r) => cited.has(r.chunk_id))
          .map((r) => ({ id: qualified(r.base ?? base, r.chunk_id), title: r.title, url: r.url, text: r.text })),
      });
    }
    // fetch
    const found = await loaded.bases.get(args.id, { base: args.base });
    trace.results = found ? 1 : 0;
    if (!found) return toolError(`nothing has the id ${JSON.stringify(args.id)}; use an id from search results (a chunk id, or a doc id for the whole document)`);
    return toolResult(found);
  } catch (e) {
    // The tool ran and failed (a bad option, no base answered): the agent reads why.
    if (e instanceof RpcError) throw e;
    return toolError(`${e?.code ?? 'INTERNAL'}: ${e?.message ?? e}`);
  }
}

/** Answers one JSON-RPC message: a response object, or null for a notification. */
async function handle(message, ctx, trace) {
  if (message === null || typeof message !== 'object' || Array.isArray(message) || message.jsonrpc !== '2.0' || typeof message.method !== 'string') {
    return { jsonrpc: '2.0', id: message?.id ?? null, error: { code: INVALID_REQUEST, message: 'not a JSON-RPC 2.0 request' } };
  }
  const { id, method, params } = message;
  const notification = id === undefined;
  trace.rpc = method;
  try {
    let result;
    if (method === 'initialize') {
      const asked = params?.protocolVersion;
      result = {
        protocolVersion: VERSIONS.includes(asked) ? asked : VERSIONS[0],
        capabilities: { tools: { listChanged: false } },
        serverInfo: SERVER,
        instructions: defaults().prompts.mcp_instructions,
      };
    } else if (method === 'ping') result = {};
    else if (method === 'tools/list') result = { tools: tools() };
    else if (method === 'tools/call') result = await callTool(params?.name, params?.arguments, ctx, trace);
    else if (method.startsWith('notifications/')) result = null;
    else throw new RpcError(METHOD_NOT_FOUND, `this server has no method ${JSON.stringify(method)}; it offers tools (tools/list, tools/call)`);
    return notification ? null : { jsonrpc: '2.0', id, result };
  } catch (e) {
    if (notification) return null;
    if (e instanceof RpcError) return { jsonrpc: '2.0', id, error: { code: e.rpcCode, message: e.message } };
    // The service failed (a base's files, the model): the code and message, nothing upstream.
    const { error } = ctx.errorBody(e);
    return { jsonrpc: '2.0', id, error: { code: -32603, message: error.message, data: { code: error.code } } };
  }
}

/**
 * POST /mcp (its page's origin already checked). `ctx`: check() (a JSON body and the bearer token), engine(), choose(), withMissing(),
 * readBody(), errorBody() and logQueries from the Worker.
 */
export async function mcp(request, env, trace, ctx) {
  ctx.logQueries = env.SEXTANT_LOG_QUERIES === 'true';
  ctx.check();
  if (request.method === 'GET') {
    // No server-initiated stream: the client then talks by POST only.
    return jsonResponse({ error: { code: 'METHOD_NOT_ALLOWED', message: 'this MCP endpoint offers no event stream; POST JSON-RPC messages' } }, 405, { allow: 'POST, OPTIONS' });
  }
  const version = request.headers.get('mcp-protocol-version');
  if (version && !VERSIONS.includes(version)) {
    return jsonResponse({ jsonrpc: '2.0', id: null, error: { code: INVALID_REQUEST, message: `protocol version ${version} is not supported; use one of ${VERSIONS.join(', ')}` } }, 400);
  }
  const text = await ctx.readBody();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    return jsonResponse({ jsonrpc: '2.0', id: null, error: { code: PARSE_ERROR, message: 'the body is not JSON: POST one JSON-RPC message' } }, 400);
  }
  if (Array.isArray(body)) {
    if (body.length === 0 || body.length > 32) return jsonResponse({ jsonrpc: '2.0', id: null, error: { code: INVALID_REQUEST, message: 'a batch holds 1 to 32 messages' } }, 400);
    const answers = (await Promise.all(body.map((m) => handle(m, ctx, trace)))).filter(Boolean);
    return answers.length ? jsonResponse(answers) : jsonResponse(null, 202);
  }
  const answer = await handle(body, ctx, trace);
  return answer ? jsonResponse(answer) : jsonResponse(null, 202);
}
