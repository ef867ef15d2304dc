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
. "$repo/scripts/lib/daemon.sh"
. "$repo/scripts/lib/conformance.sh"
conf=$(conformance_dir)
python=${PYTHON:-/usr/bin/python3}
start_daemon=0
use_pip=0
for a in "$@"; do
  case $a in
    --start-daemon) start_daemon=1 ;;
    --pip) use_pip=1 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) CONFORMANCE_ONLY+=("$a") ;;
  esac
done
[ -d "$conf/python" ] || { echo "run-conformance-python: no $conf/python" >&2; exit 2; }

root=$(mktemp -d "${TMPDIR:-/tmp}/pandastack-conformance-py.XXXXXX")
trap 'daemon_stop; rm -rf "$root"' EXIT

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
  daemon_start 127.0.0.1:0 "$root/daemon" "$root/daemon.log" || exit 2
  echo "run-conformance-python: pandastackd on $PANDASTACK_API_URL (pid $DAEMON_PID)"
fi
: "${PANDASTACK_API_URL:?set PANDASTACK_API_URL (or pass --start-daemon)}"
: "${PANDASTACK_API_KEY:?set PANDASTACK_API_KEY (or pass --start-daemon)}"

# 4. Run each example in a fresh working directory.
conformance_run "$root" python "$root/python" '*.py' "$python"
