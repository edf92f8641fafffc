// Documents built in the tests, byte by byte (a PDF of text pages, a ZIP, a DOCX), a Markdown
// note, and the demo site with its research workspace served to a fresh Chromium.
import { buildDemoSite } from './harness.mjs';
import { startStaticServer } from './static-server.mjs';
import { launch } from './browser.mjs';
import { deflateRawSync, constants } from 'node:zlib';

/** The demo site built and served, and a fresh Chromium; close() ends both. */
export async function openWorkspaceSite(prefix) {
  const server = await startStaticServer(buildDemoSite(prefix));
  const context = await launch();
  return {
    server,
    context,
    close: async () => {
      await context.close();
      await server.close();
    },
  };
}

export const TIDE_NOTES = `# Tide tables

Harbour masters publish tide tables so that ships can plan their arrival at high water.

## Spring tides

Spring tides happen near the new and the full moon, when the sun and the moon pull together.
`;

/** A PDF of text pages (Helvetica), with a correct cross-reference table. */
export function pdfOf(pages) {
  const objects = ['<< /Type /Catalog /Pages 2 0 R >>', null, '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'];
  const kids = [];
  for (const text of pages) {
    const lines = text.split('\n').map((l, i) => `BT /F1 12 Tf 72 ${720 - 16 * i} Td (${l.replace(/[\\()]/g, '\\$&')}) Tj ET`).join('\n');
    objects.push(`<< /Length ${Buffer.byteLength(lines)} >>\nstream\n${lines}\nendstream`);
    const content = objects.length;
    objects.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${content} 0 R /Resources << /Font << /F1 3 0 R >> >> >>`);
    kids.push(`${objects.length} 0 R`);
  }
  objects[1] = `<< /Type /Pages /Kids [${kids.join(' ')}] /Count ${kids.length} >>`;
  let out = '%PDF-1.4\n';
  const offsets = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out);
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
/** CRC-32 over pieces of bytes. */
function crc32(pieces) {
  let c = 0xffffffff;
  for (const buf of pieces) for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A ZIP archive of the given files, stored (no compression), with their CRC-32s. */
export function zipOf(files) {
  return zipEntries(Object.entries(files).map(([name, text]) => ({ name, data: Buffer.from(text) })));
}

/**
 * A ZIP of entries `{name, data}` stored, or `{name, deflated, size, crc}` already deflated
 * (`declare` overrides the size written in the directories, as a lying archive does).
 */
export function zipEntries(entries) {
  const locals = [];
  const centrals = [];
  let offset = 0;
  for (const entry of entries) {
    const stored = entry.data !== undefined;
    const body = stored ? entry.data : entry.deflated;
    const size = entry.declare ?? (stored ? body.length : entry.size);
    const crc = stored ? crc32([body]) : entry.crc;
    const nameBytes = Buffer.from(entry.name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(stored ? 0 : 8, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(stored ? 0 : 8, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, body);
    centrals.push(central, nameBytes);
    offset += 30 + nameBytes.length + body.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/**
 * A DOCX "zip bomb": its document.xml is `megabytes` MB of one repeated paragraph, deflated (a
 * few hundred KB on the wire). Made a megabyte at a time, never whole. `declare`: the size its
 * directories claim (the truth by default).
 */
export function docxBomb(megabytes, { declare } = {}) {
  const head = Buffer.from('<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>');
  const tail = Buffer.from('</w:body></w:document>');
  const paragraph = '<w:p><w:r><w:t>All work and no play makes a dull document. </w:t></w:r></w:p>';
  const megabyte = Buffer.from(paragraph.repeat(Math.floor((1 << 20) / paragraph.length))); // whole paragraphs: valid XML
  const pieces = [head, ...Array(megabytes).fill(megabyte), tail];
  const size = pieces.reduce((n, p) => n + p.length, 0);
  // One deflate stream over the pieces, flushed piece by piece (never a buffer of the whole).
  const deflated = [];
  for (const [i, piece] of pieces.entries()) {
    deflated.push(deflateRawSync(piece, { finishFlush: i === pieces.length - 1 ? constants.Z_FINISH : constants.Z_SYNC_FLUSH, level: 9 }));
  }
  const docx = docxOf([]);
  // The small parts as docxOf writes them, then the bomb as word/document.xml.
  return zipEntries([
    { name: '[Content_Types].xml', data: readEntry(docx, '[Content_Types].xml') },
    { name: '_rels/.rels', data: readEntry(docx, '_rels/.rels') },
    { name: 'word/document.xml', deflated: Buffer.concat(deflated), size, crc: crc32(pieces), declare },
  ]);
}

/** A stored entry's bytes from a ZIP zipOf wrote. */
function readEntry(zip, name) {
  let at = 0;
  while (zip.readUInt32LE(at) === 0x04034b50) {
    const size = zip.readUInt32LE(at + 18);
    const nameLength = zip.readUInt16LE(at + 26);
    const start = at + 30 + nameLength;
    if (zip.subarray(at + 30, start).toString() === name) return zip.subarray(start, start + size);
    at = start + size;
  }
  throw new Error(`no ${name}`);
}

/** A DOCX of headings and paragraphs: [[style, text], …] with style 'Heading1' or null. */
export function docxOf(paragraphs) {
  const body = paragraphs
    .map(([style, text]) => `<w:p>${style ? `<w:pPr><w:pStyle w:val="${style}"/></w:pPr>` : ''}<w:r><w:t>${text}</w:t></w:r></w:p>`)
    .join('');
  return zipOf({
    '[Content_Types].xml': '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
    '_rels/.rels': '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
    'word/document.xml': `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`,
  });
}
