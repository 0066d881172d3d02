/**
 * Finds references to documents a reader of this repository does not have: a specification
 * kept outside it and its section numbers, fault ids, notes kept outside the checkout, issue
 * numbers. Such a reference sends the reader nowhere; the text must say the rule and its reason
 * where it is used instead. Pure (text in, hits out) so a test can feed it any text; the lint
 * step (scripts/check-citations.mjs) runs it over the repository's files.
 *
 * A bare number like 5.5 is too common in prose (versions, durations, ratios) to flag alone: it
 * counts as a section number only in the forms a citation takes — `(N.M)`, `(N.M:`, `(…, N.M)`,
 * `N.M's`, `in N.M,` — and never as part of a longer dotted number (a version, an IP address)
 * or followed by a unit (a duration).
 */

/** A section number: one digit, a dot, one or two digits, not inside a longer number or word. */
const SECTION = String.raw`(?<![\w.$-])[1-9]\.\d{1,2}(?!\d|\.\d)`;

/** What may close a cited section number in running text. */
const SECTION_END = String.raw`(?=\s*(?:[),;:]|$)|\.(?!\d)|['’]s\b)`;

/** Each kind of reference, with the words the report uses for it. */
const PATTERNS = [
  { what: "a specification's name", re: /\bSPEC\b/ },
  { what: "a section sign", re: /\u00a7/ },
  { what: "a specification reference", re: /\b(?:the|per the|this|product) spec(?:ification)?\b(?![.(]\w|\s+of\b)/i },
  { what: "a section number", re: new RegExp(String.raw`(?<![\w$\])])\(\s*${SECTION}\s*[):,;]`) },
  { what: "a section number", re: new RegExp(String.raw`,\s+${SECTION}\s*\)`) },
  { what: "a section number", re: new RegExp(String.raw`${SECTION}['’]s\b`) },
  // The end of a citation that a line break split off: `(one owner,` then `N.M):` on the next line.
  { what: "a section number", re: new RegExp(String.raw`^\s*(?:\*|//|#)?\s*${SECTION}\s*\)`) },
  { what: "a section number", re: new RegExp(String.raw`\b(?:in|of|see|per|under)\s+${SECTION}${SECTION_END}`, "i") },
  { what: "a section number", re: new RegExp(String.raw`\bsections?\s+${SECTION}`, "i") },
  { what: "a fault id", re: /\bF-\d{1,3}\b/ },
  { what: "a note outside the repository", re: /(?<![\w.-])seeds\/|(?:\.\.\/|\/work\/)shared\/|\bshared\/[A-Z]/ },
  { what: "a note outside the repository", re: /\b(?:PI|RUNNERS)-NOTES\b|\bARCHITECTURE\.md\b/ },
  { what: "an issue number", re: /\bissues?\s+#?\d+\b/i },
];

/**
 * The lines of `text` that cite something outside the repository.
 * @param {string} text
 * @returns {{ line: number, text: string, what: string }[]} line numbers count from 1
 */
export function findCitations(text) {
  const hits = [];
  const lines = text.split(/\r?\n/);
  for (const [index, line] of lines.entries()) {
    const pattern = PATTERNS.find(({ re }) => re.test(line));
    if (pattern) hits.push({ line: index + 1, text: line.trim(), what: pattern.what });
  }
  return hits;
}
