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
# Prints one line per example and "typescript: N passed, N failed"; exits 1 if any failed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/scripts/lib/daemon.sh"
. "$repo/scripts/lib/conformance.sh"
conf=$(conformance_dir)
start_daemon=0
for a in "$@"; do
  case $a in
    --start-daemon) start_daemon=1 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) CONFORMANCE_ONLY+=("$a") ;;
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
trap 'daemon_stop; rm -rf "$root"' EXIT
cp -r "$conf/typescript" "$root/typescript"
[ -d "$conf/data" ] && cp -r "$conf/data" "$root/data"
mkdir -p "$root/node_modules/@pandastack"
ln -s "$repo/sdk/typescript" "$root/node_modules/@pandastack/sdk"

# 3. The daemon, when asked to start one.
if [ "$start_daemon" = 1 ]; then
  daemon_start 127.0.0.1:0 "$root/daemon" "$root/daemon.log" || exit 2
  echo "run-conformance-ts: pandastackd on $PANDASTACK_API_URL (pid $DAEMON_PID)"
fi
: "${PANDASTACK_API_URL:?set PANDASTACK_API_URL (or pass --start-daemon)}"
: "${PANDASTACK_API_KEY:?set PANDASTACK_API_KEY (or pass --start-daemon)}"

# 4. Run each example in a fresh working directory.
conformance_run "$root" typescript "$root/typescript" '*.mjs' node
