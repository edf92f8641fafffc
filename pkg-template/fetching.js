// Fetching the files an engine loads (an index, its files, the model, the tokenizer): with
// progress as bytes arrive, failures as FETCH_FAILED that name the file and the URL.
import { SextantError } from './errors.js';

/** Whether a value names a file to fetch (a URL or a string) rather than holding its bytes. */
export function isUrlLike(value) {
  return typeof value === 'string' || value instanceof URL;
}

/**
 * Fetches `url`, reporting `on_progress({file, loaded, total})` as bytes arrive (`total` is null
 * without a Content-Length). Fails with code FETCH_FAILED.
 */
export async function fetchBytes(url, file, on_progress, fetchImpl = globalThis.fetch) {
  return (await fetchResponse(url, file, on_progress, fetchImpl)).bytes;
}

/**
 * fetchBytes with request options (`init`, e.g. a Range header): `{bytes, status}`, the status
 * telling a range (206) from the whole file (200).
 */
export async function fetchResponse(url, file, on_progress, fetchImpl = globalThis.fetch, init = undefined) {
  const failed = (reason) =>
    new SextantError('FETCH_FAILED', `fetching the ${file} from ${url} failed: ${reason}; check the URL and that the server serves that file`);
  let response;
  try {
    response = await (init === undefined ? fetchImpl(url) : fetchImpl(url, init));
  } catch (e) {
    throw failed(e?.message ?? String(e));
  }
  if (!response.ok) throw failed(`HTTP status ${response.status}`);
  return { bytes: await readBody(response, file, on_progress, failed), status: response.status };
}

/** The body of `response`, reporting progress. */
async function readBody(response, file, on_progress, failed) {
  const length = Number(response.headers.get('content-length'));
  const total = Number.isFinite(length) && length > 0 ? length : null;
  const report = (loaded) => on_progress?.({ file, loaded, total });
  if (!response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    report(bytes.length);
    return bytes;
  }
  const reader = response.body.getReader();
  const parts = [];
  let loaded = 0;
  report(0);
  for (;;) {
    let step;
    try {
      step = await reader.read();
    } catch (e) {
      throw failed(e?.message ?? String(e));
    }
    if (step.done) break;
    parts.push(step.value);
    loaded += step.value.length;
    report(loaded);
  }
  return concat(parts, loaded);
}

/** `parts` as one array of `length` bytes (the only part itself when there is one). */
export function concat(parts, length = parts.reduce((n, p) => n + p.length, 0)) {
  if (parts.length === 1) return parts[0];
  const bytes = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return bytes;
}

/** A file's bytes: given as bytes, or fetched from a URL. Undefined for nothing. */
export async function toBytes(value, file, on_progress, fetchImpl) {
  if (value == null) return undefined;
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (isUrlLike(value)) return fetchBytes(String(value), file, on_progress, fetchImpl);
  throw new SextantError('BAD_ARGUMENT', `${file} must be a URL, an ArrayBuffer or a Uint8Array`);
}
