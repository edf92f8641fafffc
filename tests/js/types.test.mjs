// index.d.ts checked against the code: it compiles a typed use of every call (tsc --noEmit
// --strict), and what it declares — exports, methods, option and result fields, error codes —
// is exactly what the built package has at run time and what the core's defaults() lists.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { consumerProject, importPackage, fixtures, modelDir, root } from './harness.mjs';
import { startLlmServer } from './llm-server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ts = createRequire(import.meta.url)('typescript');
let api;
let declared;

/** The declarations of index.d.ts: exported names, class members, interface fields, unions. */
function declarations(file) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const out = { values: new Set(), classes: {}, interfaces: {}, aliases: {} };
  const name = (n) => n.name?.getText(source);
  for (const node of source.statements) {
    if (ts.isFunctionDeclaration(node)) out.values.add(name(node));
    if (ts.isVariableStatement(node)) for (const d of node.declarationList.declarations) out.values.add(d.name.getText(source));
    // `export { a, b } from './index.js'` (values only, not `export type`).
    if (ts.isExportDeclaration(node) && !node.isTypeOnly && node.exportClause && ts.isNamedExports(node.exportClause)) {
      for (const e of node.exportClause.elements) if (!e.isTypeOnly) out.values.add(e.name.getText(source));
    }
    if (ts.isClassDeclaration(node)) {
      out.values.add(name(node));
      out.classes[name(node)] = node.members.filter((m) => m.name && !ts.isConstructorDeclaration(m) && !(m.modifiers ?? []).some((x) => x.kind === ts.SyntaxKind.PrivateKeyword)).map(name);
    }
    if (ts.isInterfaceDeclaration(node)) {
      const parents = (node.heritageClauses ?? []).flatMap((h) => h.types.map((t) => t.expression.getText(source)));
      out.interfaces[name(node)] = { fields: node.members.map(name), parents };
    }
    if (ts.isTypeAliasDeclaration(node)) out.aliases[name(node)] = node.type;
  }
  const unionLiterals = (aliasName) => out.aliases[aliasName].types.map((t) => t.literal.text);
  const intersection = (aliasName) => out.aliases[aliasName].types.flatMap((t) => fields(t.typeName.getText(source)));
  // An interface's fields with those of the interfaces and intersections it extends.
  function fields(typeName) {
    if (out.aliases[typeName]) return intersection(typeName);
    const i = out.interfaces[typeName];
    return [...(i?.parents ?? []).flatMap(fields), ...(i?.fields ?? [])];
  }
  return { ...out, fields, unionLiterals, intersection };
}

before(async () => {
  api = await importPackage();
  await api.ready();
  declared = declarations(path.join(consumerProject(), 'node_modules/sextant-search/index.d.ts'));
});

test('a typed use of every call compiles with tsc --strict', () => {
  const project = consumerProject();
  copyFileSync(path.join(here, 'types/usage.ts'), path.join(project, 'usage.ts'));
  const tsc = path.join(here, 'node_modules/typescript/bin/tsc');
  try {
    execFileSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2022', '--module', 'esnext', '--moduleResolution', 'bundler', '--lib', 'es2022,dom', 'usage.ts'], { cwd: project, stdio: 'pipe' });
  } catch (e) {
    assert.fail(`tsc found errors:\n${e.stdout}${e.stderr}`);
  }
});

test('the declared exports and Sextant methods are the package\'s', async () => {
  const runtime = Object.keys(api).filter((k) => k !== 'default').sort();
  assert.deepEqual([...declared.values].sort(), runtime);
  const methods = Object.getOwnPropertyNames(api.Sextant.prototype).filter((m) => m !== 'constructor');
  assert.deepEqual(declared.classes.Sextant.sort(), ['load', ...methods].sort());
});

test('collection.d.ts, research.d.ts and memory.d.ts declare exactly what sextant-search/collection, /research and /memory export', async () => {
  const project = consumerProject();
  writeFileSync(path.join(project, 'entries.mjs'), "export * as collection from 'sextant-search/collection';\nexport * as research from 'sextant-search/research';\nexport * as memory from 'sextant-search/memory';\n");
  const entries = await import(pathToFileURL(path.join(project, 'entries.mjs')).href);
  for (const entry of ['collection', 'research', 'memory']) {
    const types = declarations(path.join(project, `node_modules/sextant-search/${entry}.d.ts`));
    assert.deepEqual([...types.values].sort(), Object.keys(entries[entry]).filter((k) => k !== 'default').sort(), `${entry}.d.ts`);
  }
});

test('declared option fields are the core\'s, and the error codes its table', () => {
  const d = api.defaults();
  const keys = (o) => Object.keys(o).sort();
  assert.deepEqual(declared.fields('SearchOptions').sort(), keys(d.search));
  assert.deepEqual(declared.fields('FrameOptions').sort(), keys(d.frame));
  assert.deepEqual(declared.intersection('ContextOptions').sort(), keys(d.context));
  const jsOnly = ['llm', 'signal', 'on_context', 'on_token', 'on_retry', 'fetch', 'random', 'graph'];
  assert.deepEqual(declared.fields('AskOptions').filter((f) => !jsOnly.includes(f)).sort(), keys(d.ask));
  assert.deepEqual(declared.fields('LoadOptions').filter((f) => !['index', 'model', 'tokenizer', 'on_progress', 'fetch', 'max_index_bytes', 'otlp'].includes(f)).sort(), keys(d.load));
  assert.deepEqual(declared.unionLiterals('ErrorCode').sort(), d.error_codes.map((c) => c.code).sort());
  assert.deepEqual(declared.fields('Defaults').sort(), keys(d));
});

test('declared result fields are what the package returns', async () => {
  const bundle = await readFile(path.join(fixtures, 'golden-v2.sxt'));
  const sextant = await api.Sextant.load({
    index: bundle,
    model: await readFile(path.join(modelDir, 'model.onnx')),
    tokenizer: await readFile(path.join(modelDir, 'tokenizer.json')),
  });
  const llm = await startLlmServer();
  try {
    const keys = (o) => Object.keys(o).sort();
    // With an LLM rerank, so its report (declared optional) is there too.
    const judge = { rerank: 'llm', llm: { base_url: llm.baseUrl, model: 'm' } };
    const response = await sextant.search('fog horn', { k: 2, ...judge });
    // An LLM rerank and the graph are not asked for together: each response has one report.
    const without = (name, field) => declared.fields(name).filter((f) => f !== field).sort();
    assert.deepEqual(without('SearchResponse', 'graph'), keys(response));
    const graphed = await sextant.search('fog horn', { k: 2, graph: true });
    assert.deepEqual(without('SearchResponse', 'rerank'), keys(graphed));
    assert.deepEqual(declared.fields('GraphReport').sort(), keys(graphed.graph));
    assert.deepEqual(without('ContextResponse', 'rerank'), keys(await sextant.context('fog horn', { graph: true })));
    assert.deepEqual(declared.fields('SearchResult').sort(), keys(response.results[0]));
    assert.deepEqual(declared.fields('StageTimings').sort(), keys(response.timings));
    assert.deepEqual(declared.fields('Framed').sort(), keys(sextant.frame(response.results)));
    assert.deepEqual(without('ContextResponse', 'graph'), keys(await sextant.context('fog horn', judge)));
    const answer = await sextant.ask('what does the fog horn do', { llm: { base_url: llm.baseUrl, model: 'm' } });
    assert.deepEqual(declared.fields('Answer').sort(), keys(answer));
    assert.deepEqual(declared.fields('CitationReport').sort(), keys(api.verifyCitations('x [a#1]', ['a#1'])));
  } finally {
    sextant.free();
    await llm.close();
  }
});

test('the docs name no option by its old camelCase name', () => {
  // The names options had before the one vocabulary; a doc that still uses one misleads.
  const old = ['onProgress', 'onToken', 'onRetry', 'baseUrl', 'apiKey', 'tokenBudget', 'timeoutMs', 'maxTries', 'minSimilarity', 'perDocument', 'vectorSearch', 'scoreThreshold', 'unknownCitations', 'malformedEvents', 'finishReason', 'systemPrompt', 'waitMs'];
  for (const doc of ['README.md', 'pkg-template/README.md', 'www/content/js-api.md', 'www/content/workers.md', 'docs/ARCHITECTURE.md']) {
    const text = readFileSync(path.join(root, doc), 'utf8');
    for (const name of old) assert.ok(!new RegExp(`\\b${name}\\b`).test(text), `${doc} still says ${name}`);
  }
});
