#!/bin/bash
# rootfs.sh - build one template's ext4 root image from Debian packages.
#
# Usage: rootfs.sh OUTDIR NAME KEY
#   OUTDIR  a folder to create (must not exist); build.sh renames it into the
#           cache when this script succeeded
#   NAME    the template name (for messages and /etc/pandastack/image.json)
#   KEY     the rootfs recipe key (recorded in the image, seeds its UUID)
# Recipe, from the environment (build.sh sets these from the template):
#   ROOTFS_SUITE      Debian suite (bookworm)
#   ROOTFS_VARIANT    mmdebstrap variant (minbase)
#   ROOTFS_PACKAGES   packages to add, separated by blanks or newlines
#   ROOTFS_HOSTNAME   the guest's /etc/hostname
#   ROOTFS_FREE_MIB   free space the ext4 must keep for user files (MiB)
#   ROOTFS_CUSTOMIZE  shell lines run inside the chroot after install
#   ROOTFS_VERIFY     shell lines run inside the chroot last; any failure
#                     fails the build
#   ROOTFS_MIRRORS    apt lines ("deb URI SUITE COMPONENTS"), one a line
#
# Produces in OUTDIR:
#   rootfs.ext4    the image (sparse file): label "pandastack", UUID from
#                  KEY, ext4 features of the host's mke2fs.conf, no
#                  reserved blocks, at least ROOTFS_FREE_MIB free
#   packages.txt   "package version" of every installed package
# Also installs guest/pandastack_restore.py (where Python is) and makes the
# after-restore hooks' folder /etc/pandastack/after-restore.d.
#   *.log          mmdebstrap, verify, mkfs.ext4 and e2fsck output
# Needs root (mmdebstrap --mode=root chroots and mounts /proc in the tree);
# never mounts the image itself: mkfs.ext4 -d copies the tree in.
# Exit status 0 on success, 1 with a message on stderr otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

[ $# -eq 3 ] || die "usage: rootfs.sh OUTDIR NAME KEY"
out=$1
name=$2
key=$3
step="rootfs $name"
for v in ROOTFS_SUITE ROOTFS_VARIANT ROOTFS_HOSTNAME ROOTFS_FREE_MIB ROOTFS_MIRRORS; do
	[ -n "${!v:-}" ] || die "$step: $v is not set"
done
[[ $ROOTFS_FREE_MIB =~ ^[0-9]+$ ]] || die "$step: ROOTFS_FREE_MIB must be a number of MiB"
[[ $ROOTFS_HOSTNAME =~ ^[a-z0-9][a-z0-9-]{0,62}$ ]] || die "$step: bad hostname '$ROOTFS_HOSTNAME'"
[ "$(id -u)" = 0 ] || die "$step: needs root (mmdebstrap --mode=root)"
[ ! -e "$out" ] || die "$step: $out already exists"
mkdir -p "$out"
tree="$out/tree"
hooks="$out/hooks"
mkdir -p "$hooks"

# Hooks run inside the chroot with a clean environment, as the agent runs
# things later (HOME=/root: matplotlib's font cache lands where it looks).
# shellcheck disable=SC2016 # $1 is the hook's argument, expanded by mmdebstrap's shell
chroot_sh='chroot "$1" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/sh -eux'
{
	printf '%s\n' "${ROOTFS_CUSTOMIZE:-}"
} >"$hooks/customize.sh"
{
	printf '%s\n' "${ROOTFS_VERIFY:-}"
} >"$hooks/verify.sh"

packages=$(printf '%s\n' "${ROOTFS_PACKAGES:-}" | tr -s ' \t\n' ',' | sed 's/^,//; s/,$//')
mirrors=()
while IFS= read -r l; do
	[ -n "$l" ] && mirrors+=("$l")
done <<<"$ROOTFS_MIRRORS"

# Docs, man pages and translations are not needed in a sandbox; copyright
# files stay.  The excludes also apply to packages users install later.
args=(
	--mode=root --variant="$ROOTFS_VARIANT" --format=directory
	--dpkgopt='path-exclude=/usr/share/man/*'
	--dpkgopt='path-exclude=/usr/share/info/*'
	--dpkgopt='path-exclude=/usr/share/doc/*'
	--dpkgopt='path-include=/usr/share/doc/*/copyright'
	--dpkgopt='path-exclude=/usr/share/locale/*'
	--dpkgopt='path-include=/usr/share/locale/locale.alias'
	--customize-hook="$chroot_sh < $(printf '%q' "$hooks/customize.sh")"
)
[ -n "$packages" ] && args+=(--include="$packages")

say "$step" "mmdebstrap $ROOTFS_VARIANT $ROOTFS_SUITE + ${packages:-nothing} (log: $out/mmdebstrap.log)"
run_logged "$step" "$out/mmdebstrap.log" mmdebstrap "${args[@]}" "$ROOTFS_SUITE" "$tree" "${mirrors[@]}" ||
	die "$step: mmdebstrap failed"

say "$step" "configuring the tree"
# What the sandbox sees of itself; nothing here refers to the build host
# (mmdebstrap copied the host's hostname and resolv.conf in).
printf '%s\n' "$ROOTFS_HOSTNAME" >"$tree/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
	"$ROOTFS_HOSTNAME" >"$tree/etc/hosts"
# The sandbox's resolver: 10.0.2.3 in every sandbox's network.
rm -f "$tree/etc/resolv.conf"
printf 'nameserver 10.0.2.3\n' >"$tree/etc/resolv.conf"
# pip as a user expects it in a sandbox whose user is root: `pip install`
# into Debian's externally managed Python (PEP 668) without the refusal, no
# warning about running as root, no version check against the index on
# every run.
cat >"$tree/etc/pip.conf" <<'EOF'
[global]
break-system-packages = true
root-user-action = ignore
disable-pip-version-check = true
EOF
install -d -m 0755 "$tree/workspace"
install -d -m 0755 "$tree/etc/pandastack"
# After-restore hooks (docs/snapshots.md): executables the agent runs after
# every restore that hands a sandbox out, and the Python module code contexts
# register their own functions with (guest/pandastack_restore.py).
install -d -m 0755 "$tree/etc/pandastack/after-restore.d"
if [ -d "$tree/usr/lib/python3/dist-packages" ]; then
	install -m 0644 "$here/guest/pandastack_restore.py" "$tree/usr/lib/python3/dist-packages/"
fi
printf '{"name": "%s", "rootfs_key": "%s"}\n' "$name" "$key" >"$tree/etc/pandastack/image.json"
# shellcheck disable=SC2016 # dpkg-query's own format fields
chroot "$tree" dpkg-query -W -f '${Package} ${Version}\n' | LC_ALL=C sort >"$out/packages.txt"

say "$step" "verifying inside the chroot"
# mmdebstrap has unmounted /proc by now; the checks only run programs.
if ! chroot "$tree" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	/bin/sh -eux <"$hooks/verify.sh" >"$out/verify.log" 2>&1; then
	cat "$out/verify.log" >&2
	die "$step: a verify line of the recipe failed"
fi
# Leave nothing of the checks behind (caches Python wrote, /tmp files).
find "$tree/tmp" -mindepth 1 -delete 2>/dev/null || true
find "$tree/workspace" -mindepth 1 -delete 2>/dev/null || true

# --- the ext4 image ------------------------------------------------------------
used_kib=$(du -s -x -B1024 "$tree" | cut -f1)
nfiles=$(find "$tree" -xdev | wc -l)
# Content + 10 % for directories and block rounding + 256 MiB for the
# journal, inode tables and group descriptors + the free space asked for;
# then check the result and grow if the estimate was short.
size_mib=$(((used_kib * 11 / 10) / 1024 + 256 + ROOTFS_FREE_MIB))
uuid=$(printf '%s' "$key" | sed -E 's/^(.{8})(.{4})(.{4})(.{4})(.{12}).*/\1-\2-\3-\4-\5/')
img="$out/rootfs.ext4"
for attempt in 1 2 3; do
	size_mib=$(((size_mib + 63) / 64 * 64))
	say "$step" "mkfs.ext4 -d: $((used_kib / 1024)) MiB in $nfiles files into a $size_mib MiB image"
	rm -f "$img"
	truncate -s "${size_mib}M" "$img"
	# -m 0: the sandbox's user is root; reserved blocks would only hide
	# space.  -i 8192: room for many small user files.
	mkfs.ext4 -q -F -L pandastack -U "$uuid" -m 0 -i 8192 -E "hash_seed=$uuid" \
		-d "$tree" "$img" >"$out/mkfs.log" 2>&1 || { cat "$out/mkfs.log" >&2; die "$step: mkfs.ext4 failed"; }
	bs=$(dumpe2fs -h "$img" 2>/dev/null | awk -F: '/^Block size/ { gsub(/ /, "", $2); print $2 }')
	fb=$(dumpe2fs -h "$img" 2>/dev/null | awk -F: '/^Free blocks/ { gsub(/ /, "", $2); print $2 }')
	free_mib=$((fb * bs / 1048576))
	[ "$free_mib" -ge "$ROOTFS_FREE_MIB" ] && break
	[ "$attempt" -lt 3 ] || die "$step: image has only $free_mib MiB free after 3 tries"
	size_mib=$((size_mib + ROOTFS_FREE_MIB - free_mib + 64))
done
e2fsck -f -n "$img" >"$out/e2fsck.log" 2>&1 || { cat "$out/e2fsck.log" >&2; die "$step: e2fsck found errors"; }
rm_tree "$tree"
rm_tree "$hooks"
say "$step" "done: $size_mib MiB image, $free_mib MiB free, $(wc -l <"$out/packages.txt") packages"
