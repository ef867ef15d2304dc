#!/usr/bin/env bash
# Runs every example of the product documents unchanged against a live
# pandastackd: the curl calls (http/*.sh), the CLI (cli/*.sh), the Python SDK
# (python/*.py) and the TypeScript SDK (typescript/*.mjs), each in a fresh
# temporary working directory.
#
# Usage: scripts/conformance.sh [--start-daemon] [KIND ...]   (KIND: http cli python typescript)
#   --start-daemon  start build/pandastackd on a free loopback port with a
#                   temporary data dir and stop it (and its sandboxes) at the end;
#                   otherwise PANDASTACK_API_URL and PANDASTACK_API_KEY must be set.
# The examples come from PANDASTACK_CONFORMANCE, else the shared conformance
# folder next to the repository, else the repository's copy (tests/conformance).
# Exits 1 if any example failed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
start_daemon=0
kinds=()
for a in "$@"; do
  case $a in
    --start-daemon) start_daemon=1 ;;
    http|cli|python|typescript) kinds+=("$a") ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "conformance: unknown argument $a" >&2; exit 2 ;;
  esac
done
((${#kinds[@]})) || kinds=(http cli python typescript)
if [ -z "${PANDASTACK_CONFORMANCE:-}" ]; then
  if [ -d "$repo/../shared/conformance" ]; then
    PANDASTACK_CONFORMANCE=$(cd "$repo/../shared/conformance" && pwd)
  else
    PANDASTACK_CONFORMANCE=$repo/tests/conformance
  fi
fi
export PANDASTACK_CONFORMANCE
echo "conformance: examples from $PANDASTACK_CONFORMANCE"

root=$(mktemp -d "${TMPDIR:-/tmp}/pandastack-conformance.XXXXXX")
daemon_pid=
cleanup() {
  if [ -n "$daemon_pid" ]; then
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

if [ "$start_daemon" = 1 ]; then
  [ -x "$repo/build/pandastackd" ] || { echo "conformance: build/pandastackd missing (make)" >&2; exit 2; }
  mkdir -p "$root/daemon"
  "$repo/build/pandastackd" --listen 127.0.0.1:0 --data-dir "$root/daemon" \
    >"$root/daemon.out" 2>"$root/daemon.log" </dev/null &
  daemon_pid=$!
  port=
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.*event=http\.listening host=[^ ]* port=\([0-9]*\).*/\1/p' "$root/daemon.log" | head -1)
    [ -n "$port" ] && [ -s "$root/daemon/admin.key" ] && break
    kill -0 "$daemon_pid" 2>/dev/null || { echo "conformance: pandastackd exited:" >&2; tail -20 "$root/daemon.log" >&2; exit 2; }
    sleep 0.2
  done
  [ -n "$port" ] || { echo "conformance: pandastackd did not listen" >&2; exit 2; }
  export PANDASTACK_API_URL="http://127.0.0.1:$port"
  PANDASTACK_API_KEY=$(cat "$root/daemon/admin.key")
  export PANDASTACK_API_KEY
  echo "conformance: pandastackd on $PANDASTACK_API_URL"
fi
: "${PANDASTACK_API_URL:?set PANDASTACK_API_URL (or pass --start-daemon)}"
: "${PANDASTACK_API_KEY:?set PANDASTACK_API_KEY (or pass --start-daemon)}"

failed=0
run_shell_kind() {
  local kind=$1 f work rc
  for f in "$PANDASTACK_CONFORMANCE/$kind"/*.sh; do
    work=$(mktemp -d "$root/work.XXXXXX")
    if (cd "$work" && PATH="$repo/build:$PATH" timeout 900 bash "$f") >"$work.log" 2>&1; then
      echo "PASS $kind/$(basename "$f")"
    else
      rc=$?
      echo "FAIL $kind/$(basename "$f") (exit $rc)"
      sed 's/^/    | /' "$work.log" | tail -25
      failed=1
    fi
  done
}
for kind in "${kinds[@]}"; do
  case $kind in
    http|cli) run_shell_kind "$kind" ;;
    python) "$repo/scripts/run-conformance-python.sh" || failed=1 ;;
    typescript) "$repo/scripts/run-conformance-ts.sh" || failed=1 ;;
  esac
done
[ "$failed" = 0 ] && echo "conformance: all passed" || echo "conformance: FAILURES"
exit "$failed"
