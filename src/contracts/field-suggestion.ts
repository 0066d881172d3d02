/**
 * The known field an unknown meta.json field most likely meant, for the wrapper's warning
 * (`did you mean "timeoutMs"?`). A suggestion is only worth giving when it names the same
 * thing: `model` is not a misspelt `mode`, so a name that means something else is answered from
 * a table of the names writers use for each field, or not at all.
 */

/** Other names writers give a field, by the known field they mean (compared as normalized below). */
const SYNONYMS: Readonly<Record<string, readonly string[]>> = {
  resolvedModel: ["model", "models", "modelid", "modelname", "llm"],
  task: ["prompt", "instructions", "input", "query", "question"],
  cwd: ["dir", "directory", "workdir", "workingdir", "workingdirectory", "pwd", "cwdpath"],
  runId: ["id"],
  thinking: ["reasoning", "thinkinglevel", "reasoningeffort", "effort"],
  timeoutMs: ["timelimit", "timeoutseconds", "timeoutsecs"],
  agent: ["role", "rolename", "agentname", "subagent"],
  env: ["environment", "envvars", "environmentvariables"],
  systemPromptPath: ["systemprompt", "appendsystemprompt", "systempromptfile"],
  resultPath: ["resultfile"],
  eventsPath: ["eventsfile", "eventlog"],
  sessionPath: ["sessionfile"],
  tools: ["allowedtools", "toolnames"],
  extensions: ["extensionpaths", "plugins"],
};

/** Case and word separators do not change a name: `timeout_ms`, `TimeoutMS` and `timeoutMs` are one. */
function normalize(name: string): string {
  return name.toLowerCase().replace(/[-_\s.]/g, "");
}

/** Edit distance (insertions, deletions, substitutions) between two short strings. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * Whether `name` reads as a misspelling of `known` rather than as another word: a longer name
 * built on the known one (`model` on `mode`, `taskId` on `task`) names something else, unless
 * all it adds is a plural `s`; a short name with another first letter (`code`, `node` for
 * `mode`) is another word too.
 */
function couldBeTypo(name: string, known: string): boolean {
  if (name.length > known.length && name.startsWith(known)) return name === `${known}s`;
  if (known.length < 5 && name[0] !== known[0]) return false;
  return true;
}

/**
 * The known field `field` most likely meant, among `known`: the same name in another case or
 * with separators (`timeoutMS`, `timeout_ms`), one of the names writers use for it (`prompt` →
 * `task`, `model` → `resolvedModel`), a known name it begins (`stdout` → `stdoutPath`), or one
 * within two edits (one for names under five letters) that is not another word. None when
 * nothing is that close.
 */
export function nearestField(field: string, known: readonly string[]): string | undefined {
  const name = normalize(field);
  const sameName = known.find((key) => normalize(key) === name);
  if (sameName) return sameName;
  const synonym = known.find((key) => SYNONYMS[key]?.includes(name));
  if (synonym) return synonym;
  if (name.length >= 4) {
    const begun = known.find((key) => normalize(key).startsWith(name));
    if (begun) return begun;
  }
  const limit = name.length >= 5 ? 2 : 1;
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const key of known) {
    const target = normalize(key);
    const distance = editDistance(name, target);
    if (distance < bestDistance && couldBeTypo(name, target)) {
      best = key;
      bestDistance = distance;
    }
  }
  return best;
}
