# PandaStack build.  `make` builds the agent, the daemon and the CLI into build/.
# `make help` prints this list.
#
# Need neither root nor a guest:
#   all                build/pandastackd, pandastack, pandastack-agent, pandastack-engine
#   check              check-layers, check-symbols, unit, check-asan and a short run of every
#                      fuzz target (CHECK_FUZZ_SECONDS each): what to run before a commit
#   test               the same as check
#   unit               the unit tests (tests/unit, cmocka)
#   check-asan         the unit tests under AddressSanitizer and UndefinedBehaviorSanitizer
#   check-symbols      fails when two of the libraries define the same global symbol
#   check-layers       fails when an include of src/ runs against its layers
#                      (docs/architecture.md)
#   fuzz               every fuzz target (tests/fuzz, clang's libFuzzer), FUZZ_SECONDS each
#   test-sdk           the Python and TypeScript SDKs against local fake servers
#   sdk-ts-build       the TypeScript SDK's dist/ (npm ci on first use)
#   web                the dashboard (web/), bundled into build/web
#   api-errors         writes the SDKs' error tables from src/daemon/api_errors.def
#   check-api-errors   fails when those tables are stale
#   lint-openapi       docs/openapi.yaml through Redocly's OpenAPI 3.1 linter
#   check-k8s          deploy/kubernetes/ against Kubernetes' schemas and kubectl
#   bench-agent bench-kernel   the agent protocol and code contexts on the host
#   clean
# Build or run guests (images need root; CACHE, default /var/cache/pandastack,
# keeps images and templates):
#   images templates   guest images, then every template baked from them
#   smoke              one sandbox: create, run python, stop
#   test-engine        the engine on real guests (tests/engine)
#   test-integration   the daemon, the CLI, the SDKs over https and the images
#                      (tests/integration, pytest)
#   test-cluster       three nodes and three etcd members in network namespaces
#                      (tests/cluster, docs/cluster.md)
#   test-web           the dashboard in chromium against a live daemon
#   test-agents        the MCP server with the MCP SDK's client (tests/mcp) and the
#                      framework recipes (examples/), against one daemon it starts
#   conformance-python the Python SDK's document examples against a daemon it starts
#   bench-create bench-api bench-contexts bench-density bench-ports bench-network
#   bench-cluster bench-fork bench-edge   figures (bench/)
# The whole CI, as root on a fresh host: bash scripts/test.sh

# Each component's sources are every .c in its folder; main.c is the entry
# point and is left out of the component's library so tests can link the rest.

CC       ?= gcc
BUILD    ?= build
CACHE    ?= $(or $(PANDASTACK_CACHE),/var/cache/pandastack)
SAN      ?=
WARN     := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wstrict-prototypes \
            -Wmissing-prototypes -Wvla -Wpointer-arith
# CFLAGS (optimisation, debug info) may be set on the command line, as
# check-asan and fuzz-build do; the flags below are added to it all the same.
CFLAGS   ?= -O2 -g
override CFLAGS   += -std=gnu11 $(WARN) -fno-strict-aliasing $(SAN) -ffile-prefix-map=$(CURDIR)=.
override CPPFLAGS += -Isrc -D_GNU_SOURCE
override LDFLAGS  += $(SAN)

COMMON_SRC := $(wildcard src/common/*.c)
ENGINE_SRC := $(wildcard src/engine/*.c src/engine/*/*.c)
AGENT_SRC  := $(filter-out src/agent/main.c,$(wildcard src/agent/*.c src/agent/*/*.c))
DAEMON_SRC := $(filter-out src/daemon/main.c,$(wildcard src/daemon/*.c src/daemon/*/*.c))
CLI_SRC    := $(filter-out src/cli/main.c,$(wildcard src/cli/*.c))
MCP_SRC    := $(wildcard src/mcp/*.c)
CLIENT_SRC := $(wildcard src/client/*.c)

obj = $(patsubst src/%.c,$(BUILD)/obj/%.o,$(1))

LIB_COMMON := $(BUILD)/libcommon.a
LIB_ENGINE := $(BUILD)/libengine.a
LIB_AGENT  := $(BUILD)/libagent.a
LIB_DAEMON := $(BUILD)/libdaemon.a
LIB_CLI    := $(BUILD)/libcli.a
LIB_MCP    := $(BUILD)/libmcp.a
LIB_CLIENT := $(BUILD)/libclient.a

# The agent is static: it is PID 1 in an initramfs with no libraries.
# libzmq.a references GSSAPI symbols it only uses when asked to; the agent
# never enables that mechanism and src/agent/gssapi_absent.c answers them.
AGENT_LIBS := -ljansson -lzmq -lsodium -lpgm -lnorm -lprotokit -lbsd -lmd \
              -lcrypto -lstdc++ -lpthread -lm
HOST_LIBS  := -lmicrohttpd -ljansson -lsqlite3 -lcurl -lcrypto -lnftables -lcares -lhttp_parser -lpthread -lm

PROGRAMS := $(BUILD)/pandastack-agent $(BUILD)/pandastackd $(BUILD)/pandastack \
            $(BUILD)/pandastack-engine

# The C benchmarks build with everything, so a change that breaks one fails
# the build, not the next person who runs it.
BENCH_BINS := $(BUILD)/bench/create $(BUILD)/bench/agent $(BUILD)/bench/kernel

.PHONY: all help
all: $(PROGRAMS) $(BENCH_BINS)

help:
	@sed -n '1,/^$$/s/^# \{0,1\}//p' Makefile

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB_COMMON): $(call obj,$(COMMON_SRC))
$(LIB_ENGINE): $(call obj,$(ENGINE_SRC))
$(LIB_AGENT):  $(call obj,$(AGENT_SRC))
$(LIB_DAEMON): $(call obj,$(DAEMON_SRC))
$(LIB_CLI):    $(call obj,$(CLI_SRC))
$(LIB_MCP):    $(call obj,$(MCP_SRC))
$(LIB_CLIENT): $(call obj,$(CLIENT_SRC))
$(BUILD)/lib%.a:
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^ $(if $^,,$(BUILD)/obj/empty.o)

$(BUILD)/obj/empty.o:
	@mkdir -p $(dir $@)
	echo 'typedef int pandastack_empty_unit;' | $(CC) -x c -c - -o $@

$(LIB_COMMON) $(LIB_ENGINE) $(LIB_AGENT) $(LIB_DAEMON) $(LIB_CLI) $(LIB_MCP) $(LIB_CLIENT): \
    | $(BUILD)/obj/empty.o

# gssapi_absent.o is named as an object, not taken from libagent.a: the
# archive is scanned before libzmq.a asks for the GSSAPI symbols.
$(BUILD)/pandastack-agent: $(call obj,src/agent/main.c) $(call obj,src/agent/gssapi_absent.c) \
                           $(LIB_AGENT) $(LIB_COMMON)
	$(CC) -static $(LDFLAGS) -o $@ $^ $(AGENT_LIBS)

# The same agent linked dynamically, for the host tests (tests/unit/
# test_agent_*.c run it with --listen): sanitizer builds cannot be static.
$(BUILD)/pandastack-agent-dyn: $(call obj,src/agent/main.c) $(LIB_AGENT) $(LIB_COMMON)
	$(CC) $(LDFLAGS) -o $@ $^ -ljansson -lzmq -lcrypto -lpthread -lm

# POST /mcp serves the MCP core (libmcp) whose backend is the REST client
# (libclient), pointed back at the daemon itself (src/daemon/api/api_mcp.c says why).
$(BUILD)/pandastackd: $(call obj,src/daemon/main.c) $(LIB_DAEMON) $(LIB_ENGINE) $(LIB_MCP) \
                      $(LIB_CLIENT) $(LIB_COMMON)
	$(CC) $(LDFLAGS) -o $@ $^ $(HOST_LIBS)

# The MCP server (libmcp) is `pandastack mcp`; the CLI and the MCP server's
# REST backend share the REST client (libclient).
$(BUILD)/pandastack: $(call obj,src/cli/main.c) $(LIB_CLI) $(LIB_MCP) $(LIB_CLIENT) $(LIB_COMMON)
	$(CC) $(LDFLAGS) -o $@ $^ $(HOST_LIBS)

# The engine's operator tool (bake, bake-all, smoke, accel).
ENGINE_LIBS := $(HOST_LIBS)
$(BUILD)/pandastack-engine: $(call obj,src/enginectl/main.c) $(LIB_ENGINE) $(LIB_COMMON)
	$(CC) $(LDFLAGS) -o $@ $^ $(ENGINE_LIBS)

# --- guest images (needs root; minutes cold, a second or two when cached) -----
# images/README.md.  IMAGES_AGENT: the static /init to pack (default: the
# agent, built first); IMAGE_TEMPLATES: names to build (default: all).
IMAGES_AGENT    ?= $(BUILD)/pandastack-agent
IMAGE_TEMPLATES ?=

.PHONY: images images-prune
images: $(IMAGES_AGENT)
	images/build.sh --cache $(CACHE)/images --agent $(IMAGES_AGENT) $(IMAGE_TEMPLATES)

# The same, then delete cached images nothing refers to any more.
images-prune: $(IMAGES_AGENT)
	images/build.sh --cache $(CACHE)/images --agent $(IMAGES_AGENT) --prune $(IMAGE_TEMPLATES)

# --- templates (boot each image, warm it, snapshot it; minutes under TCG) ----
# Bakes every template with a manifest that is missing or stale.
.PHONY: templates smoke
templates: images $(BUILD)/pandastack-engine
	$(BUILD)/pandastack-engine --cache $(CACHE) bake-all

# Create a sandbox from code-interpreter, run python in it, stop it.
smoke: $(BUILD)/pandastack-engine
	$(BUILD)/pandastack-engine --cache $(CACHE) smoke

# --- engine integration tests and benchmarks (real guests; need templates) ---
ENGINE_TEST_SRC  := $(wildcard tests/engine/test_*.c)
ENGINE_TEST_BINS := $(patsubst tests/engine/%.c,$(BUILD)/tests/engine/%,$(ENGINE_TEST_SRC))

$(BUILD)/tests/engine/%: tests/engine/%.c $(LIB_ENGINE) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_ENGINE) $(LIB_COMMON) -lcmocka $(ENGINE_LIBS)

.PHONY: test-engine
test-engine: $(ENGINE_TEST_BINS)
	@set -e; for t in $(ENGINE_TEST_BINS); do echo "== $$t"; PANDASTACK_CACHE=$(CACHE) $$t; done

$(BUILD)/bench/%: bench/%.c $(LIB_ENGINE) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_ENGINE) $(LIB_COMMON) $(ENGINE_LIBS)

# The agent protocol's own cost on the host: exec round trip, upload,
# download and stdout throughput against local peers (bench/agent.c).
.PHONY: bench-agent
bench-agent: $(BUILD)/bench/agent $(BUILD)/pandastack-agent
	PANDASTACK_AGENT_BIN=$(BUILD)/pandastack-agent $(BUILD)/bench/agent

# bench/create also times creates through a pandastackd's REST API.
$(BUILD)/bench/create: bench/create.c bench/bench_rest.c bench/bench_rest.h $(LIB_ENGINE) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ bench/create.c bench/bench_rest.c $(LIB_ENGINE) $(LIB_COMMON) $(ENGINE_LIBS)

.PHONY: bench-create
bench-create: $(BUILD)/bench/create $(BUILD)/pandastackd
	PANDASTACK_CACHE=$(CACHE) BENCH_DAEMON=$(BUILD)/pandastackd $(BUILD)/bench/create

# Code contexts on the host (python3 with ipykernel): start times, 1+1 round
# trips, and jupyter_client's round trip for comparison.
$(BUILD)/bench/kernel: bench/kernel_bench.c $(LIB_AGENT) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_AGENT) $(LIB_COMMON) -ljansson -lzmq -lcrypto -lpthread -lm

.PHONY: bench-kernel
bench-kernel: $(BUILD)/bench/kernel
	$(BUILD)/bench/kernel

# --- pytest suites in tests/integration (the daemon's REST API over HTTP, the
# CLI, ...; tests needing VMs skip without baked templates) and the REST API
# load benchmark (bench/api.py: 50 clients x exec on 10 sandboxes, 60 s) -----
PYTHON ?= /usr/bin/python3

.PHONY: test-integration bench-api
test-integration: $(BUILD)/pandastackd $(BUILD)/pandastack sdk-ts-build
	PANDASTACK_CACHE=$(CACHE) $(PYTHON) -m pytest -q tests/integration

# The cluster on one machine (tests/cluster, docs/cluster.md): three etcd
# members and three daemons in network namespaces of their own; needs root.
.PHONY: test-cluster bench-cluster
test-cluster: $(BUILD)/pandastackd
	PANDASTACK_CACHE=$(CACHE) $(PYTHON) -m pytest -q -p no:cacheprovider tests/cluster

bench-cluster: $(BUILD)/pandastackd
	PANDASTACK_CACHE=$(CACHE) $(PYTHON) bench/cluster.py

bench-api: $(BUILD)/pandastackd
	PANDASTACK_CACHE=$(CACHE) $(PYTHON) bench/api.py

# The API's edge (bench/edge.py): a request over plain HTTP and HTTPS, and
# under 300 slow connections of the same address; no guests needed.
.PHONY: bench-edge
bench-edge: $(BUILD)/pandastackd
	$(PYTHON) bench/edge.py

# N idle sandboxes on one host (bench/density.py): MemAvailable drop, PSS
# and idle CPU per sandbox, the N+1st create and exec, GET /v1/sandboxes.
# DENSITY_N: the sizes (50; e.g. "50 100 200").
DENSITY_N ?= 50
.PHONY: bench-density
bench-density: $(BUILD)/pandastackd
	PANDASTACK_CACHE=$(CACHE) $(PYTHON) bench/density.py --n $(DENSITY_N)

# Exposed ports (bench/ports.py): 50 MiB each way through the daemon against
# the same server reached inside the sandbox's namespace, MB/s and ratio.
.PHONY: bench-ports
bench-ports: $(BUILD)/pandastackd
	PANDASTACK_CACHE=$(CACHE) $(PYTHON) bench/ports.py

# Snapshots, forks, pause and resume through the daemon (bench/fork.py), against
# the template create of the same run.
.PHONY: bench-fork
bench-fork: $(BUILD)/pandastackd
	PANDASTACK_CACHE=$(CACHE) $(PYTHON) bench/fork.py

# Code contexts through the daemon (bench/contexts.py): 1+1 in a warm context
# (median of 200), first/second context create, create-sandbox-to-first-1+1,
# and exec of python3 -c as the peer.
.PHONY: bench-contexts
bench-contexts: $(BUILD)/pandastackd
	PANDASTACK_CACHE=$(CACHE) $(PYTHON) bench/contexts.py

# The sandbox network (bench/network.py, needs root): the time the NIC adds to
# a create, and downloads through the daemon's proxy, from the sandbox's
# namespace and from the guest, against the same download on the host, in a
# fake internet of network namespaces.
.PHONY: bench-network
bench-network: $(BUILD)/pandastackd
	PANDASTACK_CACHE=$(CACHE) $(PYTHON) bench/network.py

# --- the API's error table (src/daemon/api_errors.def) written into the SDKs'
# tables by scripts/api_errors.py; check-api-errors fails when one is stale --
.PHONY: api-errors check-api-errors
api-errors:
	$(PYTHON) scripts/api_errors.py

check-api-errors:
	$(PYTHON) scripts/api_errors.py --check

# --- docs/openapi.yaml through Redocly's OpenAPI 3.1 linter, the version pinned
# by tools/openapi-lint/package-lock.json (rules: tools/openapi-lint/redocly.yaml)
.PHONY: lint-openapi
lint-openapi:
	cd tools/openapi-lint && { [ -x node_modules/.bin/redocly ] || npm ci --no-audit --no-fund --loglevel=error; } && \
	    REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true node_modules/.bin/redocly lint \
	    --format=stylish ../../docs/openapi.yaml

# --- deploy/kubernetes/ against the Kubernetes API's schemas, and through
# `kubectl apply --dry-run=client` where kubectl is installed (check.sh says how)
.PHONY: check-k8s
check-k8s:
	deploy/kubernetes/check.sh

# --- the TypeScript SDK (sdk/typescript): tsc build, then node --test against
# local fake servers (docs/sdk-typescript.md) ----------------------------------
# (sdk-ts-build: dist/ only, which the integration tests' node scripts import)
.PHONY: sdk-ts-build test-sdk-ts test-sdk
sdk-ts-build:
	cd sdk/typescript && { [ -x node_modules/.bin/tsc ] || npm ci --no-audit --no-fund --loglevel=error; } && npm run --silent build

test-sdk-ts: sdk-ts-build
	cd sdk/typescript && npm test

test-sdk: check-api-errors test-sdk-python test-sdk-ts

# --- the web dashboard (web/, docs/dashboard.md): TypeScript bundled by
# esbuild into $(BUILD)/web, which pandastackd serves at / (--web-dir; its
# default is web/ beside the binary).  test-web drives Debian's chromium
# against a live daemon on real guests (needs the code-interpreter template).
WEB_OUT := $(BUILD)/web
WEB_NPM := web/node_modules/.package-lock.json

$(WEB_NPM): web/package.json web/package-lock.json
	cd web && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error

.PHONY: web test-web
web: $(WEB_NPM)
	cd web && node_modules/.bin/tsc -p tsconfig.json && node build.mjs --outdir $(abspath $(WEB_OUT))

test-web: web $(BUILD)/pandastackd
	cd web && PANDASTACK_CACHE=$(CACHE) PANDASTACKD=$(abspath $(BUILD)/pandastackd) \
	    PANDASTACK_WEB_DIR=$(abspath $(WEB_OUT)) \
	    PANDASTACK_SCREENSHOTS=$(abspath $(BUILD))/web-screenshots node --test tests/

# --- agents: the MCP server (pandastack mcp, POST /mcp) with the official MCP
# SDK's client (tests/mcp) and the framework recipes with their mock models
# (examples/*), against one daemon on real guests (docs/mcp.md) -------------
.PHONY: test-agents
test-agents: $(BUILD)/pandastackd $(BUILD)/pandastack
	PANDASTACK_CACHE=$(CACHE) PANDASTACK_CLI=$(abspath $(BUILD)/pandastack) \
	    scripts/run-agent-tests.sh --start-daemon

# --- the Python SDK (sdk/python): unit tests against a local fake server, and
# the conformance examples against a daemon it starts (docs/sdk-python.md) ----
.PHONY: test-sdk-python conformance-python
test-sdk-python:
	$(PYTHON) -m pytest -q -p no:cacheprovider sdk/python/tests

conformance-python: $(BUILD)/pandastackd
	PANDASTACK_CACHE=$(CACHE) PYTHON=$(PYTHON) scripts/run-conformance-python.sh --start-daemon

# --- unit tests (cmocka, no guest) -------------------------------------------
# Each unit test and fuzz target links only the libraries of the module it
# tests (and libcommon), never all of them: a test cannot then resolve a symbol
# from a library it does not test.  Which libraries, by the test's name:
#   test_cli_*  fuzz_cli*                            libcli libclient
#   test_mcp_*  fuzz_mcp*                            libmcp libclient (its REST backend)
#   test_daemon_*  test_web_*  test_net_*  fuzz_api_*  fuzz_net_*
#                                                    libdaemon libengine libmcp libclient
#   test_cluster_*  fuzz_cluster_*                   (the same)
#                                                    (POST /mcp serves the MCP core)
#   test_agent_* (the host's agent client against the agent binary),
#   test_guest_* (the host's agent client against a fake agent),
#   test_qmp*  test_qemu_*  test_spawn*  test_netslot*  test_snapshot_*
#   fuzz_qmp*  fuzz_engine_*                        libengine
#   test_jupyter_*  test_kernel*  test_netconf*  fuzz_agent_*  fuzz_jupyter_* libagent
#   any other name (test_proto, fuzz_proto, ...)     libcommon only
# A new test is named after the module it tests and so links its libraries; a
# test of a new module adds its name pattern here.
TESTS_OF_DAEMON := test_daemon_% test_web_% test_net_% fuzz_api_% fuzz_net_% \
                   test_cluster_% fuzz_cluster_%
TESTS_OF_MCP    := test_mcp_% fuzz_mcp% $(TESTS_OF_DAEMON)
TESTS_OF_CLI    := test_cli_% fuzz_cli%
TESTS_OF_CLIENT := $(TESTS_OF_CLI) $(TESTS_OF_MCP)
TESTS_OF_ENGINE := test_agent_% test_guest_% test_qmp% test_qemu_% test_spawn% test_netslot% fuzz_qmp% \
                   fuzz_engine_% test_snapshot_% \
                   $(TESTS_OF_DAEMON)
TESTS_OF_AGENT  := test_jupyter_% test_kernel% test_netconf% fuzz_agent_% fuzz_jupyter_%
# test_libs NAME,DIR: the archives in DIR that test NAME links, in link order.
test_libs = $(strip $(if $(filter $(TESTS_OF_DAEMON),$1),$2/libdaemon.a) \
                    $(if $(filter $(TESTS_OF_ENGINE),$1),$2/libengine.a) \
                    $(if $(filter $(TESTS_OF_AGENT),$1),$2/libagent.a) \
                    $(if $(filter $(TESTS_OF_CLI),$1),$2/libcli.a) \
                    $(if $(filter $(TESTS_OF_MCP),$1),$2/libmcp.a) \
                    $(if $(filter $(TESTS_OF_CLIENT),$1),$2/libclient.a) $2/libcommon.a)
TEST_EXTERNAL_LIBS := -lzmq $(HOST_LIBS)

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))

$(foreach t,$(UNIT_BINS),$(eval $t: $(call test_libs,$(notdir $t),$(BUILD))))
$(BUILD)/tests/%: tests/unit/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -MMD -MP -o $@ $< $(filter %.a,$^) -lcmocka \
	    $(TEST_EXTERNAL_LIBS)

.PHONY: unit
unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

# Host tests of the agent start the agent binary next to them.
$(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_agent_*.c)): \
    $(BUILD)/pandastack-agent-dyn

# The same unit tests under AddressSanitizer and UndefinedBehaviorSanitizer.
.PHONY: check-asan
check-asan:
	$(MAKE) BUILD=build/asan SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    CFLAGS="-O1 -g" unit

# --- fuzz targets (libFuzzer, clang) -----------------------------------------
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))
FUZZ_SECONDS ?= 30

.PHONY: fuzz-build fuzz
fuzz-build:
	$(MAKE) BUILD=build/fuzz CC=clang SAN="-fsanitize=fuzzer-no-link,address,undefined" \
	    CFLAGS="-O1 -g" fuzz-bins

.PHONY: fuzz-bins
fuzz-bins: $(FUZZ_BINS)
$(foreach f,$(FUZZ_BINS),$(eval $f: $(call test_libs,$(notdir $f),build/fuzz)))
build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c
	clang $(CPPFLAGS) -O1 -g -fsanitize=fuzzer,address,undefined -o $@ $< \
	    $(filter %.a,$^) $(TEST_EXTERNAL_LIBS)

fuzz: fuzz-build
	@set -e; for f in $(FUZZ_BINS); do \
	    n=$$(basename $$f); mkdir -p build/fuzz/corpus/$$n; \
	    echo "== $$n ($(FUZZ_SECONDS) s)"; \
	    $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 build/fuzz/corpus/$$n tests/fuzz/corpus/$$n; \
	done

# --- what to run before a commit (no root, no guest) --------------------------
# The programs link different sets of the libraries, so a global symbol defined
# twice would not always fail a link: check-symbols fails on it instead.
LIBS := $(LIB_COMMON) $(LIB_ENGINE) $(LIB_AGENT) $(LIB_DAEMON) $(LIB_CLI) $(LIB_MCP) $(LIB_CLIENT)
.PHONY: check-symbols
check-symbols: $(LIBS)
	@nm -A -g --defined-only $^ | awk 'NF == 3 { n[$$3]++; where[$$3] = where[$$3] " " $$1 } \
	    END { for (s in n) if (n[s] > 1) { print "defined twice: " s ":" where[s]; bad = 1 } \
	          exit bad }'

# The layers of src/ (docs/architecture.md): no include of another folder's
# _int.h, none that runs up a layer, no circle; with its positive control.
.PHONY: check-layers
check-layers:
	$(PYTHON) scripts/check_layers.py --self-test

CHECK_FUZZ_SECONDS ?= 5
.PHONY: check test
check: check-layers check-symbols
	$(MAKE) unit
	$(MAKE) check-asan
	$(MAKE) fuzz FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS)

test: check

.PHONY: clean
clean:
	rm -rf build

-include $(shell find $(BUILD)/obj $(BUILD)/tests -name '*.d' 2>/dev/null)
