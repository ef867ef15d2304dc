#!/bin/bash
# initramfs.sh - pack the guest's initramfs: the agent as /init and the
# kernel modules it loads before mounting the root disk.
#
# Usage: initramfs.sh OUTFILE KERNELDIR AGENT
#   OUTFILE    the cpio file to write (must not exist); build.sh renames it
#              into the cache when this script succeeded
#   KERNELDIR  a folder made by kernel.sh (modules/, modules.load)
#   AGENT      the static pandastack-agent binary (or any static init)
#
# The archive (newc cpio, uncompressed, owner 0:0, fixed mtimes, sorted, so
# the same inputs give the same bytes) holds:
#   /init                          the agent, mode 0755
#   /etc/pandastack/modules        in-guest .ko paths, one a line, load order
#   /lib/modules/<release>/...     those .ko files and their depmod files
#   /dev/console                   char 5:1, so the kernel can give /init a
#                                  console (devtmpfs is not mounted yet)
#   /dev /proc /sys /tmp /run      empty mount points
# Exit status 0 on success, 1 with a message on stderr otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

[ $# -eq 3 ] || die "usage: initramfs.sh OUTFILE KERNELDIR AGENT"
out=$1
kdir=$2
agent=$3
[ ! -e "$out" ] || die "initramfs: $out already exists"
if [ ! -f "$kdir/modules.load" ] || [ ! -d "$kdir/modules/lib/modules" ]; then
	die "initramfs: $kdir is not a kernel folder"
fi
[ -f "$agent" ] || die "initramfs: agent binary $agent not found (build it with make, or pass another)"
[ "$(head -c 4 "$agent" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ] || die "initramfs: $agent is not an ELF file"
# PID 1 starts before any root filesystem exists: no dynamic loader.
if readelf -l "$agent" 2>/dev/null | grep -q 'Requesting program interpreter'; then
	die "initramfs: $agent is dynamically linked; the init must be static"
fi

stage="$out.stage"
rm_tree "$stage"
mkdir -p "$stage/etc/pandastack" "$stage/dev" "$stage/proc" "$stage/sys" "$stage/tmp" "$stage/run"
install -m 0755 "$agent" "$stage/init"
cp -a "$kdir/modules/lib" "$stage/"
install -m 0644 "$kdir/modules.load" "$stage/etc/pandastack/modules"
while read -r ko; do
	[ -f "$stage$ko" ] || die "initramfs: $ko listed in modules.load but missing"
done <"$kdir/modules.load"
mknod -m 0600 "$stage/dev/console" c 5 1
chmod 1777 "$stage/tmp"

find "$stage" -exec touch -h -d @0 {} +
(cd "$stage" && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort |
	cpio --quiet -o -H newc -R 0:0 --reproducible) >"$out.part"
rm_tree "$stage"
mv "$out.part" "$out"
say initramfs "packed $(du -h --apparent-size "$out" | cut -f1) ($(wc -l <"$kdir/modules.load") modules, init $(du -h --apparent-size "$agent" | cut -f1))"
