#!/bin/bash
# build.sh - build (or find cached) the guest images and write one manifest
# per template: what `make images` runs.  See images/README.md.
#
# Usage: build.sh --agent FILE [--cache DIR] [--prune | --plan] [TEMPLATE...]
#   --agent FILE  the static init for the initramfs (build/pandastack-agent)
#   --cache DIR   where images go (default $PANDASTACK_CACHE/images, else
#                 /var/cache/pandastack/images); created if missing
#   --prune       afterwards, delete artifacts no manifest and no baked
#                 template refers to, and the remembered apt answers
#   --plan        only say what is cached and what would be built or
#                 written (no lock taken; no artifact or manifest changes)
#   TEMPLATE      names of images/templates/<name>.conf (default: all)
#
# Each artifact lives under a name carrying the hash of its recipe:
#   kernel-<key>/           kernel.sh output (vmlinux, modules, ...)
#   initramfs-<key>.cpio    initramfs.sh output
#   rootfs-<name>-<key>/    rootfs.sh output (rootfs.ext4, packages.txt)
#   <name>.json             the manifest the engine reads (written last)
# An artifact that exists is complete: it is built in .tmp/ and renamed into
# place at the end.  One build at a time (flock on .lock; others wait).
# Exit status 0 when every manifest is up to date, 1 otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export IMAGES_T0=$EPOCHREALTIME
# shellcheck source=lib.sh
. "$here/lib.sh"

cache=""
agent=""
prune=0
plan=0
templates=()
while [ $# -gt 0 ]; do
	case $1 in
	--agent) agent=${2:-}; shift 2 ;;
	--cache) cache=${2:-}; shift 2 ;;
	--prune) prune=1; shift ;;
	--plan) plan=1; shift ;;
	-h | --help) sed -n '2,24p' "$0"; exit 0 ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) templates+=("$1"); shift ;;
	esac
done
[ -n "$cache" ] || cache="${PANDASTACK_CACHE:-/var/cache/pandastack}/images"
[ -n "$agent" ] || die "--agent FILE is required (the static pandastack-agent)"
[ -f "$agent" ] || die "agent binary $agent not found"
[ "$(id -u)" = 0 ] || die "building images needs root (mmdebstrap --mode=root, mknod)"
need_tools mmdebstrap:mmdebstrap mkfs.ext4:e2fsprogs dumpe2fs:e2fsprogs e2fsck:e2fsprogs \
	lz4:lz4 cpio:cpio depmod:kmod modprobe:kmod readelf:binutils jq:jq flock:util-linux \
	apt-get:apt dpkg-deb:dpkg sha256sum:coreutils
if [ ${#templates[@]} -eq 0 ]; then
	for f in "$here"/templates/*.conf; do
		templates+=("$(basename "$f" .conf)")
	done
fi

mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
if [ "$plan" = 1 ]; then
	tmp=$(mktemp -d)
	trap 'rm_tree "$tmp"' EXIT
fi
missing=0
# would_build WHAT - in --plan mode say WHAT would be built and return 0.
would_build() {
	[ "$plan" = 1 ] || return 1
	say plan "would build $1"
	missing=1
}
if [ "$plan" = 0 ]; then
	exec 9>"$cache/.lock"
	if ! flock -n 9; then
		say lock "another image build holds $cache/.lock; waiting"
		flock 9
	fi
fi
# Holding the lock, anything in .tmp/ is left from an interrupted build.
if [ "$plan" = 0 ] && [ -d "$cache/.tmp" ]; then
	findmnt -rn -o TARGET | { grep -F "$cache/.tmp/" || true; } | sort -r | while read -r m; do
		say cleanup "unmounting $m left by an interrupted build"
		umount -l "$m" || true
	done
	for d in "$cache"/.tmp/*; do
		[ -e "$d" ] || continue
		say cleanup "removing $(basename "$d") left by an interrupted build"
		rm_tree "$d"
	done
fi
if [ "$plan" = 0 ]; then
	mkdir -p "$cache/.tmp"
	tmp=$(mktemp -d "$cache/.tmp/build.XXXXXX")
	# apt downloads as user _apt: it must be able to enter the build folders.
	chmod 0755 "$cache/.tmp" "$tmp"
	trap 'rm_tree "$tmp"' EXIT
fi

# hash_parts PART... - the recipe key of a step: SHA-256 over its parts,
# each a string, length-prefixed so parts cannot run into each other.
hash_parts() {
	local p
	for p in "$@"; do printf '%d:%s\n' "${#p}" "$p"; done | sha256_str
}
# A step script's changes change what it makes, so its hash is part of the
# step's key.  lib.sh is not: it holds progress, locking and parsing helpers
# that shape no output (what the parser reads is hashed as values).

# --- the Debian mirror apt already uses --------------------------------------------
# apt_ready - make sure apt knows the package lists (a fresh machine has
# none); runs apt-get update at most once.
apt_updated=0
apt_ready() {
	[ "$apt_updated" = 0 ] || return 0
	apt_updated=1
	say apt "apt-get update (package lists missing or stale)"
	apt-get update -qq >"$tmp/apt-update.log" 2>&1 || { cat "$tmp/apt-update.log" >&2; die "apt-get update failed"; }
}

# apt_memo CMD... - CMD's output, remembered in $cache/.apt/ until apt's
# sources or package lists change (apt-cache takes ~0.6 s a call, which
# would make a cached build slow).  Fails, remembering nothing, if CMD fails
# or prints nothing.
apt_memo() {
	local fp f out
	fp=$( {
		printf '%s\n' "$@"
		stat -c '%n %Y %s' /etc/apt/sources.list /etc/apt/sources.list.d/* \
			/var/lib/apt/lists/*Release 2>/dev/null || true
	} | sha256_str)
	f="$cache/.apt/$fp"
	if [ -s "$f" ]; then
		cat "$f"
		return 0
	fi
	out=$("$@" 2>/dev/null) && [ -n "$out" ] || return 1
	mkdir -p "$cache/.apt"
	printf '%s\n' "$out" >"$f.$$" && mv "$f.$$" "$f"
	printf '%s\n' "$out"
}

# mirrors_for SUITE - the host's apt sources for SUITE, SUITE-updates and
# SUITE-security, component main, as "deb URI SUITE main" lines.
mirrors_for() {
	# shellcheck disable=SC2016 # apt's own format fields
	apt_memo apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 'Identifier: Packages' |
		awk -v s="$1" '$3 == "main" && ($2 == s || $2 == s "-updates" || $2 == s "-security") &&
			!seen[$1 " " $2]++ { print "deb " $1 " " $2 " main" }'
}

# --- kernel ------------------------------------------------------------------------
declare -A kconf=()
conf_read "$here/kernel.conf" kconf
conf_check_keys kconf "$here/kernel.conf" package modules cmdline
for k in package modules cmdline; do
	[ -n "${kconf[$k]:-}" ] || die "$here/kernel.conf: '$k' is required"
done
meta=${kconf[package]}
resolve_kernel() {
	kpkg=$(apt_memo apt-cache depends "$meta" | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
	# A real package (no metapackage) names itself.
	[ -n "$kpkg" ] || kpkg=$meta
	kver=$(apt_memo apt-cache policy "$kpkg" | awk '$1 == "Candidate:" { print $2 }')
	[ -n "$kver" ] && [ "$kver" != "(none)" ]
}
resolve_kernel || { apt_ready; resolve_kernel; } || die "apt knows no package $meta (check the host's apt sources)"
read -r -a kmods <<<"$(printf '%s\n' "${kconf[modules]}" | tr -s ' \n' ' ')"
kernel_key=$(hash_parts kernel-v1 "$kpkg" "$kver" "${kmods[*]}" "$(sha256_file "$here/kernel.sh")")
kdir="$cache/kernel-${kernel_key:0:16}"
if [ -d "$kdir" ]; then
	say kernel "cached $(basename "$kdir") ($kpkg $kver)"
elif would_build "$(basename "$kdir") ($kpkg $kver)"; then
	:
else
	say kernel "building $(basename "$kdir") from $kpkg $kver"
	run_step "$here/kernel.sh" "$tmp/kernel" "$kpkg" "${kmods[@]}"
	mv -T "$tmp/kernel" "$kdir"
fi
krel=$(cat "$kdir/version" 2>/dev/null || echo "?")

# --- initramfs ---------------------------------------------------------------------
agent_sha=$(sha256_file "$agent")
initramfs_key=$(hash_parts initramfs-v1 "$kernel_key" "$agent_sha" "$(sha256_file "$here/initramfs.sh")")
initramfs="$cache/initramfs-${initramfs_key:0:16}.cpio"
if [ -f "$initramfs" ]; then
	say initramfs "cached $(basename "$initramfs")"
elif would_build "$(basename "$initramfs")"; then
	:
else
	say initramfs "packing $(basename "$initramfs") (agent $agent, sha256 ${agent_sha:0:12})"
	run_step "$here/initramfs.sh" "$tmp/initramfs.cpio" "$kdir" "$agent"
	sha256_file "$tmp/initramfs.cpio" >"$tmp/initramfs.cpio.sha256"
	mv "$tmp/initramfs.cpio.sha256" "$initramfs.sha256"
	mv "$tmp/initramfs.cpio" "$initramfs"
fi
[ "$plan" = 1 ] || [ -f "$initramfs.sha256" ] || sha256_file "$initramfs" >"$initramfs.sha256"

# --- templates ---------------------------------------------------------------------
rootfs_allowed=(description suite variant packages hostname free_mib customize verify memory_mib vcpus warm warm_kernels disk_cap_mib)
rootfs_script_sha=$(sha256_file "$here/rootfs.sh")
# Files rootfs.sh copies into every image are part of its recipe.
rootfs_files_sha=$(sha256_file "$here/guest/pandastack_restore.py")
manifests=()
shared_missing=$missing
for name in "${templates[@]}"; do
	missing=$shared_missing
	[[ $name =~ ^[a-z0-9][a-z0-9-]{0,62}$ ]] || die "bad template name '$name'"
	conf_file="$here/templates/$name.conf"
	[ -f "$conf_file" ] || die "no recipe $conf_file"
	declare -A tconf=()
	conf_read "$conf_file" tconf
	conf_check_keys tconf "$conf_file" "${rootfs_allowed[@]}"
	for k in suite variant hostname free_mib memory_mib vcpus; do
		[ -n "${tconf[$k]:-}" ] || die "$conf_file: '$k' is required"
	done
	for k in free_mib memory_mib vcpus; do
		[[ ${tconf[$k]} =~ ^[1-9][0-9]{0,6}$ ]] || die "$conf_file: '$k' must be a positive number"
	done
	[ "${tconf[free_mib]}" -ge 1024 ] || die "$conf_file: free_mib must be at least 1024"
	disk_cap=${tconf[disk_cap_mib]:-}
	[ -z "$disk_cap" ] || [[ $disk_cap =~ ^[1-9][0-9]{2,6}$ ]] || die "$conf_file: disk_cap_mib must be a number of MiB (at least 100)"
	[ -z "$disk_cap" ] || [ "$disk_cap" -gt "${tconf[free_mib]}" ] || die "$conf_file: disk_cap_mib must be above free_mib"
	warm_kernels=${tconf[warm_kernels]:-1}
	[[ $warm_kernels =~ ^[0-8]$ ]] || die "$conf_file: warm_kernels must be a number from 0 to 8"

	# Package order and line breaks do not change the image.
	pkgs=$(printf '%s\n' "${tconf[packages]:-}" | tr -s ' \t' '\n' | sed '/^$/d' | LC_ALL=C sort -u | tr '\n' ' ')
	mirrors=$(mirrors_for "${tconf[suite]}")
	[ -n "$mirrors" ] || { apt_ready; mirrors=$(mirrors_for "${tconf[suite]}"); }
	[ -n "$mirrors" ] || die "$conf_file: the host's apt sources have no '${tconf[suite]}' main"
	rootfs_key=$(hash_parts rootfs-v1 "${tconf[suite]}" "${tconf[variant]}" "$pkgs" "${tconf[hostname]}" \
		"${tconf[free_mib]}" "${tconf[customize]:-}" "${tconf[verify]:-}" "$mirrors" \
		"$rootfs_script_sha" "$rootfs_files_sha")
	rdir="$cache/rootfs-$name-${rootfs_key:0:16}"
	if [ -d "$rdir" ]; then
		say "rootfs $name" "cached $(basename "$rdir")"
	elif would_build "$(basename "$rdir")"; then
		:
	else
		say "rootfs $name" "building $(basename "$rdir")"
		ROOTFS_SUITE=${tconf[suite]} ROOTFS_VARIANT=${tconf[variant]} ROOTFS_PACKAGES=$pkgs \
			ROOTFS_HOSTNAME=${tconf[hostname]} ROOTFS_FREE_MIB=${tconf[free_mib]} \
			ROOTFS_CUSTOMIZE=${tconf[customize]:-} ROOTFS_VERIFY=${tconf[verify]:-} \
			ROOTFS_MIRRORS=$mirrors \
			run_step "$here/rootfs.sh" "$tmp/rootfs-$name" "$name" "$rootfs_key"
		mv -T "$tmp/rootfs-$name" "$rdir"
	fi

	manifest="$cache/$name.json"
	if [ "$missing" = 1 ]; then
		say plan "would write $manifest"
		unset tconf
		continue
	fi
	# The manifest: every field but "key", then key = SHA-256 of the
	# canonical (sorted, compact) JSON of those fields.
	body=$(jq -n -S \
		--arg name "$name" \
		--arg kernel "$kdir/vmlinux" --arg kernel_sha256 "$(cat "$kdir/vmlinux.sha256")" \
		--arg kernel_release "$krel" \
		--arg initramfs "$initramfs" --arg initramfs_sha256 "$(cat "$initramfs.sha256")" \
		--arg rootfs "$rdir/rootfs.ext4" --arg rootfs_key "$rootfs_key" \
		--arg cmdline "${kconf[cmdline]}" \
		--argjson memory_mib "${tconf[memory_mib]}" --argjson vcpus "${tconf[vcpus]}" \
		--arg warm "${tconf[warm]:-}" --argjson warm_kernels "$warm_kernels" \
		--arg description "${tconf[description]:-}" --arg disk_cap "$disk_cap" \
		'{format: 1, $name, $description, $kernel, $kernel_sha256, $kernel_release,
		  $initramfs, $initramfs_sha256, $rootfs, $rootfs_key, $cmdline,
		  $memory_mib, $vcpus, $warm, $warm_kernels}
		 + (if $disk_cap == "" then {} else {disk_cap_mib: ($disk_cap | tonumber)} end)')
	key=$(printf "%s" "$body" | jq -S -c -j . | sha256_str)
	printf '%s' "$body" | jq -S --arg key "$key" '. + {$key}' >"$tmp/$name.json"
	if [ -f "$manifest" ] && cmp -s "$tmp/$name.json" "$manifest"; then
		say "manifest $name" "up to date (key ${key:0:16})"
	elif [ "$plan" = 1 ]; then
		say plan "would write $manifest (key ${key:0:16})"
	else
		mv "$tmp/$name.json" "$manifest"
		say "manifest $name" "wrote $manifest (key ${key:0:16})"
	fi
	manifests+=("$manifest")
	unset tconf
done

[ "$plan" = 0 ] || exit 0

# --- prune -------------------------------------------------------------------------
# referenced PATH - 0 if a manifest or a baked template names PATH.
referenced() {
	local f
	for f in "$cache"/*.json "$cache"/../templates/*/template.json; do
		[ -f "$f" ] && grep -qF "$1" "$f" && return 0
	done
	for f in "$cache"/../templates/*/disk.qcow2; do
		[ -f "$f" ] || continue
		qemu-img info -U --backing-chain "$f" 2>/dev/null | grep -qF "$1" && return 0
	done
	return 1
}
if [ "$prune" = 1 ]; then
	# Without qemu-img a template's backing file could not be seen.
	need_tools qemu-img:qemu-utils
	rm_tree "$cache/.apt"
	for a in "$cache"/kernel-* "$cache"/initramfs-*.cpio "$cache"/rootfs-*; do
		[ -e "$a" ] || continue
		if ! referenced "$a"; then
			say prune "removing $(basename "$a")"
			rm_tree "$a"
			rm -f "$a.sha256"
		fi
	done
fi

# --- summary -----------------------------------------------------------------------
say summary "kernel $krel: vmlinux $(du -hL --apparent-size "$kdir/vmlinux" | cut -f1), initramfs $(du -hL --apparent-size "$initramfs" | cut -f1)"
for m in "${manifests[@]}"; do
	r=$(jq -r .rootfs "$m")
	say summary "$(jq -r .name "$m"): rootfs $(du -hL --apparent-size "$r" | cut -f1) (allocated $(du -hL "$r" | cut -f1)), manifest $m"
done
