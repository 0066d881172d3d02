// A restore of agents left running whose wrapper.pid holds a live pid that is not their wrapper.
import fs from "node:fs";
import path from "node:path";
import { agentRecord, dist, TREE_LIMITS } from "./extension-support.mjs";
import { scratch } from "./support.mjs";

export async function restoreTiming(agents) {
  const { TreeDir } = await dist("tree/tree-dir.js");
  const { TreeRuntime } = await dist("turns/runtime.js");
  const { restore } = await dist("turns/restore.js");
  const root = fs.mkdtempSync(path.join(scratch, "restore-"));
  const tree = new TreeDir(root);
  await tree.init("session");
  for (let i = 1; i <= agents; i++) {
    const record = agentRecord(`agent${i}`, i, { status: "running", runs: ["0001-spawn"], inbox: [] });
    const runDir = path.join(tree.agentDir(record.path), "runs", "0001-spawn");
    fs.mkdirSync(runDir, { recursive: true });
    // A file of the older kind, the bare pid: it proves nothing, so it counts as no wrapper.
    fs.writeFileSync(path.join(runDir, "wrapper.pid"), `${process.pid}\n`);
    await tree.writeRecord(record);
  }
  const rt = new TreeRuntime({ self: "/root", isRoot: true, treeDir: root }, tree, TREE_LIMITS, scratch, {
    hooks: { problem: () => undefined },
  });
  const started = Date.now();
  await restore(rt, []);
  const ms = Date.now() - started;
  const interrupted = [...rt.children.values()].filter(({ record }) => record.status === "interrupted").length;
  return { agents, ms, interrupted };
}
