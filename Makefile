# PandaStack build.  `make` builds the agent, the daemon and the CLI into build/.
# Targets: all, images, templates, smoke, unit, check-asan, fuzz, test, clean.
# Each component's sources are every .c in its folder; main.c is the entry
# point and is left out of the component's library so tests can link the rest.

CC       ?= gcc
BUILD    ?= build
CACHE    ?= $(or $(PANDASTACK_CACHE),/var/cache/pandastack)
SAN      ?=
WARN     := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wstrict-prototypes \
            -Wmissing-prototypes -Wvla -Wpointer-arith
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 $(WARN) -fno-strict-aliasing $(SAN)
CPPFLAGS += -Isrc -D_GNU_SOURCE
LDFLAGS  += $(SAN)

COMMON_SRC := $(wildcard src/common/*.c)
ENGINE_SRC := $(wildcard src/engine/*.c)
AGENT_SRC  := $(filter-out src/agent/main.c,$(wildcard src/agent/*.c))
DAEMON_SRC := $(filter-out src/daemon/main.c,$(wildcard src/daemon/*.c))
CLI_SRC    := $(filter-out src/cli/main.c,$(wildcard src/cli/*.c))

obj = $(patsubst src/%.c,$(BUILD)/obj/%.o,$(1))

LIB_COMMON := $(BUILD)/libcommon.a
LIB_ENGINE := $(BUILD)/libengine.a
LIB_AGENT  := $(BUILD)/libagent.a
LIB_DAEMON := $(BUILD)/libdaemon.a
LIB_CLI    := $(BUILD)/libcli.a

# The agent is static: it is PID 1 in an initramfs with no libraries.
# libzmq.a references GSSAPI symbols it only uses when asked to; the agent
# never enables that mechanism and src/agent/gssapi_absent.c answers them.
AGENT_LIBS := -ljansson -lzmq -lsodium -lpgm -lnorm -lprotokit -lbsd -lmd \
              -lcrypto -lstdc++ -lpthread -lm
HOST_LIBS  := -lmicrohttpd -ljansson -lsqlite3 -lcurl -lcrypto -lpthread -lm

PROGRAMS := $(BUILD)/pandastack-agent $(BUILD)/pandastackd $(BUILD)/pandastack

.PHONY: all
all: $(PROGRAMS)

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB_COMMON): $(call obj,$(COMMON_SRC))
$(LIB_ENGINE): $(call obj,$(ENGINE_SRC))
$(LIB_AGENT):  $(call obj,$(AGENT_SRC))
$(LIB_DAEMON): $(call obj,$(DAEMON_SRC))
$(LIB_CLI):    $(call obj,$(CLI_SRC))
$(BUILD)/lib%.a:
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^ $(if $^,,$(BUILD)/obj/empty.o)

$(BUILD)/obj/empty.o:
	@mkdir -p $(dir $@)
	echo 'typedef int pandastack_empty_unit;' | $(CC) -x c -c - -o $@

$(LIB_COMMON) $(LIB_ENGINE) $(LIB_AGENT) $(LIB_DAEMON) $(LIB_CLI): | $(BUILD)/obj/empty.o

$(BUILD)/pandastack-agent: $(call obj,src/agent/main.c) $(LIB_AGENT) $(LIB_COMMON)
	$(CC) -static $(LDFLAGS) -o $@ $^ $(AGENT_LIBS)

$(BUILD)/pandastackd: $(call obj,src/daemon/main.c) $(LIB_DAEMON) $(LIB_ENGINE) $(LIB_COMMON)
	$(CC) $(LDFLAGS) -o $@ $^ $(HOST_LIBS)

$(BUILD)/pandastack: $(call obj,src/cli/main.c) $(LIB_CLI) $(LIB_COMMON)
	$(CC) $(LDFLAGS) -o $@ $^ $(HOST_LIBS)

# --- unit tests (cmocka, no guest) -------------------------------------------
UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
UNIT_LIBS := -Wl,--start-group $(LIB_DAEMON) $(LIB_ENGINE) $(LIB_AGENT) $(LIB_CLI) \
             $(LIB_COMMON) -Wl,--end-group -lcmocka -lzmq $(HOST_LIBS)

$(BUILD)/tests/%: tests/unit/%.c $(LIB_DAEMON) $(LIB_ENGINE) $(LIB_AGENT) $(LIB_CLI) $(LIB_COMMON)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(UNIT_LIBS)

.PHONY: unit
unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

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
	    CFLAGS="-O1 -g" build/fuzz/libcommon.a build/fuzz/libdaemon.a build/fuzz/libengine.a build/fuzz/libagent.a
	$(MAKE) BUILD=build/fuzz CC=clang fuzz-bins

.PHONY: fuzz-bins
fuzz-bins: $(FUZZ_BINS)
build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c
	clang $(CPPFLAGS) -O1 -g -fsanitize=fuzzer,address,undefined -o $@ $< \
	    -Wl,--start-group build/fuzz/libdaemon.a build/fuzz/libengine.a build/fuzz/libagent.a \
	    build/fuzz/libcommon.a -Wl,--end-group -lzmq $(HOST_LIBS)

fuzz: fuzz-build
	@set -e; for f in $(FUZZ_BINS); do \
	    n=$$(basename $$f); mkdir -p build/fuzz/corpus/$$n; \
	    echo "== $$n ($(FUZZ_SECONDS) s)"; \
	    $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 build/fuzz/corpus/$$n tests/fuzz/corpus/$$n; \
	done

.PHONY: clean
clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
