// Graph retrieval on two-hop questions: answer recall and context precision with and without
// `--graph`, against the same scripted LLM (tests/js/graph-llm.mjs: a rule-based stand-in, not a
// model: no LLM runs here).
//
// Two question sets:
//
// - constructed (the default; seeded, printed): N chains of two pages — a product page naming
//   its maker, and the maker's page naming its founder and its town — among distractor pages
//   that share the questions' words ("started", "company", "made", "based") but no names. Each
//   question ("Who started the company that made the X?", "Where is the company that made the X
//   based?") needs both pages of its chain: the answer is only on the maker's page, which names
//   neither the product nor the question's words.
// - `--hotpot FILE`: HotpotQA's dev set in its distractor setting (hotpot_dev_distractor_v1.json
//   from hotpotqa.github.io, or any prefix of it: the whole records are read), with every
//   question's ten Wikipedia paragraphs pooled into one corpus; the gold pages are its supporting
//   facts' titles.
//
// Usage: node bench/graph-multihop.mjs [--chains 12] [--seed 7 | --hotpot FILE] [--k 2,4]
//        [--work DIR] [--sextant PATH] [--verbose]
// Prints one table row per k and mode: answer recall (the answer in the framed context; yes/no
// answers are not counted), second-hop recall (the page the question does not name framed),
// every gold page framed, context precision (framed chunks from the question's gold pages /
// framed chunks), and the graph block's lines.
import { execFileSync, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, mkdirSync, rmSync, writeFileSync, readdirSync, readFileSync } from 'node:fs';
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
const hotpot = arg('hotpot', null);
const seed = Number(arg('seed', 7));
const ks = arg('k', '2,4').split(',').map(Number);
const sextant = arg('sextant', process.env.SEXTANT_BIN ?? path.join(process.env.CARGO_TARGET_DIR ?? path.join(homedir(), '.cache/sextant/target'), 'release/sextant'));
console.log(`${hotpot ? `HotpotQA ${hotpot}` : `seed ${seed}, ${chains} chains`}, k ${ks.join(', ')}, ${sextant}`);

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

// --work DIR keeps the corpus, its index and its graph there, and a later run with the same
// DIR reuses them (the graph build is most of a run's time); default: a new temporary folder.
const work = arg('work', null);
const dir = work ? path.resolve(work) : mkdtempSync(path.join(tmpdir(), 'sextant-multihop-'));
const corpus = path.join(dir, 'corpus');
mkdirSync(corpus, { recursive: true });
const slug = (s) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
const { pages, questions } = hotpot ? hotpotCorpus(hotpot) : constructedCorpus();
for (const [name, text] of pages) writeFileSync(path.join(corpus, name), text);
console.log(`${pages.size} pages, ${questions.length} questions`);

/** The constructed chains and their distractors (seeded). */
function constructedCorpus() {
  const products = ['Zephyr', 'Harbor', 'Lumen', 'Cinder', 'Mistral', 'Quarry', 'Tundra', 'Beacon', 'Falcon', 'Meridian', 'Granite', 'Solstice', 'Ember', 'Cascade', 'Nimbus', 'Pioneer'];
  const kinds = [['engine', 'a compact turbine for gliders'], ['pump', 'a bilge pump for fishing boats'], ['lamp', 'a storm lantern for lighthouses'], ['stove', 'a wood stove for mountain huts'], ['winch', 'a hand winch for small harbours'], ['loom', 'a treadle loom for wool'], ['press', 'a cider press for orchards'], ['kiln', 'a brick kiln for potters']];
  const makers = ['Orbital Labs', 'Keel Works', 'Brightwater Foundry', 'Ashgrove Works', 'Northwind Labs', 'Copperfield Foundry', 'Redcliff Works', 'Silverline Labs', 'Ironbridge Foundry', 'Bluestone Works', 'Oakhurst Labs', 'Westmarch Foundry', 'Stonehaven Works', 'Larkspur Labs', 'Fenwick Foundry', 'Highmoor Works'];
  const firsts = ['Mira', 'Tomas', 'Ines', 'Kofi', 'Astrid', 'Ravi', 'Lena', 'Joon', 'Amara', 'Piotr', 'Sofia', 'Emeka', 'Hana', 'Diego', 'Freya', 'Omar'];
  const lasts = ['Okafor', 'Varga', 'Lindqvist', 'Mensah', 'Haugen', 'Iyer', 'Novak', 'Park', 'Diallo', 'Kowalski', 'Moreau', 'Adeyemi', 'Sato', 'Ferreira', 'Holm', 'Haddad'];
  const towns = ['Port Ellery', 'Tamale', 'Vestby', 'Kumasi', 'Ardmore', 'Pune', 'Brno', 'Daegu', 'Thies', 'Gdynia', 'Arles', 'Ibadan', 'Sendai', 'Braga', 'Tromso', 'Byblos'];
  const pages = new Map();
  const questions = [];
  for (let i = 0; i < chains; i++) {
    const product = pick(products);
    const [kind, what] = kinds[i % kinds.length];
    const maker = pick(makers);
    const founder = `${pick(firsts)} ${pick(lasts)}`;
    const town = pick(towns);
    const productPage = `${slug(product)}-${kind}.md`;
    const makerPage = `${slug(maker)}.md`;
    pages.set(productPage, `# ${product} ${kind}\n\nThe ${product} ${kind} is ${what}. The ${product} ${kind} was made by ${maker}. It is sold in three sizes and needs little care.\n`);
    pages.set(makerPage, `# ${maker}\n\n${maker} is a small workshop. ${maker} was started by ${founder}, who trained as a machinist. The workshop stands in ${town}, near the old market, and employs twenty people.\n`);
    questions.push({ id: `q${i}a`, text: `Who started the company that made the ${product} ${kind}?`, answer: founder, gold: [productPage, makerPage], second: makerPage });
    questions.push({ id: `q${i}b`, text: `Where is the company that made the ${product} ${kind} based?`, answer: town, gold: [productPage, makerPage], second: makerPage });
  }
  const distractors = [
    'Most companies that made engines were started by engineers, and where a company is based decides who it hires.',
    'A company that made pumps or lamps was often started by a family; who started it is written in the town records.',
    'Where is a workshop based? Usually near water. Who started it? Usually a machinist. What did it make? Tools.',
    'Companies that made stoves, winches and looms were based in market towns, and the people who started them sold there.',
    'The registry lists who started each company, what each company made and where each company is based.',
    'A press or a kiln made by a company that is based far away costs more to repair.',
  ];
  distractors.forEach((text, i) => pages.set(`notes-${i}.md`, `# Notes ${i}\n\n${text}\n`));
  return { pages, questions };
}

/**
 * HotpotQA's distractor setting (its dev file, or any prefix of it: whole records are read until
 * the text ends), pooled: every paragraph of every question is one page of one corpus, so each
 * question is searched among all of them, not only its own ten. Gold pages: the titles of its
 * supporting facts. Answer recall counts questions whose answer is not yes or no.
 */
function hotpotCorpus(file) {
  const text = readFileSync(file, 'utf8');
  const records = [];
  let at = text.indexOf('[') + 1;
  for (;;) {
    const start = text.indexOf('{', at);
    if (start < 0) break;
    const end = recordEnd(text, start);
    if (end < 0) break; // a prefix cut inside a record
    records.push(JSON.parse(text.slice(start, end)));
    at = end;
  }
  const pages = new Map();
  const byTitle = new Map();
  const pageOf = (title, sentences) => {
    if (byTitle.has(title)) return byTitle.get(title);
    let name = `${slug(title) || 'page'}.md`;
    for (let n = 2; pages.has(name); n++) name = `${slug(title)}-${n}.md`;
    pages.set(name, `# ${title}\n\n${sentences.join('').trim()}\n`);
    byTitle.set(title, name);
    return name;
  };
  const questions = [];
  for (const r of records) {
    for (const [title, sentences] of r.context) pageOf(title, sentences);
    const gold = [...new Set(r.supporting_facts.map(([title]) => byTitle.get(title)))].filter(Boolean);
    const yesNo = /^(yes|no)$/i.test(r.answer);
    // The second hop of a bridge question: the gold page whose title the question does not name.
    const second = r.type === 'bridge' ? gold.find((g) => !r.question.toLowerCase().includes(titleOf(g, byTitle).toLowerCase().replace(/\s*\(.*\)$/, ''))) : undefined;
    questions.push({ id: r._id, text: r.question, answer: yesNo ? null : r.answer, gold, second, type: r.type });
  }
  return { pages, questions };
}

function titleOf(name, byTitle) {
  for (const [title, n] of byTitle) if (n === name) return title;
  return name;
}

/** Where the JSON object starting at `start` ends (one past its closing brace), or -1. */
function recordEnd(text, start) {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

const env = { ...process.env };
const run = async (args) => JSON.parse((await promisify(execFile)(sextant, args, { encoding: 'utf8', env, maxBuffer: 1 << 26 })).stdout);
const reused = existsSync(path.join(dir, 'graph-build.json'));
if (!reused) {
  rmSync(path.join(dir, 'index'), { recursive: true, force: true });
  execFileSync(sextant, ['build', corpus, '-o', path.join(dir, 'c.sxt')], { stdio: 'pipe', env });
  execFileSync(sextant, ['unpack', path.join(dir, 'c.sxt'), '-o', path.join(dir, 'index')], { stdio: 'pipe', env });
}
const manifest = path.join(dir, 'index', readdirSync(path.join(dir, 'index')).find((f) => f.startsWith('manifest.')));

// The prompts the scripted LLM recognises: the package's (pkg/, from make wasm).
const { defaults, ready } = await import(path.join(root, 'pkg/node.js'));
await ready();
const prompts = defaults().prompts;
const server = await startLlmServer(graphPlan(prompts));
try {
  const llm = ['--llm-base-url', server.baseUrl, '--llm-model', 'rules'];
  const built = reused
    ? JSON.parse(readFileSync(path.join(dir, 'graph-build.json'), 'utf8'))
    : await run(['graph', 'build', manifest, ...llm, '--cache-dir', path.join(dir, 'cache'), '--json']);
  writeFileSync(path.join(dir, 'graph-build.json'), JSON.stringify(built));
  if (reused) console.log(`reusing the index and graph in ${dir}`);
  const bytes = readFileSync(built.graph);
  console.log(`graph: ${built.entities} entities, ${built.relations} relations from ${built.chunks} chunks, ${built.calls} calls, ${built.seconds.toFixed(1)} s; ${bytes.length} bytes (${gzipSync(bytes, { level: 6 }).length} gzip)`);
  const docs = (ids) => ids.map((id) => id.split('#')[0]);
  const norm = (t) => t.toLowerCase().replace(/\s+/g, ' ');
  const withAnswer = questions.filter((q) => q.answer);
  const withSecond = questions.filter((q) => q.second);
  console.log(`answer recall over ${withAnswer.length} questions (the rest are yes or no); second page over ${withSecond.length} bridge questions`);
  console.log('| k | context | answer recall | second page framed | every gold page framed | context precision | framed chunks | graph lines |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const k of ks) {
    for (const graph of [false, true]) {
      let answered = 0;
      let second = 0;
      let allGold = 0;
      let gold = 0;
      let framed = 0;
      let lines = 0;
      for (const q of questions) {
        const out = await run(['frame', built.manifest, q.text, '-k', String(k), ...(graph ? ['--graph', ...llm] : []), '--json']);
        if (q.answer && norm(out.context).includes(norm(q.answer))) answered++;
        else if (q.answer && graph && process.argv.includes('--verbose')) console.log(`missed ${q.text} (${q.answer}): terms ${JSON.stringify(out.graph.terms)}; framed ${out.included.join(' ')}; lines ${out.graph.lines.map((l) => `${l.name} ${l.score.toFixed(2)}`).join(', ')}`);
        const d = docs(out.included);
        if (q.second && d.includes(q.second)) second++;
        if (q.gold.every((g) => d.includes(g))) allGold++;
        gold += d.filter((x) => q.gold.includes(x)).length;
        framed += d.length;
        lines += graph ? out.graph.lines.length : 0;
      }
      const n = questions.length;
      const ratio = (a, b) => (b ? (a / b).toFixed(3) : '–');
      console.log(`| ${k} | ${graph ? 'hybrid + graph' : 'hybrid'} | ${ratio(answered, withAnswer.length)} | ${ratio(second, withSecond.length)} | ${ratio(allGold, n)} | ${ratio(gold, framed)} | ${(framed / n).toFixed(1)} | ${graph ? (lines / n).toFixed(1) : '–'} |`);
    }
  }
} finally {
  await server.close();
}
