# shellcheck shell=bash
# scripts/lib/conformance.sh - find the product documents' examples and run
# them one by one, for scripts/conformance.sh and scripts/run-conformance-*.sh.
# Bash; source it.  tests/conformance/README.md says what each example expects.

conformance_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CONFORMANCE_ONLY=()

# conformance_dir
#   Prints the examples folder: $PANDASTACK_CONFORMANCE, else the shared
#   conformance folder next to the repository, else the repository's copy
#   (tests/conformance, what a clean clone has).
conformance_dir() {
  if [ -n "${PANDASTACK_CONFORMANCE:-}" ]; then
    echo "$PANDASTACK_CONFORMANCE"
  elif [ -d "$conformance_repo/../shared/conformance" ]; then
    (cd "$conformance_repo/../shared/conformance" && pwd)
  else
    echo "$conformance_repo/tests/conformance"
  fi
}

# conformance_run WORK KIND DIR GLOB RUNNER [ARG ...]
#   Runs RUNNER ARG... DIR/NAME for each NAME: the names in the array
#   CONFORMANCE_ONLY when it is not empty, else every DIR/GLOB.  Each runs with
#   a fresh folder under WORK as its working directory and at most
#   CONFORMANCE_TIMEOUT seconds (default 900).  Prints "PASS KIND/NAME (N ms)"
#   or "FAIL KIND/NAME (exit N, N ms)" with the end of its output, then
#   "KIND: N passed, N failed".  Returns 1 if any failed.
conformance_run() {
  local work=$1 kind=$2 dir=$3 glob=$4
  shift 4
  local names=() f name out rc t0 ms passed=0 failed=0
  if [ ${#CONFORMANCE_ONLY[@]} -gt 0 ]; then
    names=("${CONFORMANCE_ONLY[@]}")
  else
    for f in "$dir"/$glob; do [ -e "$f" ] && names+=("$(basename "$f")"); done
  fi
  for name in "${names[@]}"; do
    out=$(mktemp -d "$work/work.XXXXXX")
    t0=$(date +%s%N)
    if (cd "$out" && timeout "${CONFORMANCE_TIMEOUT:-900}" "$@" "$dir/$name") >"$out.log" 2>&1; then
      rc=0
    else
      rc=$?
    fi
    ms=$((($(date +%s%N) - t0) / 1000000))
    if [ "$rc" = 0 ]; then
      passed=$((passed + 1))
      echo "PASS $kind/$name ($ms ms)"
    else
      failed=$((failed + 1))
      echo "FAIL $kind/$name (exit $rc, $ms ms)"
      sed 's/^/    | /' "$out.log" | tail -25
    fi
  done
  echo "$kind: $passed passed, $failed failed"
  [ "$failed" = 0 ]
}
