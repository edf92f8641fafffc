// A scripted stand-in for the user's LLM in graph tests and the graph benchmark: it answers
// the core's graph prompts (sextant's defaults().prompts.graph_extract / graph_glean /
// graph_query) by rules, not by a model, so what the graph must find is known:
//
// - extraction: each sentence's runs of capitalised words are entities (leading function words
//   such as "The", "In" or "He" left out), typed by a small rule (…Labs, Works, Foundry:
//   organisation; "by X Y", or a name followed by "(born" or its years: person; "in X": place;
//   else product; month and day names are not entities), and every two entities of a sentence
//   are related by the sentence;
// - gleaning: nothing more;
// - a question: its capitalised runs are its entities; who → person, where → place.
//
// JSON chat completions (not streamed), as the CLI and the package's graph calls ask for.

export const completion = (content) => ({
  body: JSON.stringify({
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 60, completion_tokens: 30, total_tokens: 90 },
  }),
});

const ORGANISATION = /\b(Labs|Works|Foundry|Company|Institute|University)$/;
// Capitalised words, joined by spaces or by "of" and "the" within a name (University of Kansas).
const CAPITALISED = /(?<![\p{L}\p{N}])\p{Lu}[\p{L}\p{N}-]*(?:\s+(?:(?:of|the)\s+)*\p{Lu}[\p{L}\p{N}-]*)*/gu;
// Dates are what things have, not things.
const DATES = new Set('January February March April May June July August September October November December Monday Tuesday Wednesday Thursday Friday Saturday Sunday'.split(' '));
const FUNCTION_WORDS = 'a an the it its he she his her they their them this that these those there in on at by for from with of to as after before during while although despite since until when where who what which how why most many some each every both all any no yes if but and or so then also here'.split(' ');
const STARTERS = new Set([...FUNCTION_WORDS.map((w) => w[0].toUpperCase() + w.slice(1)), 'Lamp', 'Pump', 'Founders', 'Companies']);

/** The entities of a sentence: [{name, type}]. */
export function entitiesOf(sentence) {
  const out = [];
  for (const m of sentence.matchAll(CAPITALISED)) {
    let name = m[0];
    const words = name.split(/\s+/);
    while (words.length && STARTERS.has(words[0])) words.shift();
    name = words.join(' ');
    if (!name || STARTERS.has(name) || DATES.has(name)) continue;
    const before = sentence.slice(0, m.index).trimEnd();
    let type = 'product';
    if (ORGANISATION.test(name)) type = 'organisation';
    else if (/\bin$/.test(before)) type = 'place';
    else if (/\bby$/.test(before) && words.length === 2) type = 'person';
    else if (/^\s*\((born\b|\d{3,4}\b)/.test(sentence.slice(m.index + m[0].length))) type = 'person';
    out.push({ name, type, description: sentence.trim() });
  }
  return out;
}

/** The passage text of an extraction request (its quoted `| ` lines). */
function passageOf(body) {
  const user = body?.messages?.find((m) => m.role === 'user')?.content ?? '';
  return [...user.matchAll(/^\| (.*)$/gm)].map((m) => m[1]).join('\n');
}

/** The graph a rule extractor reads in `text`. */
export function extract(text) {
  const entities = [];
  const relations = [];
  for (const sentence of text.split(/(?<=[.!?])\s+|\n+/)) {
    const found = entitiesOf(sentence);
    for (const e of found) if (!entities.some((x) => x.name === e.name)) entities.push(e);
    for (let i = 0; i < found.length; i++) {
      for (let j = i + 1; j < found.length; j++) relations.push({ source: found[i].name, target: found[j].name, description: sentence.trim() });
    }
  }
  return { entities, relations };
}

/** What the request asks: 'extract', 'glean', 'question', or null. */
export function kindOf(body, prompts) {
  const messages = body?.messages ?? [];
  const system = messages.find((m) => m.role === 'system')?.content;
  const last = messages.at(-1)?.content;
  if (system === prompts.graph_query) return 'question';
  if (system === prompts.graph_extract) return last === prompts.graph_glean ? 'glean' : 'extract';
  return null;
}

/** The question's entities and answer types. */
export function questionTerms(question) {
  const entities = entitiesOf(question).map((e) => e.name);
  const types = /^who\b/i.test(question) ? ['person'] : /^where\b/i.test(question) ? ['place'] : [];
  return { entities, types };
}

/**
 * A server plan answering graph prompts by these rules (`prompts`: the package's
 * defaults().prompts). `fault(request, kind, index)` may return a plan of its own first (a bad
 * reply, an error status, a hang) to test the degradation paths.
 */
export function graphPlan(prompts, fault) {
  return (request, index) => {
    const kind = kindOf(request.body, prompts);
    const injected = fault?.(request, kind, index);
    if (injected) return injected;
    if (kind === 'extract') return completion(JSON.stringify(extract(passageOf(request.body))));
    if (kind === 'glean') return completion('{"entities": [], "relations": []}');
    if (kind === 'question') {
      const user = request.body.messages.at(-1).content.replace(/^Question:\s*/, '');
      return completion(JSON.stringify(questionTerms(user)));
    }
    return undefined;
  };
}
