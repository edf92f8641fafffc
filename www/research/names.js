// How the research workspace shows a name it did not choose (a file's name, a document's title
// or headings, a collection's name, an error that quotes one). Unicode's bidirectional controls
// (every Bidi_Control character: U+202E RIGHT-TO-LEFT OVERRIDE and the other embeddings,
// overrides, isolates and marks) are shown as their code points, so `‮gnp.md` cannot pass for
// `dm.png`; and the name is isolated from the text around it (<bdi> in the page, FSI…PDI inside
// plain text), so a right-to-left name cannot reorder that text either. An isolate alone is not
// enough: an override inside the name still reverses the name itself.

const BIDI_CONTROL = /\p{Bidi_Control}/gu;

/** `text` with each bidirectional control shown as its code point (`⟨U+202E⟩`). */
export function visible(text) {
  return String(text ?? '').replace(BIDI_CONTROL, (c) => `⟨U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`);
}

/** A name inside plain text (a status line, a title attribute, an option): visible and isolated. */
export function nameText(name) {
  return `\u2068${visible(name)}\u2069`;
}

/** A name as an element of the page: <bdi> holding it with its controls visible. */
export function nameNode(name, className) {
  const node = document.createElement('bdi');
  if (className) node.className = className;
  node.textContent = visible(name);
  return node;
}
