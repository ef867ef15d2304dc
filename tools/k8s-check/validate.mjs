// Validates Kubernetes manifests against the Kubernetes API's schemas, as
// generated from its OpenAPI document by the kubernetes-models package (JSON
// Schema, checked with ajv).  Usage: node validate.mjs FILE.yaml...
// Exit 0 when every object of every file is valid, 1 otherwise (each error
// printed).  Before the files, it checks that a broken object is refused
// (its probe can see a failure).
import { readFileSync } from "node:fs";
import yaml from "js-yaml";

async function model(apiVersion, kind) {
  const path = apiVersion.includes("/") ? apiVersion : `v1/${apiVersion}`.replace(/^v1\/v1$/, "v1");
  const mod = await import(`kubernetes-models/${apiVersion === "v1" ? "v1" : path}`);
  if (!mod[kind]) throw new Error(`no schema for ${apiVersion} ${kind}`);
  return mod[kind];
}

async function problems(obj) {
  if (!obj || typeof obj !== "object") return ["not an object"];
  if (typeof obj.apiVersion !== "string" || typeof obj.kind !== "string")
    return ["apiVersion and kind are required"];
  const Model = await model(obj.apiVersion, obj.kind);
  try {
    new Model(obj).validate();
    return [];
  } catch (e) {
    return [String(e.message || e)];
  }
}

const broken = {
  apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "x" },
  spec: { selector: { matchLabels: { a: "b" } },
          template: { spec: { containers: [{ image: "x", ports: [{ containerPort: "80" }] }] } } },
};
if ((await problems(broken)).length === 0) {
  console.error("validate.mjs: a broken DaemonSet passed: the checks see nothing");
  process.exit(2);
}

let bad = 0, count = 0;
for (const file of process.argv.slice(2)) {
  for (const obj of yaml.loadAll(readFileSync(file, "utf8"))) {
    if (obj === null) continue;
    count++;
    for (const p of await problems(obj)) {
      console.error(`${file}: ${obj.kind}/${obj.metadata?.name}: ${p}`);
      bad++;
    }
  }
}
console.log(`validate.mjs: ${count} objects, ${bad} problems`);
process.exit(bad ? 1 : 0);
