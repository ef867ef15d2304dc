# lib.sh - helpers shared by the image build scripts (sourced, not run).
#
# Progress lines:   images: [  12.3s] <step>: <message>     (elapsed since the build began)
# Errors:           images: error: <message>                (then exit 1)
# Everything here is bash; callers `set -euo pipefail` before sourcing.

# Start of the whole build (seconds, fractional); build.sh exports it so
# that every helper script reports time from the same origin.
: "${IMAGES_T0:=$EPOCHREALTIME}"
export IMAGES_T0

# elapsed - seconds since IMAGES_T0, one decimal (prints it).
elapsed() {
	awk -v a="$IMAGES_T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

# say STEP MESSAGE... - one progress line on stdout.
say() {
	local step=$1
	shift
	printf 'images: [%6ss] %s: %s\n' "$(elapsed)" "$step" "$*"
}

# die MESSAGE... - report an error on stderr and exit 1.
die() {
	printf 'images: error: %s\n' "$*" >&2
	exit 1
}

# need_tools TOOL:PACKAGE... - fail with the Debian package to install when
# a tool is missing.
need_tools() {
	local t missing=""
	for t in "$@"; do
		command -v "${t%%:*}" >/dev/null 2>&1 || missing+=" ${t#*:}"
	done
	[ -z "$missing" ] || die "missing tools; apt-get install$missing"
}

# sha256_file FILE - the file's SHA-256 in hex (prints it).
sha256_file() {
	sha256sum -- "$1" | cut -d' ' -f1
}

# sha256_str - SHA-256 in hex of standard input (prints it).
sha256_str() {
	sha256sum | cut -d' ' -f1
}

# run_logged STEP LOGFILE CMD... - run CMD with its output in LOGFILE,
# printing a progress line every 15 s (with the log's last line) while it
# runs.  On failure prints the log's last 40 lines and returns CMD's status.
# An INT/TERM while waiting kills CMD first.
run_logged() {
	local step=$1 log=$2 pid rc=0 last=$EPOCHREALTIME now
	shift 2
	"$@" >"$log" 2>&1 &
	pid=$!
	# shellcheck disable=SC2064
	trap "kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; exit 130" INT TERM
	while kill -0 "$pid" 2>/dev/null; do
		sleep 0.5
		now=$EPOCHREALTIME
		if awk -v a="$last" -v b="$now" 'BEGIN { exit !(b - a >= 15) }'; then
			last=$now
			say "$step" "running ($(tail -n 1 "$log" 2>/dev/null | cut -c1-100))"
		fi
	done
	wait "$pid" || rc=$?
	trap - INT TERM
	if [ "$rc" -ne 0 ]; then
		printf 'images: %s failed (exit %s); last lines of %s:\n' "$step" "$rc" "$log" >&2
		tail -n 40 "$log" >&2
	fi
	return "$rc"
}

# run_step CMD... - run a step script and return its status.  An INT or
# TERM meanwhile is passed on to it, and the caller exits (130) only after
# the step has stopped, so no step outlives the build and nothing the step
# still uses (a chroot with /proc mounted) is removed under it.
run_step() {
	local pid rc=0
	"$@" &
	pid=$!
	# shellcheck disable=SC2064
	trap "kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; exit 130" INT TERM
	wait "$pid" || rc=$?
	trap - INT TERM
	return "$rc"
}

# conf_read FILE ARRAYNAME - parse a recipe: lines `key = value`, `#`
# comments and blank lines ignored.  A key given more than once gets its
# values joined by newlines (packages, customize, verify lines).  Fills the
# associative array named ARRAYNAME.  Dies on a line without `=`.
conf_read() {
	local file=$1 line key val n=0
	local -n conf_ref=$2
	[ -r "$file" ] || die "cannot read recipe $file"
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		[[ $line =~ ^[[:space:]]*(#|$) ]] && continue
		[[ $line == *=* ]] || die "$file:$n: expected 'key = value'"
		key=${line%%=*}
		val=${line#*=}
		key=${key//[[:space:]]/}
		val=${val#"${val%%[![:space:]]*}"}
		val=${val%"${val##*[![:space:]]}"}
		[[ $key =~ ^[a-z_]+$ ]] || die "$file:$n: bad key '$key'"
		if [ -n "${conf_ref[$key]+set}" ]; then
			conf_ref["$key"]+=$'\n'"$val"
		else
			conf_ref["$key"]=$val
		fi
	done <"$file"
}

# conf_check_keys ARRAYNAME FILE ALLOWED... - die on a key not in ALLOWED
# (a typo in a recipe must not silently change nothing).
conf_check_keys() {
	local -n cck_ref=$1
	local file=$2 k a ok
	shift 2
	for k in "${!cck_ref[@]}"; do
		ok=0
		for a in "$@"; do [ "$k" = "$a" ] && ok=1; done
		[ "$ok" = 1 ] || die "$file: unknown key '$k' (allowed: $*)"
	done
}

# rm_tree DIR - remove a build folder without crossing into anything still
# mounted below it (a chroot's /proc after an interrupted mmdebstrap).
rm_tree() {
	[ -e "$1" ] || return 0
	rm -rf --one-file-system -- "$1"
}
