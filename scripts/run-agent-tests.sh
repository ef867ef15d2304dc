#!/usr/bin/env bash
# Runs the agent-facing Node suites against one live pandastackd: the MCP
# server tested with the official MCP SDK's client (tests/mcp) and each
# framework recipe under examples/ with its framework's mock model.  Each
# folder's dependencies come from its lockfile (npm ci, once); the recipes use
# the TypeScript SDK built from sdk/typescript.
#
# Usage: scripts/run-agent-tests.sh [--start-daemon] [FOLDER ...]
#   --start-daemon  start build/pandastackd on a free loopback port with a
#                   temporary data dir, and stop it (and every sandbox it
#                   made) at the end; otherwise PANDASTACK_API_URL and
#                   PANDASTACK_API_KEY must be set.
#   FOLDER          run only these folders (default: tests/mcp and every
#                   examples/*/package.json folder).
# Environment: PANDASTACK_CACHE (templates, for --start-daemon), PANDASTACK_CLI
#   (default build/pandastack).
# Prints each suite's results and "agents: N passed, N failed"; exits 1 if any
# suite failed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/scripts/lib/daemon.sh"
start_daemon=0
folders=()
for a in "$@"; do
  case $a in
    --start-daemon) start_daemon=1 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) folders+=("$(cd "$a" && pwd)") ;;
  esac
done
if [ ${#folders[@]} = 0 ]; then
  folders=("$repo/tests/mcp")
  for p in "$repo"/examples/*/package.json; do
    [ -e "$p" ] && folders+=("$(dirname "$p")")
  done
fi

# 1. Dependencies, and the SDK the recipes import.
if ls "$repo"/examples/*/package.json >/dev/null 2>&1; then
  (
    cd "$repo/sdk/typescript"
    if [ ! -x node_modules/.bin/tsc ]; then npm ci --no-audit --no-fund --loglevel=error; fi
    npm run --silent build
  )
fi
for f in "${folders[@]}"; do
  if [ ! -f "$f/node_modules/.package-lock.json" ] ||
     [ "$f/package-lock.json" -nt "$f/node_modules/.package-lock.json" ]; then
    (cd "$f" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done

# 2. One daemon for every suite.
root=$(mktemp -d "${TMPDIR:-/tmp}/pandastack-agents.XXXXXX")
trap 'daemon_stop; rm -rf "$root"' EXIT
if [ "$start_daemon" = 1 ]; then
  daemon_start 127.0.0.1:0 "$root/daemon" "$root/daemon.log" || exit 2
  echo "run-agent-tests: pandastackd on $PANDASTACK_API_URL (pid $DAEMON_PID)"
fi
: "${PANDASTACK_API_URL:?set PANDASTACK_API_URL (or pass --start-daemon)}"
: "${PANDASTACK_API_KEY:?set PANDASTACK_API_KEY (or pass --start-daemon)}"
export PANDASTACK_CLI=${PANDASTACK_CLI:-$repo/build/pandastack}

# 3. Each suite.
passed=0 failed=0
for f in "${folders[@]}"; do
  echo "== ${f#"$repo"/}"
  if (cd "$f" && npm test --silent); then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "run-agent-tests: ${f#"$repo"/} failed" >&2
    [ "$start_daemon" = 1 ] && tail -30 "$root/daemon.log" >&2
  fi
done
echo "agents: $passed passed, $failed failed"
[ "$failed" = 0 ]
