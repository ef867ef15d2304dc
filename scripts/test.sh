#!/usr/bin/env bash
# The whole test suite, as CI runs it, on a fresh Debian 12 host: install what
# is needed, build (warnings are errors), make check (unit tests plain and under
# ASan+UBSan, a short run of every fuzz target), guest images and templates (cached in
# $PANDASTACK_CACHE, default /var/cache/pandastack, rebuilt only when their
# recipe changes), the smoke run, the engine's tests on real guests, the
# daemon/CLI/SDK tests, the dashboard in a real browser, the MCP server with the
# MCP SDK's client and the agent framework recipes, and every example of
# the product documents against a live daemon.  Needs root (QEMU, image building).
set -euo pipefail
cd "$(dirname "$0")/.."
export PANDASTACK_CACHE=${PANDASTACK_CACHE:-/var/cache/pandastack}
t0=$(date +%s)
step() { printf '\n=== %s  (+%ss)\n' "$*" "$(( $(date +%s) - t0 ))"; }

step "dependencies";        bash scripts/install-deps.sh
step "build";               make -j"$(nproc)" all
step "API description, generated tables"; make lint-openapi check-api-errors
step "Kubernetes deployment"; make check-k8s
step "unit tests, the same under ASan+UBSan, fuzz targets (make check)"
make check CHECK_FUZZ_SECONDS="${FUZZ_SECONDS:-20}"
step "guest images";        make images
step "templates";           make templates
step "smoke";               make smoke
step "engine on real guests"; make test-engine
step "daemon, CLI, images (pytest)"; make test-integration
step "cluster: three nodes on etcd"; make test-cluster
step "SDKs";                make test-sdk
step "dashboard in chromium"; make test-web
step "MCP server and agent framework recipes"; make test-agents
step "documents' examples"; scripts/conformance.sh --start-daemon
step "all tests passed"
