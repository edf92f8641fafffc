// What a document expands to, checked before anything reads it whole. A DOCX is a ZIP: a few
// hundred kilobytes may inflate to gigabytes (a "zip bomb"), and mammoth would build all of it in
// memory. Before a DOCX is handed to mammoth, its central directory is read (how many entries,
// and the size each says it expands to) and every entry is inflated once as a stream, counting,
// never keeping, its bytes: an archive that says it expands past the limit, or an entry that
// expands past what it says, is refused with a message that says so. Pure (bytes in, a verdict
// out): the workspace page runs it, and Node tests do.

/** Most entries a DOCX may hold (a long report with many images holds a few hundred). */
export const MAX_ZIP_ENTRIES = 10000;

/** A size in words: bytes, KB or MB. */
const MB = (n) => (n < 1024 ? `${n} bytes` : n < 1024 * 1024 ? `${Math.round(n / 1024)} KB` : `${Math.round(n / (1024 * 1024))} MB`);

/** A refusal: an Error with the BAD_ARGUMENT code, as the core's own refusals of a file. */
function refuse(message) {
  return Object.assign(new Error(message), { code: 'BAD_ARGUMENT' });
}

/** The entries of a ZIP's central directory: [{name, method, compressed, size, offset}]. */
export function zipEntries(bytes, { max_entries = MAX_ZIP_ENTRIES } = {}) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const u16 = (at) => view.getUint16(at, true);
  const u32 = (at) => view.getUint32(at, true);
  const notZip = () => refuse('the file is not a ZIP archive (a DOCX is one): its directory is missing or damaged');
  // The end of central directory record: in the last 22 bytes plus a comment of up to 64 KB.
  let end = -1;
  for (let at = bytes.length - 22; at >= Math.max(0, bytes.length - 22 - 65535); at--) {
    if (u32(at) === 0x06054b50) {
      end = at;
      break;
    }
  }
  if (end < 0) throw notZip();
  const count = u16(end + 10);
  const directorySize = u32(end + 12);
  const directoryAt = u32(end + 16);
  if (count === 0xffff || directorySize === 0xffffffff || directoryAt === 0xffffffff) {
    throw refuse('the archive is a ZIP64 (over 4 GB or 65,535 entries), more than a document this workspace reads');
  }
  if (count > max_entries) throw refuse(`the archive holds ${count} entries, more than the ${max_entries} a document this workspace reads may hold`);
  if (directoryAt + directorySize > end) throw notZip();
  const entries = [];
  let at = directoryAt;
  for (let i = 0; i < count; i++) {
    if (at + 46 > end || u32(at) !== 0x02014b50) throw notZip();
    const nameLength = u16(at + 28);
    const entry = {
      name: new TextDecoder().decode(bytes.subarray(at + 46, at + 46 + nameLength)),
      method: u16(at + 10),
      compressed: u32(at + 20),
      size: u32(at + 24),
      offset: u32(at + 42),
    };
    if (entry.compressed === 0xffffffff || entry.size === 0xffffffff || entry.offset === 0xffffffff) {
      throw refuse('the archive is a ZIP64 (an entry over 4 GB), more than a document this workspace reads');
    }
    entries.push(entry);
    at += 46 + nameLength + u16(at + 30) + u16(at + 32);
  }
  return entries;
}

/** The bytes of an entry's data (compressed as stored), from its local header. */
function entryData(bytes, entry) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const at = entry.offset;
  if (at + 30 > bytes.length || view.getUint32(at, true) !== 0x04034b50) throw refuse(`the archive's entry ${JSON.stringify(entry.name)} is damaged`);
  const start = at + 30 + view.getUint16(at + 26, true) + view.getUint16(at + 28, true);
  if (start + entry.compressed > bytes.length) throw refuse(`the archive's entry ${JSON.stringify(entry.name)} is cut short`);
  return bytes.subarray(start, start + entry.compressed);
}

/** Inflates `data` (raw deflate) as a stream, counting its bytes; stops past `limit`. */
async function inflatedSize(data, limit) {
  const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream('deflate-raw'));
  const reader = stream.getReader();
  let size = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return size;
      size += value.length;
      if (size > limit) return size;
    }
  } catch {
    return -1; // not a deflate stream
  } finally {
    reader.cancel().catch(() => {});
  }
}

/**
 * Checks what a ZIP archive (a DOCX) expands to: at most `max_bytes` in all (default
 * the core's `defaults().input.max_file_bytes`), at most `max_entries` entries, each entry stored or deflated and expanding
 * to exactly what it says. Resolves with {entries, expanded} or rejects with a BAD_ARGUMENT Error
 * that says what is wrong.
 */
export async function checkZipExpansion(bytes, { max_bytes, max_entries = MAX_ZIP_ENTRIES }) {
  const entries = zipEntries(bytes, { max_entries });
  const expanded = entries.reduce((n, e) => n + e.size, 0);
  if (expanded > max_bytes) {
    throw refuse(`it expands to ${MB(expanded)}, over the ${MB(max_bytes)} a file may hold; it may be a "zip bomb", or a document too large to read here`);
  }
  for (const entry of entries) {
    const data = entryData(bytes, entry);
    if (entry.method === 0) {
      if (entry.compressed !== entry.size) throw refuse(`the archive's entry ${JSON.stringify(entry.name)} is damaged (its sizes disagree)`);
      continue;
    }
    if (entry.method !== 8) throw refuse(`the archive's entry ${JSON.stringify(entry.name)} is compressed in a way a DOCX never is (method ${entry.method})`);
    const actual = await inflatedSize(data, entry.size);
    if (actual < 0) throw refuse(`the archive's entry ${JSON.stringify(entry.name)} is damaged (it does not inflate)`);
    if (actual > entry.size) {
      throw refuse(`the archive's entry ${JSON.stringify(entry.name)} expands past the ${MB(entry.size)} it declares; it may be a "zip bomb"`);
    }
  }
  return { entries: entries.length, expanded };
}

/**
 * Collects a document's text pieces while they are made (a PDF's pages), refusing once their
 * UTF-8 bytes pass `max_bytes` (the core's `defaults().input.max_file_bytes`): a small compressed PDF may hold
 * far more text than a file may.
 */
export function textBudget(what, max_bytes) {
  const encoder = new TextEncoder();
  let used = 0;
  return (text) => {
    used += encoder.encode(text).length;
    if (used > max_bytes) throw refuse(`${what} holds more than ${MB(max_bytes)} of text, over what a file may hold`);
    return text;
  };
}
