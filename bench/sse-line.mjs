// readChatStream on a 20 MB answer sent as one event line, against the same answer sent as
// 20,000 events of 1 KB (the anchor), both read in 64 KB network chunks. Linear parsing keeps the
// ratio near 1. Usage: node bench/sse-line.mjs <built package dir>
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const pkg = process.argv[2] ?? 'pkg';
const { readChatStream } = await import(pathToFileURL(path.resolve(pkg, 'chat.js')).href);
const total = 20 << 20;
const event = (content) => `data: ${JSON.stringify({ choices: [{ delta: { content } }] })}\n\n`;
const end = 'data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n';
const streams = {
  'one 20 MB line': event('x'.repeat(total)) + end,
  '20,000 lines of 1 KB': Array.from({ length: total / 1024 }, () => event('x'.repeat(1024))).join('') + end,
};
console.log('| stream | bytes | median of 3 | answer bytes |');
console.log('|---|---|---|---|');
for (const [name, text] of Object.entries(streams)) {
  const bytes = new TextEncoder().encode(text);
  const times = [];
  let received = 0;
  for (let round = 0; round < 3; round++) {
    const body = new ReadableStream({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 65536) controller.enqueue(bytes.subarray(i, i + 65536));
        controller.close();
      },
    });
    received = 0;
    const started = performance.now();
    await readChatStream(body, (d) => (received += d.length), { max_line_bytes: Infinity, max_answer_bytes: Infinity });
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  console.log(`| ${name} | ${bytes.length} | ${times[1].toFixed(0)} ms | ${received} |`);
}
