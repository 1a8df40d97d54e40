# Thin wrapper over meson. The build directory is build/.
#   make run     install the daemon's missing build packages only, compile the
#                daemon, then start it with its data in ./data (ARGS="..." adds flags)
#   make build   install missing Debian packages (the test toolchain too: the
#                browser test's npm packages), configure once, compile everything
#   make test    build, then run every test suite (last line: "N passed, M failed")
#   make test-sanitizers   the suite and each fuzzer for a few seconds under
#                ASan+UBSan, the engine tests under TSan
#   make fuzz    run each fuzzer for FUZZ_SECONDS (default 300)
#   make bench   build, then run every benchmark scenario (BENCH_ARGS="--large" for 10,000 webhooks)
#   make deb     build the Debian package in build-deb/ (dpkg-buildpackage) and check it with lintian
#   make deb-test  as root: install that package with dpkg -i, start its service, purge it
#   make clean   remove build/
BUILD_DIR := build
DATA_DIR ?= $(CURDIR)/data
ARGS ?=
BENCH_ARGS ?=

.PHONY: all deps test-deps setup test-setup build daemon run test bench deb deb-test clean

all: build

# What the daemon needs to build and run (scripts/debian-packages-build.txt);
# the test toolchain (test-deps) only for the targets that build or run tests.
deps:
	@bash scripts/install-deps build

test-deps:
	@bash scripts/install-deps test

setup: deps
	@test -f $(BUILD_DIR)/build.ninja || meson setup $(BUILD_DIR) --wrap-mode=nodownload

# A build/ configured by `make run` before doctest was installed has no tests
# (tests=auto): configure it again once the test packages are there.
test-setup: test-deps setup
	@grep -q webhooker_tests $(BUILD_DIR)/build.ninja || \
	    meson setup --reconfigure $(BUILD_DIR) --wrap-mode=nodownload

build: test-setup
	meson compile -C $(BUILD_DIR)

# The daemon alone: a first start does not wait for the tests and benchmarks.
daemon: setup
	meson compile -C $(BUILD_DIR) app/webhooker

# DATA_DIR is exported to the daemon only, so tests never see it.
run: daemon
	@mkdir -p "$(DATA_DIR)"
	DATA_DIR="$(DATA_DIR)" exec ./$(BUILD_DIR)/app/webhooker serve $(ARGS)

test: build
	bash scripts/run-tests -C $(BUILD_DIR)

# Prints the table and writes build/bench/results.json; exits non-zero only
# if a correctness check failed.
bench: build
	WEBHOOKER_BIN=$(BUILD_DIR)/app/webhooker WEBHOOKER_SOURCE_DIR=$(CURDIR) \
		./$(BUILD_DIR)/bench/webhooker_bench \
		--out $(BUILD_DIR)/bench/results.json $(BENCH_ARGS)

# Compiles everything again, in a copy of the working tree in build-deb/src,
# so not part of `make test`; dpkg-buildpackage leaves the .deb beside that
# copy, in build-deb/.
DEB_DIR := build-deb
deb:
	@bash scripts/install-deps deb
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src
	git ls-files --cached --others --exclude-standard | tar -cf - -T - | tar -xf - -C $(DEB_DIR)/src
	cd $(DEB_DIR)/src && dpkg-buildpackage -b -us -uc
	lintian --info $(DEB_DIR)/*.changes

# Installs the package on this machine and purges it again (tests/package/deb_test.py);
# skipped (exit 77) unless root, and where a webhooker package is installed already.
deb-test:
	WEBHOOKER_SOURCE_DIR=$(CURDIR) PYTHONDONTWRITEBYTECODE=1 python3 tests/package/deb_test.py \
	    || test $$? -eq 77

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_DIR) $(TSAN_DIR) $(DEB_DIR)

# Fuzzing: libFuzzer targets in fuzz/, built with clang, ASan and UBSan in
# build-fuzz/. `make test-sanitizers` runs each for a few seconds; `make fuzz` for
# FUZZ_SECONDS each (see docs/testing.md). Its layers compile in unity batches
# of twelve files, not six: a batch compiles the shared JSON and HTTP templates
# once, and this tree is built whole, not edited file by file (the server
# layer took 192 -> 143 CPU s).
FUZZ_DIR := build-fuzz
FUZZ_SECONDS ?= 300

.PHONY: fuzz-build fuzz

fuzz-build: test-deps
	@test -f $(FUZZ_DIR)/build.ninja || CC=clang CXX=clang++ meson setup $(FUZZ_DIR) \
	    --wrap-mode=nodownload -Dfuzzing=enabled \
	    -Db_sanitize=address,undefined -Db_lundef=false -Doptimization=1 -Ddebug=false \
	    -Dcpp_args=-gline-tables-only -Dunity_size=12
	meson compile -C $(FUZZ_DIR) fuzzers

fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) meson test -C $(FUZZ_DIR) --no-rebuild --suite fuzz \
	    --timeout-multiplier 0 --print-errorlogs

# Sanitizers: every test and each fuzzer's short run under ASan+UBSan in
# build-fuzz/ (clang; the layers are compiled once there for both; the test
# code itself is not instrumented, only what it runs: tests/meson.build),
# and the tests that run threads of the engine and targets layers under TSan
# in build-tsan/ (gcc; a test with one thread cannot race: the `tsan` suite
# of tests/meson.build lists them). The TSan build also compiles each .cpp on
# its own (unity=off), which proves every file includes what it uses; the
# unity batches of the other builds would hide a missing include. -O1 and
# line tables only keep the builds short; gcc's sanitizers make
# -Wmaybe-uninitialized report false positives inside libstdc++'s <regex>,
# which werror would turn into a failed build, and gcc's -Wtsan flags the
# std::atomic_thread_fence inside Asio's handler dispatch (TSan does not model
# fences; the handoff it orders is also ordered by Asio's mutex). Any sanitizer
# report fails its test. See docs/testing.md.
TSAN_DIR := build-tsan
TSAN_SETUP := --wrap-mode=nodownload -Doptimization=1 -Ddebug=false -Dunity=off \
    -Dcpp_args="['-g1', '-Wno-maybe-uninitialized', '-Wno-tsan']" -Db_sanitize=thread

.PHONY: test-sanitizers

test-sanitizers: fuzz-build
	@test -f $(TSAN_DIR)/build.ninja || meson setup $(TSAN_DIR) $(TSAN_SETUP)
	@meson introspect --buildoptions $(TSAN_DIR) | python3 -c 'import json, sys; \
	    sys.exit(not any(o["name"] == "unity" and o["value"] == "off" for o in json.load(sys.stdin)))' \
	    || meson configure $(TSAN_DIR) -Dunity=off  # a folder set up before unity=off
	meson compile -C $(FUZZ_DIR)
	meson compile -C $(TSAN_DIR) app/webhooker tests/webhooker_tests
	ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	TSAN_OPTIONS="second_deadlock_stack=1:suppressions=$(CURDIR)/scripts/tsan.supp" \
	    bash scripts/run-tests -C $(FUZZ_DIR) --no-rebuild \
	    -C $(TSAN_DIR) --no-rebuild --suite tsan
