// Graph retrieval on two-hop questions: answer recall and context precision with and without
// `--graph`, against the same scripted LLM (tests/js/graph-llm.mjs: a rule-based stand-in, not a
// model: no LLM runs here).
//
// The corpus is constructed (seeded, printed): N chains of two pages — a product page naming its
// maker, and the maker's page naming its founder and its town — among distractor pages that
// share the questions' words ("started", "company", "made", "based") but no names. Each question
// ("Who started the company that made the X?", "Where is the company that made the X based?")
// needs both pages of its chain: the answer is only on the maker's page, which names neither the
// product nor the question's words.
//
// Usage: node bench/graph-multihop.mjs [--chains 12] [--seed 7] [--k 2,4] [--sextant PATH]
// Prints one table row per k and mode: answer recall (the answer's words in the framed context),
// second-hop recall (a chunk of the maker's page framed), context precision (framed chunks from
// the question's two pages / framed chunks), and the graph block's lines.
import { execFileSync, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, mkdirSync, writeFileSync, readdirSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir, homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startLlmServer } from '../tests/js/llm-server.mjs';
import { graphPlan } from '../tests/js/graph-llm.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const chains = Number(arg('chains', 12));
const seed = Number(arg('seed', 7));
const ks = arg('k', '2,4').split(',').map(Number);
const sextant = arg('sextant', process.env.SEXTANT_BIN ?? path.join(process.env.CARGO_TARGET_DIR ?? path.join(homedir(), '.cache/sextant/target'), 'release/sextant'));
console.log(`seed ${seed}, ${chains} chains, k ${ks.join(', ')}, ${sextant}`);

// A small seeded generator (mulberry32).
let state = seed >>> 0;
const random = () => {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (list) => list.splice(Math.floor(random() * list.length), 1)[0];

const products = ['Zephyr', 'Harbor', 'Lumen', 'Cinder', 'Mistral', 'Quarry', 'Tundra', 'Beacon', 'Falcon', 'Meridian', 'Granite', 'Solstice', 'Ember', 'Cascade', 'Nimbus', 'Pioneer'];
const kinds = [['engine', 'a compact turbine for gliders'], ['pump', 'a bilge pump for fishing boats'], ['lamp', 'a storm lantern for lighthouses'], ['stove', 'a wood stove for mountain huts'], ['winch', 'a hand winch for small harbours'], ['loom', 'a treadle loom for wool'], ['press', 'a cider press for orchards'], ['kiln', 'a brick kiln for potters']];
const makers = ['Orbital Labs', 'Keel Works', 'Brightwater Foundry', 'Ashgrove Works', 'Northwind Labs', 'Copperfield Foundry', 'Redcliff Works', 'Silverline Labs', 'Ironbridge Foundry', 'Bluestone Works', 'Oakhurst Labs', 'Westmarch Foundry', 'Stonehaven Works', 'Larkspur Labs', 'Fenwick Foundry', 'Highmoor Works'];
const firsts = ['Mira', 'Tomas', 'Ines', 'Kofi', 'Astrid', 'Ravi', 'Lena', 'Joon', 'Amara', 'Piotr', 'Sofia', 'Emeka', 'Hana', 'Diego', 'Freya', 'Omar'];
const lasts = ['Okafor', 'Varga', 'Lindqvist', 'Mensah', 'Haugen', 'Iyer', 'Novak', 'Park', 'Diallo', 'Kowalski', 'Moreau', 'Adeyemi', 'Sato', 'Ferreira', 'Holm', 'Haddad'];
const towns = ['Port Ellery', 'Tamale', 'Vestby', 'Kumasi', 'Ardmore', 'Pune', 'Brno', 'Daegu', 'Thies', 'Gdynia', 'Arles', 'Ibadan', 'Sendai', 'Braga', 'Tromso', 'Byblos'];

const dir = mkdtempSync(path.join(tmpdir(), 'sextant-multihop-'));
const corpus = path.join(dir, 'corpus');
mkdirSync(corpus);
const slug = (s) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-');
const questions = [];
for (let i = 0; i < chains; i++) {
  const product = pick(products);
  const [kind, what] = kinds[i % kinds.length];
  const maker = pick(makers);
  const founder = `${pick(firsts)} ${pick(lasts)}`;
  const town = pick(towns);
  const productPage = `${slug(product)}-${kind}.md`;
  const makerPage = `${slug(maker)}.md`;
  writeFileSync(path.join(corpus, productPage), `# ${product} ${kind}\n\nThe ${product} ${kind} is ${what}. The ${product} ${kind} was made by ${maker}. It is sold in three sizes and needs little care.\n`);
  writeFileSync(path.join(corpus, makerPage), `# ${maker}\n\n${maker} is a small workshop. ${maker} was started by ${founder}, who trained as a machinist. The workshop stands in ${town}, near the old market, and employs twenty people.\n`);
  questions.push({ id: `q${i}a`, text: `Who started the company that made the ${product} ${kind}?`, answer: founder, gold: [productPage, makerPage] });
  questions.push({ id: `q${i}b`, text: `Where is the company that made the ${product} ${kind} based?`, answer: town, gold: [productPage, makerPage] });
}
const distractors = [
  'Most companies that made engines were started by engineers, and where a company is based decides who it hires.',
  'A company that made pumps or lamps was often started by a family; who started it is written in the town records.',
  'Where is a workshop based? Usually near water. Who started it? Usually a machinist. What did it make? Tools.',
  'Companies that made stoves, winches and looms were based in market towns, and the people who started them sold there.',
  'The registry lists who started each company, what each company made and where each company is based.',
  'A press or a kiln made by a company that is based far away costs more to repair.',
];
distractors.forEach((text, i) => writeFileSync(path.join(corpus, `notes-${i}.md`), `# Notes ${i}\n\n${text}\n`));

const env = { ...process.env };
const run = async (args) => JSON.parse((await promisify(execFile)(sextant, args, { encoding: 'utf8', env, maxBuffer: 1 << 26 })).stdout);
execFileSync(sextant, ['build', corpus, '-o', path.join(dir, 'c.sxt')], { stdio: 'pipe', env });
execFileSync(sextant, ['unpack', path.join(dir, 'c.sxt'), '-o', path.join(dir, 'index')], { stdio: 'pipe', env });
const manifest = path.join(dir, 'index', readdirSync(path.join(dir, 'index')).find((f) => f.startsWith('manifest.')));

// The prompts the scripted LLM recognises: the package's (pkg/, from make wasm).
const { defaults, ready } = await import(path.join(root, 'pkg/node.js'));
await ready();
const prompts = defaults().prompts;
const server = await startLlmServer(graphPlan(prompts));
try {
  const llm = ['--llm-base-url', server.baseUrl, '--llm-model', 'rules'];
  const built = await run(['graph', 'build', manifest, ...llm, '--cache-dir', path.join(dir, 'cache'), '--json']);
  const bytes = readFileSync(built.graph);
  console.log(`graph: ${built.entities} entities, ${built.relations} relations from ${built.chunks} chunks, ${built.calls} calls, ${built.seconds.toFixed(1)} s; ${bytes.length} bytes (${gzipSync(bytes, { level: 6 }).length} gzip)`);
  const docs = (ids) => ids.map((id) => id.split('#')[0]);
  console.log('| k | context | answer recall | second page framed | context precision | framed chunks | graph lines |');
  console.log('|---|---|---|---|---|---|---|');
  for (const k of ks) {
    for (const graph of [false, true]) {
      let answered = 0;
      let second = 0;
      let gold = 0;
      let framed = 0;
      let lines = 0;
      for (const q of questions) {
        const out = await run(['frame', built.manifest, q.text, '-k', String(k), ...(graph ? ['--graph', ...llm] : []), '--json']);
        if (out.context.includes(q.answer)) answered++;
        else if (graph && process.argv.includes('--verbose')) console.log(`missed ${q.text} (${q.answer}): terms ${JSON.stringify(out.graph.terms)}; framed ${out.included.join(' ')}; lines ${out.graph.lines.map((l) => `${l.name} ${l.score.toFixed(2)}`).join(', ')}`);
        const d = docs(out.included);
        if (d.includes(q.gold[1])) second++;
        gold += d.filter((x) => q.gold.includes(x)).length;
        framed += d.length;
        lines += graph ? out.graph.lines.length : 0;
      }
      const n = questions.length;
      console.log(`| ${k} | ${graph ? 'hybrid + graph' : 'hybrid'} | ${(answered / n).toFixed(3)} | ${(second / n).toFixed(3)} | ${(gold / framed).toFixed(3)} | ${(framed / n).toFixed(1)} | ${graph ? (lines / n).toFixed(1) : '–'} |`);
    }
  }
} finally {
  await server.close();
}
