# Thin wrapper over meson. The build directory is build/.
#   make build   install missing Debian packages, configure once, compile
#   make run     build, then start the daemon with its data in ./data (ARGS="..." adds flags)
#   make test    build, then run every test suite (last line: "N passed, M failed")
#   make bench   build, then run every benchmark scenario (BENCH_ARGS="--large" for 10,000 webhooks)
#   make clean   remove build/
BUILD_DIR := build
DATA_DIR ?= $(CURDIR)/data
ARGS ?=
BENCH_ARGS ?=

.PHONY: all deps build run test bench clean

all: build

deps:
	@bash scripts/install-deps

build: deps
	@test -f $(BUILD_DIR)/build.ninja || meson setup $(BUILD_DIR) --wrap-mode=nodownload
	meson compile -C $(BUILD_DIR)

# DATA_DIR is exported to the daemon only, so tests never see it.
run: build
	@mkdir -p "$(DATA_DIR)"
	DATA_DIR="$(DATA_DIR)" exec ./$(BUILD_DIR)/app/webhooker serve $(ARGS)

test: build
	bash scripts/run-tests

# Prints the table and writes build/bench/results.json; exits non-zero only
# if a correctness check failed.
bench: build
	WEBHOOKER_BIN=$(BUILD_DIR)/app/webhooker ./$(BUILD_DIR)/bench/webhooker_bench \
		--out $(BUILD_DIR)/bench/results.json $(BENCH_ARGS)

clean:
	rm -rf $(BUILD_DIR)
