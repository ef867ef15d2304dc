#!/usr/bin/env bash
# Runs the Python conformance examples (../shared/conformance/python/*.py)
# against a live pandastackd through the `pandastack` SDK, unchanged.
#
# How: it copies the examples and their sibling data/ folder into a fresh
# temporary root and runs each one as `/usr/bin/python3 FILE` with its own fresh
# temporary folder as working directory. The SDK is importable either from the
# source tree (default: PYTHONPATH=sdk/python/src) or, with --pip, from a
# temporary venv (Debian's python3, --system-site-packages) into which a copy of
# sdk/python was installed with `pip install --no-build-isolation` (offline:
# setuptools comes from Debian).
#
# Usage: scripts/run-conformance-python.sh [--start-daemon] [--pip] [NAME.py ...]
#   --start-daemon  start build/pandastackd on a free loopback port with a
#                   temporary data dir (its admin key from <data-dir>/admin.key),
#                   and stop it (and every sandbox it made) at the end.
#                   Otherwise PANDASTACK_API_URL and PANDASTACK_API_KEY must be set.
#   --pip           install the package with pip instead of using PYTHONPATH.
#   NAME.py         run only these examples (default: all).
# Environment: PANDASTACK_CONFORMANCE (default: <repo>/../shared/conformance, else <repo>/tests/conformance),
#   PANDASTACK_CACHE (templates, for --start-daemon), CONFORMANCE_TIMEOUT
#   (seconds per example, default 900), PYTHON (default /usr/bin/python3).
# Prints one line per example and "python: N passed, N failed"; exits 1 if any failed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
conf=${PANDASTACK_CONFORMANCE:-$repo/../shared/conformance}
# A clean clone has no shared folder next to it: use the repository's copy.
[ -d "$conf" ] || conf=$repo/tests/conformance
per_example=${CONFORMANCE_TIMEOUT:-900}
python=${PYTHON:-/usr/bin/python3}
start_daemon=0
use_pip=0
only=()
for a in "$@"; do
  case $a in
    --start-daemon) start_daemon=1 ;;
    --pip) use_pip=1 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) only+=("$a") ;;
  esac
done
[ -d "$conf/python" ] || { echo "run-conformance-python: no $conf/python" >&2; exit 2; }

root=$(mktemp -d "${TMPDIR:-/tmp}/pandastack-conformance-py.XXXXXX")
daemon_pid=
cleanup() {
  if [ -n "$daemon_pid" ]; then
    # Sandboxes outlive the daemon (their QEMU runs in its own session): delete them first.
    PYTHONPATH="$repo/sdk/python/src" "$python" - <<'PY' || true
from pandastack import Sandbox
for s in Sandbox.list(status="running"):
    Sandbox.connect(s.id).kill()
PY
    kill "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  rm -rf "$root"
}
trap cleanup EXIT

# 1. The examples and their data.
cp -r "$conf/python" "$root/python"
[ -d "$conf/data" ] && cp -r "$conf/data" "$root/data"

# 2. The SDK, importable.
if [ "$use_pip" = 1 ]; then
  cp -r "$repo/sdk/python" "$root/sdk-src"
  rm -rf "$root/sdk-src/build" "$root/sdk-src/src/"*.egg-info
  "$python" -m venv --system-site-packages "$root/venv"
  "$root/venv/bin/python" -m pip install --quiet --no-build-isolation --no-deps "$root/sdk-src"
  python="$root/venv/bin/python"
  unset PYTHONPATH
  echo "run-conformance-python: pandastack installed with pip into $root/venv"
else
  export PYTHONPATH="$repo/sdk/python/src${PYTHONPATH:+:$PYTHONPATH}"
fi
"$python" -c 'import pandastack, sys; print("run-conformance-python: pandastack", pandastack.__version__, "from", pandastack.__file__, "on python", sys.version.split()[0])'

# 3. The daemon, when asked to start one.
if [ "$start_daemon" = 1 ]; then
  [ -x "$repo/build/pandastackd" ] || { echo "run-conformance-python: build/pandastackd missing (make)" >&2; exit 2; }
  mkdir -p "$root/daemon"
  "$repo/build/pandastackd" --listen 127.0.0.1:0 --data-dir "$root/daemon" \
    >"$root/daemon.out" 2>"$root/daemon.log" </dev/null &
  daemon_pid=$!
  port=
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.*event=http\.listening host=[^ ]* port=\([0-9]*\).*/\1/p' "$root/daemon.log" | head -1)
    [ -n "$port" ] && [ -s "$root/daemon/admin.key" ] && break
    kill -0 "$daemon_pid" 2>/dev/null || { echo "run-conformance-python: pandastackd exited:" >&2; tail -20 "$root/daemon.log" >&2; exit 2; }
    sleep 0.2
  done
  [ -n "$port" ] || { echo "run-conformance-python: pandastackd did not listen" >&2; exit 2; }
  export PANDASTACK_API_URL="http://127.0.0.1:$port"
  export PANDASTACK_API_KEY=$(cat "$root/daemon/admin.key")
  echo "run-conformance-python: pandastackd on $PANDASTACK_API_URL (pid $daemon_pid)"
fi
: "${PANDASTACK_API_URL:?set PANDASTACK_API_URL (or pass --start-daemon)}"
: "${PANDASTACK_API_KEY:?set PANDASTACK_API_KEY (or pass --start-daemon)}"

# 4. Run each example in a fresh working directory.
passed=0 failed=0
files=()
if [ ${#only[@]} -gt 0 ]; then files=("${only[@]}"); else
  for f in "$root"/python/*.py; do files+=("$(basename "$f")"); done
fi
for name in "${files[@]}"; do
  work=$(mktemp -d "$root/work.XXXXXX")
  t0=$(date +%s%N)
  if (cd "$work" && timeout "$per_example" "$python" "$root/python/$name") >"$work.log" 2>&1; then
    rc=0; else rc=$?; fi
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if [ $rc = 0 ]; then
    passed=$((passed + 1)); echo "PASS $name (${ms} ms)"
  else
    failed=$((failed + 1)); echo "FAIL $name (exit $rc, ${ms} ms)"
    sed 's/^/    | /' "$work.log" | tail -25
  fi
done
echo "python: $passed passed, $failed failed"
[ "$failed" = 0 ]
