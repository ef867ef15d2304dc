#!/usr/bin/env bash
# The main job on a fresh Debian 12 host: install what PandaStack needs, build
# it, build the guest images and bake the templates (cached in
# /var/cache/pandastack, so the second run takes seconds), start pandastackd,
# create a sandbox from the code-interpreter template, run Python in it and
# print the result.  The daemon keeps running afterwards.  Needs root (QEMU,
# image building).  The daemon also serves the web dashboard (make web) at
# its address.  PANDASTACK_LISTEN (default 127.0.0.1:8080) and
# PANDASTACK_DATA_DIR (default /var/lib/pandastack) change where it listens
# and keeps its data.
set -euo pipefail
cd "$(dirname "$0")/.."
data=${PANDASTACK_DATA_DIR:-/var/lib/pandastack}
listen=${PANDASTACK_LISTEN:-127.0.0.1:8080}

bash scripts/install-deps.sh
make -j"$(nproc)"
make web
make images
make templates

. scripts/lib/daemon.sh
export PANDASTACK_API_URL="http://$listen"
if curl -fsS -o /dev/null "$PANDASTACK_API_URL/healthz" -H "Authorization: Bearer $(cat "$data/admin.key" 2>/dev/null)" 2>/dev/null; then
  PANDASTACK_API_KEY=$(cat "$data/admin.key")
  export PANDASTACK_API_KEY
else
  mkdir -p "$data"
  echo "quickstart: starting pandastackd on $listen (data in $data, log in $data/pandastackd.log)"
  # The daemon prints the admin key once on its first start: the log is
  # readable by root only, like admin.key itself.
  (umask 077 && touch "$data/pandastackd.log")
  chmod 600 "$data/pandastackd.log"
  daemon_start --detach "$listen" "$data" "$data/pandastackd.log"
fi

id=$(build/pandastack sandbox create --template code-interpreter --ttl 600)
echo "quickstart: created $id"
echo "quickstart: python -c 'print(2 ** 10)' in the sandbox prints:"
build/pandastack sandbox exec "$id" -- "python -c 'print(2 ** 10)'"
build/pandastack sandbox delete "$id"
cat <<MSG
quickstart: done.  pandastackd is running on $PANDASTACK_API_URL.
The dashboard is at $PANDASTACK_API_URL/ (sign in with the admin key).  From a shell:
  export PANDASTACK_API_URL=$PANDASTACK_API_URL
  export PANDASTACK_API_KEY=\$(sudo cat $data/admin.key)
  build/pandastack sandbox create --template code-interpreter --ttl 600
MSG
