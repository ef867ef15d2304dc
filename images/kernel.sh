#!/bin/bash
# kernel.sh - build the guest kernel folder from one Debian kernel package.
#
# Usage: kernel.sh OUTDIR PACKAGE MODULE...
#   OUTDIR   a folder to create (must not exist); build.sh renames it into
#            the cache when this script succeeded
#   PACKAGE  the real kernel package (linux-image-<version>-cloud-amd64),
#            downloaded with apt-get from the host's configured mirror
#   MODULE   modules the guest loads (names as modprobe knows them); their
#            dependencies are added and ordered dependencies first
#
# Produces in OUTDIR:
#   vmlinux         the uncompressed kernel (ELF with a PVH entry note)
#   vmlinux.sha256  its SHA-256 (hex)
#   version         the kernel release (uname -r), one line
#   package         "<package> <version>" of the .deb used
#   config          the kernel's build configuration (reference)
#   modules/lib/modules/<release>/...   the selected .ko files + depmod output
#   modules.load    in-guest absolute .ko paths, one a line, in load order
# Exit status 0 on success, 1 with a message on stderr otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

[ $# -ge 3 ] || die "usage: kernel.sh OUTDIR PACKAGE MODULE..."
out=$1
pkg=$2
shift 2
[ ! -e "$out" ] || die "kernel: $out already exists"
mkdir -p "$out"
work="$out/.work"
mkdir -p "$work/deb" "$work/root"

# --- download and unpack -----------------------------------------------------
say kernel "downloading $pkg"
(cd "$work/deb" && apt-get download -q -o APT::Sandbox::User=root "$pkg" >"$work/download.log" 2>&1) ||
	{ cat "$work/download.log" >&2; die "kernel: apt-get download $pkg failed"; }
deb=$(find "$work/deb" -maxdepth 1 -name '*.deb' -print -quit)
[ -n "$deb" ] || die "kernel: apt-get download produced no .deb"
printf '%s %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" >"$out/package"
dpkg-deb -x "$deb" "$work/root"

# The release is the single folder under lib/modules.
rels=("$work"/root/lib/modules/*/)
if [ ${#rels[@]} -ne 1 ] || [ ! -d "${rels[0]}" ]; then
	die "kernel: expected one lib/modules/<release> in $pkg"
fi
rel=$(basename "${rels[0]}")
printf '%s\n' "$rel" >"$out/version"
vmlinuz="$work/root/boot/vmlinuz-$rel"
[ -f "$vmlinuz" ] || die "kernel: $pkg has no boot/vmlinuz-$rel"
cp "$work/root/boot/config-$rel" "$out/config" 2>/dev/null || true

# --- vmlinux out of vmlinuz ---------------------------------------------------
# A bzImage carries the compressed vmlinux after its setup code.  Try the
# decompressors whose magic appears in the file, at each place the magic
# appears (at most 8), until one yields an ELF file.
say kernel "extracting vmlinux from vmlinuz-$rel"
is_elf() { [ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; }
found=0
for cand in 'lz4:\x02\x21\x4c\x18:lz4 -dc' 'zstd:\x28\xb5\x2f\xfd:zstd -dcq' \
	'xz:\xfd\x37\x7a\x58\x5a\x00:xz -dcq' 'gzip:\x1f\x8b\x08:gzip -dcq'; do
	name=${cand%%:*}
	rest=${cand#*:}
	magic=${rest%%:*}
	cmd=${rest#*:}
	command -v "${cmd%% *}" >/dev/null 2>&1 || continue
	for off in $(LC_ALL=C grep -obUaP "$magic" "$vmlinuz" 2>/dev/null | cut -d: -f1 | head -n 8); do
		# Trailing bytes after the stream make the tools complain: the
		# ELF check below is what decides.
		tail -c +$((off + 1)) "$vmlinuz" | $cmd >"$work/vmlinux" 2>/dev/null || true
		if [ -s "$work/vmlinux" ] && is_elf "$work/vmlinux"; then
			found=1
			say kernel "vmlinux: $name stream at offset $off"
			break 2
		fi
	done
done
[ "$found" = 1 ] || die "kernel: no decompressible vmlinux found in vmlinuz-$rel"
# QEMU boots an ELF kernel through its PVH entry: Xen note type 18
# (XEN_ELFNOTE_PHYS32_ENTRY).  Without it the boot would fail later and
# less clearly, so check now.
readelf -n "$work/vmlinux" | grep -q -E '^ +Xen .*(\(0x00000012\)|PHYS32_ENTRY)' ||
	die "kernel: vmlinux has no PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY)"
mv "$work/vmlinux" "$out/vmlinux"
sha256_file "$out/vmlinux" >"$out/vmlinux.sha256"

# --- modules, dependencies first ------------------------------------------------
say kernel "resolving modules: $*"
depmod -b "$work/root" "$rel"
moddir="lib/modules/$rel"
mkdir -p "$out/modules/$moddir"
: >"$out/modules.load"
declare -A seen=()
for m in "$@"; do
	# -C /dev/null: the host's modprobe.d must not add options or
	# install commands; the output lists dependencies before the module.
	deps=$(modprobe -C /dev/null -d "$work/root" -S "$rel" --show-depends "$m" 2>&1) ||
		die "kernel: module $m: $deps"
	while read -r verb path _; do
		case $verb in
		builtin) continue ;; # built into vmlinux: nothing to load
		insmod) ;;
		*) die "kernel: module $m: unexpected modprobe line '$verb $path'" ;;
		esac
		rel_path=${path#"$work/root/"}
		[ "$rel_path" != "$path" ] || die "kernel: module path outside the package: $path"
		[ -z "${seen[$rel_path]+x}" ] || continue
		seen[$rel_path]=1
		mkdir -p "$(dirname "$out/modules/$rel_path")"
		cp "$work/root/$rel_path" "$out/modules/$rel_path"
		printf '/%s\n' "$rel_path" >>"$out/modules.load"
	done <<<"$deps"
done
for f in modules.order modules.builtin modules.builtin.modinfo; do
	[ -f "$work/root/$moddir/$f" ] && cp "$work/root/$moddir/$f" "$out/modules/$moddir/"
done
depmod -b "$out/modules" "$rel"
say kernel "$(wc -l <"$out/modules.load") modules: $(xargs -n1 basename <"$out/modules.load" | sed 's/\.ko$//' | tr '\n' ' ')"

rm_tree "$work"
say kernel "done: $rel, vmlinux $(du -h --apparent-size "$out/vmlinux" | cut -f1)"
