// A local OTLP/HTTP receiver for the tests: it takes a trace export only if it is valid OTLP/JSON
// (ids, nanosecond times, attribute values, status), and keeps its spans.
import http from 'node:http';

/** Why `body` is not an OTLP/JSON trace export, or null. */
function schemaError(body) {
  const isHex = (s, n) => typeof s === 'string' && new RegExp(`^[0-9a-f]{${n}}$`).test(s) && !/^0+$/.test(s);
  const isNanos = (s) => typeof s === 'string' && /^[0-9]{1,20}$/.test(s);
  const badAttributes = (list) => {
    if (!Array.isArray(list)) return 'attributes is not an array';
    for (const a of list) {
      if (typeof a?.key !== 'string' || !a.key) return `an attribute without a key: ${JSON.stringify(a)}`;
      const kinds = Object.keys(a.value ?? {});
      if (kinds.length !== 1) return `attribute ${a.key} has ${kinds.length} value kinds`;
      const [kind] = kinds;
      const v = a.value[kind];
      const ok = { stringValue: typeof v === 'string', boolValue: typeof v === 'boolean', intValue: typeof v === 'string' && /^-?[0-9]+$/.test(v), doubleValue: typeof v === 'number' }[kind];
      if (!ok) return `attribute ${a.key} has a bad ${kind}: ${JSON.stringify(v)}`;
    }
    return null;
  };
  if (!Array.isArray(body?.resourceSpans) || !body.resourceSpans.length) return 'no resourceSpans';
  for (const rs of body.resourceSpans) {
    const r = badAttributes(rs.resource?.attributes);
    if (r) return `resource: ${r}`;
    if (!rs.resource.attributes.some((a) => a.key === 'service.name')) return 'no service.name';
    for (const ss of rs.scopeSpans ?? []) {
      if (typeof ss.scope?.name !== 'string') return 'a scope without a name';
      for (const s of ss.spans ?? []) {
        if (!isHex(s.traceId, 32)) return `bad traceId ${s.traceId}`;
        if (!isHex(s.spanId, 16)) return `bad spanId ${s.spanId}`;
        if (s.parentSpanId !== undefined && !isHex(s.parentSpanId, 16)) return `bad parentSpanId ${s.parentSpanId}`;
        if (typeof s.name !== 'string' || !s.name) return 'a span without a name';
        if (!Number.isInteger(s.kind) || s.kind < 0 || s.kind > 5) return `bad kind ${s.kind}`;
        if (!isNanos(s.startTimeUnixNano) || !isNanos(s.endTimeUnixNano)) return `bad times of ${s.name}`;
        if (BigInt(s.endTimeUnixNano) < BigInt(s.startTimeUnixNano)) return `${s.name} ends before it starts`;
        const a = badAttributes(s.attributes);
        if (a) return `${s.name}: ${a}`;
        if (![0, 1, 2].includes(s.status?.code)) return `bad status of ${s.name}`;
      }
    }
  }
  return null;
}

/** A local OTLP/HTTP receiver: 200 for a valid export to /v1/traces, 400 with the reason otherwise. */
export async function startReceiver({ delayMs = 0 } = {}) {
  const spans = [];
  const rejected = [];
  const server = http.createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
    let body = null;
    try {
      body = JSON.parse(raw);
    } catch {}
    const why = req.method !== 'POST' || req.url !== '/v1/traces' ? `${req.method} ${req.url}` : req.headers['content-type'] !== 'application/json' ? 'not JSON' : schemaError(body);
    if (why) {
      rejected.push(why);
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ message: why }));
      return;
    }
    for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, headers: req.headers, at: Date.now() });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}/v1/traces`, spans, rejected, close: () => new Promise((r) => server.close(r)) };
}

/** A span attribute's value (numbers for intValue), or undefined. */
export const attr = (span, key) => {
  const v = span.attributes.find((a) => a.key === key)?.value;
  return v && (v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : v.doubleValue ?? v.boolValue));
};

