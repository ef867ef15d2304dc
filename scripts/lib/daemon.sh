# shellcheck shell=bash
# scripts/lib/daemon.sh - start a pandastackd from a script, wait until it
# serves, and stop it with every sandbox it made.  Bash; source it:
#
#   . "$repo/scripts/lib/daemon.sh"
#   daemon_start 127.0.0.1:0 "$root/daemon" "$root/daemon.log"   # exports the API URL and key
#   trap daemon_stop EXIT
#
# The daemon is $PANDASTACKD, default build/pandastackd of this repository; it
# reads PANDASTACK_CACHE, PANDASTACK_ACCEL, ... from the environment as usual.
# State, set by daemon_start and read by daemon_stop: DAEMON_PID, DAEMON_DATA_DIR.

daemon_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DAEMON_PID=
DAEMON_DATA_DIR=

# daemon_start [--detach] LISTEN DATA_DIR LOG [ARG ...]
#   Starts $PANDASTACKD --listen LISTEN --data-dir DATA_DIR ARG... in the
#   background, its stdout and stderr appended to LOG, and waits (at most
#   DAEMON_START_TIMEOUT seconds, default 60) until it logs event=http.listening:
#   by then it has written DATA_DIR/admin.key.  LISTEN may be HOST:0 (a free
#   port, read back from that line).  --detach starts it in its own session,
#   to outlive the script.  Then exports PANDASTACK_API_URL and
#   PANDASTACK_API_KEY (the admin key) and sets DAEMON_PID and DAEMON_DATA_DIR.
#   Returns 0, or 1 with the end of LOG on stderr if the daemon exited or did
#   not listen in time.
daemon_start() {
  local detach=0
  if [ "${1:-}" = --detach ]; then detach=1; shift; fi
  local listen=$1 data_dir=$2 log=$3
  shift 3
  local bin=${PANDASTACKD:-$daemon_repo/build/pandastackd}
  [ -x "$bin" ] || { echo "daemon: $bin is missing (make)" >&2; return 1; }
  mkdir -p "$data_dir"
  touch "$log"
  local offset
  offset=$(stat -c %s "$log")
  if [ "$detach" = 1 ]; then
    setsid "$bin" --listen "$listen" --data-dir "$data_dir" "$@" >>"$log" 2>&1 </dev/null &
  else
    "$bin" --listen "$listen" --data-dir "$data_dir" "$@" >>"$log" 2>&1 </dev/null &
  fi
  DAEMON_PID=$!
  DAEMON_DATA_DIR=$data_dir
  local host='' port='' deadline=$((SECONDS + ${DAEMON_START_TIMEOUT:-60}))
  while [ $SECONDS -lt $deadline ]; do
    read -r host port < <(tail -c +$((offset + 1)) "$log" |
      sed -n 's/.*event=http\.listening host=\([^ ]*\) port=\([0-9]*\).*/\1 \2/p' | head -1) || true
    [ -n "$port" ] && [ -s "$data_dir/admin.key" ] && break
    port=
    if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
      echo "daemon: pandastackd exited:" >&2
      tail -c +$((offset + 1)) "$log" | tail -20 >&2
      DAEMON_PID=
      return 1
    fi
    sleep 0.1
  done
  if [ -z "$port" ]; then
    echo "daemon: pandastackd did not listen within ${DAEMON_START_TIMEOUT:-60} s" >&2
    return 1
  fi
  case $host in 0.0.0.0 | '') host=127.0.0.1 ;; :: | '[::]') host='[::1]' ;; esac
  export PANDASTACK_API_URL="http://$host:$port"
  PANDASTACK_API_KEY=$(cat "$data_dir/admin.key")
  export PANDASTACK_API_KEY
}

# daemon_stop
#   Deletes every sandbox of the admin key's team through the API (sandboxes
#   outlive their daemon by design), stops the daemon daemon_start started
#   (SIGTERM, SIGKILL after 30 s) and SIGKILLs any QEMU still running from its
#   data dir.  Does nothing when no daemon was started; always returns 0, so it
#   can be an EXIT trap.
daemon_stop() {
  [ -n "$DAEMON_PID" ] || return 0
  local id ids
  ids=$(curl -fsS --max-time 30 "$PANDASTACK_API_URL/v1/sandboxes" \
          -H "Authorization: Bearer $PANDASTACK_API_KEY" 2>/dev/null |
        python3 -c 'import json, sys; print(" ".join(s["id"] for s in json.load(sys.stdin)["sandboxes"]))' \
          2>/dev/null) || ids=
  for id in $ids; do
    curl -fsS --max-time 60 -o /dev/null -X DELETE "$PANDASTACK_API_URL/v1/sandboxes/$id" \
      -H "Authorization: Bearer $PANDASTACK_API_KEY" 2>/dev/null || true
  done
  kill "$DAEMON_PID" 2>/dev/null || true
  local _
  for _ in $(seq 1 300); do
    kill -0 "$DAEMON_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$DAEMON_PID" 2>/dev/null || true
  wait "$DAEMON_PID" 2>/dev/null || true
  daemon_reap_vms "$DAEMON_DATA_DIR"
  DAEMON_PID=
  return 0
}

# daemon_reap_vms DATA_DIR
#   SIGKILLs every process named in a qemu.pid file under DATA_DIR whose
#   command line mentions DATA_DIR (so never a recycled pid of another program).
daemon_reap_vms() {
  local dir=$1 f pid
  [ -d "$dir" ] || return 0
  while IFS= read -r f; do
    pid=$(cat "$f" 2>/dev/null) || continue
    case $pid in '' | *[!0-9]*) continue ;; esac
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$dir"; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done < <(find "$dir" -name qemu.pid 2>/dev/null)
}
