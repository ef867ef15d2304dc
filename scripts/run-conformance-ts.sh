#!/usr/bin/env bash
# Runs the TypeScript conformance examples (../shared/conformance/typescript/*.mjs)
# against a live pandastackd through the built @pandastack/sdk, unchanged.
#
# How: it builds sdk/typescript (npm ci once, then tsc), copies the examples
# and their sibling data/ folder into a fresh temporary root, and links
# <root>/node_modules/@pandastack/sdk to sdk/typescript, so that
# `import ... from "@pandastack/sdk"` in <root>/typescript/*.mjs resolves to the
# built package by Node's ordinary node_modules lookup. Each example then runs
# as `node FILE` with its own fresh temporary folder as working directory.
#
# Usage: scripts/run-conformance-ts.sh [--start-daemon] [NAME.mjs ...]
#   --start-daemon  start build/pandastackd on a free loopback port with a
#                   temporary data dir (its admin key from <data-dir>/admin.key),
#                   and stop it (and every sandbox it made) at the end.
#                   Otherwise PANDASTACK_API_URL and PANDASTACK_API_KEY must be set.
#   NAME.mjs        run only these examples (default: all).
# Environment: PANDASTACK_CONFORMANCE (default: <repo>/../shared/conformance, else <repo>/tests/conformance),
#   PANDASTACK_CACHE (templates, for --start-daemon), CONFORMANCE_TIMEOUT
#   (seconds per example, default 900).
# Prints one line per example and "N passed, N failed"; exits 1 if any failed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
conf=${PANDASTACK_CONFORMANCE:-$repo/../shared/conformance}
# A clean clone has no shared folder next to it: use the repository's copy.
[ -d "$conf" ] || conf=$repo/tests/conformance
per_example=${CONFORMANCE_TIMEOUT:-900}
start_daemon=0
only=()
for a in "$@"; do
  case $a in
    --start-daemon) start_daemon=1 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) only+=("$a") ;;
  esac
done
[ -d "$conf/typescript" ] || { echo "run-conformance-ts: no $conf/typescript" >&2; exit 2; }

# 1. Build the SDK.
(
  cd "$repo/sdk/typescript"
  if [ ! -x node_modules/.bin/tsc ]; then npm ci --no-audit --no-fund --loglevel=error; fi
  npm run --silent build
)

# 2. The examples, their data, and the package resolvable by name.
root=$(mktemp -d "${TMPDIR:-/tmp}/pandastack-conformance-ts.XXXXXX")
daemon_pid=
cleanup() {
  if [ -n "$daemon_pid" ]; then
    # Sandboxes outlive the daemon (their QEMU runs in its own session): delete them first.
    ids=$(curl -fsS "$PANDASTACK_API_URL/v1/sandboxes?status=running" \
            -H "Authorization: Bearer $PANDASTACK_API_KEY" 2>/dev/null |
          python3 -c 'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin)["sandboxes"]))' \
          2>/dev/null || true)
    for id in $ids; do
      curl -fsS -o /dev/null -X DELETE "$PANDASTACK_API_URL/v1/sandboxes/$id" \
        -H "Authorization: Bearer $PANDASTACK_API_KEY" || true
    done
    kill "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  rm -rf "$root"
}
trap cleanup EXIT
cp -r "$conf/typescript" "$root/typescript"
[ -d "$conf/data" ] && cp -r "$conf/data" "$root/data"
mkdir -p "$root/node_modules/@pandastack"
ln -s "$repo/sdk/typescript" "$root/node_modules/@pandastack/sdk"

# 3. The daemon, when asked to start one.
if [ "$start_daemon" = 1 ]; then
  [ -x "$repo/build/pandastackd" ] || { echo "run-conformance-ts: build/pandastackd missing (make)" >&2; exit 2; }
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  mkdir -p "$root/daemon"
  "$repo/build/pandastackd" --listen "127.0.0.1:$port" --data-dir "$root/daemon" \
    >"$root/daemon.out" 2>"$root/daemon.log" </dev/null &
  daemon_pid=$!
  export PANDASTACK_API_URL="http://127.0.0.1:$port"
  for _ in $(seq 1 150); do
    if [ -s "$root/daemon/admin.key" ]; then
      export PANDASTACK_API_KEY=$(cat "$root/daemon/admin.key")
      curl -fsS -o /dev/null "$PANDASTACK_API_URL/healthz" -H "Authorization: Bearer $PANDASTACK_API_KEY" && break
    fi
    kill -0 "$daemon_pid" 2>/dev/null || { echo "run-conformance-ts: pandastackd exited:" >&2; tail -20 "$root/daemon.log" >&2; exit 2; }
    sleep 0.2
  done
  echo "run-conformance-ts: pandastackd on $PANDASTACK_API_URL (pid $daemon_pid)"
fi
: "${PANDASTACK_API_URL:?set PANDASTACK_API_URL (or pass --start-daemon)}"
: "${PANDASTACK_API_KEY:?set PANDASTACK_API_KEY (or pass --start-daemon)}"

# 4. Run each example in a fresh working directory.
passed=0 failed=0 failed_names=()
files=()
if [ ${#only[@]} -gt 0 ]; then files=("${only[@]}"); else
  for f in "$root"/typescript/*.mjs; do files+=("$(basename "$f")"); done
fi
for name in "${files[@]}"; do
  work=$(mktemp -d "$root/work.XXXXXX")
  t0=$(date +%s%N)
  if (cd "$work" && timeout "$per_example" node "$root/typescript/$name") >"$work.log" 2>&1; then
    rc=0; else rc=$?; fi
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if [ $rc = 0 ]; then
    passed=$((passed + 1)); echo "PASS $name (${ms} ms)"
  else
    failed=$((failed + 1)); failed_names+=("$name"); echo "FAIL $name (exit $rc, ${ms} ms)"
    sed 's/^/    | /' "$work.log" | tail -25
  fi
done
echo "typescript: $passed passed, $failed failed"
[ "$failed" = 0 ]
