#!/usr/bin/env bash
# Checks the manifests of this folder (make check-k8s):
#  1. every object against the Kubernetes API's schemas: the JSON Schemas the
#     kubernetes-models package generates from Kubernetes' OpenAPI document,
#     checked with ajv (tools/k8s-check/validate.mjs; types, required fields
#     and formats; like a server without strict field validation, it does not
#     refuse unknown fields);
#  2. `kubectl apply --dry-run=client` on them, when kubectl is installed.
#     kubectl resolves kinds through an API server's discovery even for a
#     client-side dry run, so a stand-in (tools/k8s-check/stub_apiserver.py)
#     answers discovery on loopback; kubectl's own schema download is off
#     (--validate=false): step 1 does that check.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tools="$here/../../tools/k8s-check"
manifests=("$here"/*.yaml)
(cd "$tools" && { [ -d node_modules/kubernetes-models ] || npm ci --no-audit --no-fund --loglevel=error; })
node "$tools/validate.mjs" "${manifests[@]}"
if ! command -v kubectl >/dev/null; then
  echo "check.sh: kubectl is not installed: skipped kubectl apply --dry-run=client"
  exit 0
fi
work="$(mktemp -d)"
stub=""
cleanup() { [ -n "$stub" ] && kill "$stub" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
python3 "$tools/stub_apiserver.py" > "$work/port" &
stub=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port="$(head -1 "$work/port")"
cat > "$work/kubeconfig" <<CFG
apiVersion: v1
kind: Config
clusters: [{name: stub, cluster: {server: "http://127.0.0.1:$port"}}]
users: [{name: check, user: {}}]
contexts: [{name: check, context: {cluster: stub, user: check}}]
current-context: check
CFG
# positive control: a manifest kubectl cannot accept must fail
printf 'apiVersion: apps/v1\nkind: NoSuchKind\nmetadata: {name: x}\n' > "$work/bad.yaml"
if KUBECONFIG="$work/kubeconfig" HOME="$work" kubectl apply --dry-run=client --validate=false \
     -f "$work/bad.yaml" >/dev/null 2>&1; then
  echo "check.sh: kubectl accepted an unknown kind: the check sees nothing" >&2
  exit 1
fi
KUBECONFIG="$work/kubeconfig" HOME="$work" kubectl apply --dry-run=client --validate=false \
  "${manifests[@]/#/-f}"
