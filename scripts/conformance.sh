#!/usr/bin/env bash
# Runs every example of the product documents unchanged against a live
# pandastackd: the curl calls (http/*.sh), the CLI (cli/*.sh), the Python SDK
# (python/*.py) and the TypeScript SDK (typescript/*.mjs), each in a fresh
# temporary working directory.  CI runs it once (scripts/test.sh); nothing else
# runs these examples.
#
# Usage: scripts/conformance.sh [--start-daemon] [KIND ...]   (KIND: http cli python typescript)
#   --start-daemon  start build/pandastackd on a free loopback port with a
#                   temporary data dir and stop it (and its sandboxes) at the end;
#                   otherwise PANDASTACK_API_URL and PANDASTACK_API_KEY must be set.
# The examples come from PANDASTACK_CONFORMANCE, else the shared conformance
# folder next to the repository, else the repository's copy (tests/conformance).
# CONFORMANCE_TIMEOUT: seconds per example (default 900).
# Exits 1 if any example failed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/scripts/lib/daemon.sh"
. "$repo/scripts/lib/conformance.sh"
start_daemon=0
kinds=()
for a in "$@"; do
  case $a in
    --start-daemon) start_daemon=1 ;;
    http|cli|python|typescript) kinds+=("$a") ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "conformance: unknown argument $a" >&2; exit 2 ;;
  esac
done
((${#kinds[@]})) || kinds=(http cli python typescript)
PANDASTACK_CONFORMANCE=$(conformance_dir)
export PANDASTACK_CONFORMANCE
echo "conformance: examples from $PANDASTACK_CONFORMANCE"

root=$(mktemp -d "${TMPDIR:-/tmp}/pandastack-conformance.XXXXXX")
trap 'daemon_stop; rm -rf "$root"' EXIT
if [ "$start_daemon" = 1 ]; then
  daemon_start 127.0.0.1:0 "$root/daemon" "$root/daemon.log" || exit 2
  echo "conformance: pandastackd on $PANDASTACK_API_URL"
fi
: "${PANDASTACK_API_URL:?set PANDASTACK_API_URL (or pass --start-daemon)}"
: "${PANDASTACK_API_KEY:?set PANDASTACK_API_KEY (or pass --start-daemon)}"

failed=0
for kind in "${kinds[@]}"; do
  case $kind in
    http|cli) conformance_run "$root" "$kind" "$PANDASTACK_CONFORMANCE/$kind" '*.sh' \
                env PATH="$repo/build:$PATH" bash || failed=1 ;;
    python) "$repo/scripts/run-conformance-python.sh" || failed=1 ;;
    typescript) "$repo/scripts/run-conformance-ts.sh" || failed=1 ;;
  esac
done
[ "$failed" = 0 ] && echo "conformance: all passed" || echo "conformance: FAILURES"
exit "$failed"
