# Salvo: `make demo` and `make test` each do all of their own set-up.
SWIFT ?= swift
SWIFT_FLAGS ?=
# A test run silent for SALVO_TEST_SILENCE seconds (300) is stuck: the watchdog prints every
# thread's stack of the test process and kills the run, instead of leaving it to CI's limit.
WATCHDOG ?= ./scripts/run-tests-with-watchdog

.PHONY: all setup build release test test-asan test-tsan demo workload-template cmake cmake-consumer docs clean check-isolation fuzz soak

all: build

setup:
	@./scripts/setup

build: setup
	$(SWIFT) build $(SWIFT_FLAGS)

release: setup
	$(SWIFT) build -c release --product salvo $(SWIFT_FLAGS)

# Swift Testing starts every test of a run at once: on a two-core machine some 900 tests then
# share two cooperative threads, and a test's own bounds (a connect timeout, a wait for a
# stage) can pass while it waits for a thread. Eight at a time costs some 15 s and keeps each
# test's clock honest, with room to spare on a machine busy with other work. (Ignored by a
# Swift Testing without the setting.)
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH ?= 8

# Suites that count the whole process's descriptors and heap: run on their own, one test at a
# time (--no-parallel), before the parallel run that skips them.
ISOLATED_SUITES = 'FDAccountingTests|ChaosTests|ScaleTests'

test: setup
	@$(MAKE) --no-print-directory cmake-consumer
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	SALVO_ISOLATED=1 $(WATCHDOG) $(SWIFT) test --skip-build --no-parallel --filter $(ISOLATED_SUITES) $(SWIFT_FLAGS)
	$(WATCHDOG) $(SWIFT) test --skip-build --skip $(ISOLATED_SUITES) $(SWIFT_FLAGS)

# The engine built by CMake + Ninja, as a project embedding it without SwiftPM would.
cmake: setup
	@if [ -f CMakeLists.txt ]; then \
		cmake -S . -B build/cmake -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && \
		cmake --build build/cmake; \
	fi

# An installed CMake build, and a small project that finds it with find_package(Salvo), links
# Salvo::Salvo and runs (cmake/consumer).
cmake-consumer: cmake
	@rm -rf build/cmake-install build/cmake-consumer
	cmake --install build/cmake --prefix build/cmake-install >/dev/null
	cmake -S cmake/consumer -B build/cmake-consumer -G Ninja -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_PREFIX_PATH=$(CURDIR)/build/cmake-install >/dev/null
	cmake --build build/cmake-consumer
	./build/cmake-consumer/salvo-consumer

# The suite built with a sanitizer, in a scratch folder of its own (the first build: ~9 min),
# its tests one at a time: a sanitized build runs several times slower, and the suite's timed
# expectations (a fallback within 5 s, a cancellation within 8 s) hold for one test at a time,
# not for the whole suite at once. AddressSanitizer (~4 min of tests): memory errors and stack
# overflows, leak checking off (the Swift runtime's own caches read as leaks).
# ThreadSanitizer: data races in the engine's tests (SalvoCoreTests).
SANITIZER_TESTS ?=
test-asan: setup
	$(SWIFT) build --build-tests --sanitize=address --scratch-path .build-asan $(SWIFT_FLAGS)
	SALVO_SANITIZED=address ASAN_OPTIONS=detect_leaks=0 SALVO_ISOLATED=1 $(WATCHDOG) $(SWIFT) test --skip-build --no-parallel \
		--sanitize=address --scratch-path .build-asan --filter $(ISOLATED_SUITES) $(SWIFT_FLAGS)
	SALVO_SANITIZED=address ASAN_OPTIONS=detect_leaks=0 $(WATCHDOG) $(SWIFT) test --skip-build --no-parallel \
		--sanitize=address --scratch-path .build-asan --skip $(ISOLATED_SUITES) $(SANITIZER_TESTS) $(SWIFT_FLAGS)

# -DSALVO_TSAN: each module's `Mutex` becomes one that tells ThreadSanitizer of its locking
# (Sources/SalvoTransport/ThreadSanitizerAnnotations.swift), which the standard library's futex hides from it.
TSAN_FLAGS = --sanitize=thread --scratch-path .build-tsan -Xswiftc -DSALVO_TSAN
test-tsan: setup
	$(SWIFT) build --build-tests $(TSAN_FLAGS) $(SWIFT_FLAGS)
	SALVO_SANITIZED=thread TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/scripts/tsan-suppressions" $(WATCHDOG) $(SWIFT) test --skip-build --no-parallel \
		$(TSAN_FLAGS) --filter SalvoCoreTests --skip $(ISOLATED_SUITES) \
		$(SANITIZER_TESTS) $(SWIFT_FLAGS)

# A million requests through the engine and 100,000 through the typed layer against a private
# nginx, resident memory and descriptors sampled: both flat within 5% after the warm-up
# (scripts/soak; ENGINE_REQUESTS, TYPED_REQUESTS, CONCURRENCY). About two minutes here.
soak: setup
	$(SWIFT) build -c release --product soak $(SWIFT_FLAGS)
	./scripts/soak

demo: release
	$(SWIFT) build -c release --product TypedClientDemo $(SWIFT_FLAGS)
	$(SWIFT) build -c release --product workload-demo $(SWIFT_FLAGS)
	./scripts/demo

# Templates/Workload built as a user builds it, in a scratch folder of its own (the first
# build compiles the load generator: a few minutes), then run briefly against nginx.
workload-template: setup
	./scripts/check-workload-template

# The DocC catalogs (Sources/<Module>/<Module>.docc) with the guides of docs/ as their
# articles (scripts/docs.py), into one static site in build/docs: open build/docs/index.html
# through any static web server (`python3 -m http.server -d build/docs`).
DOC_TARGETS = Salvo SalvoCore SalvoTransport SalvoLoad SalvoMacros SalvoServiceLifecycle SalvoOpenAPI SalvoObservability
docs: setup
	python3 scripts/docs.py
	@mkdir -p build
	$(SWIFT) package --allow-writing-to-directory build/docs generate-documentation \
		--enable-experimental-combined-documentation $(addprefix --target ,$(DOC_TARGETS)) \
		--output-path build/docs --transform-for-static-hosting $(SWIFT_FLAGS)
	@test -f build/docs/index.html && echo "docs: build/docs/index.html"

# The command line and the engine never build swift-syntax (only SalvoMacros needs it): build
# the salvo product alone in a scratch folder and look for any of swift-syntax's objects.
check-isolation: setup
	@rm -rf .build-isolation
	$(SWIFT) build --product salvo --scratch-path .build-isolation $(SWIFT_FLAGS)
	@if find .build-isolation -name '*.o' -path '*Syntax*' | grep -q .; then \
		echo "check-isolation: building salvo compiled swift-syntax"; exit 1; \
	else echo "check-isolation: salvo builds without swift-syntax"; fi
	@rm -rf .build-isolation

# The libFuzzer targets of Fuzz/ (a package of its own), each run for FUZZ_SECONDS (60) from
# its seeds in a scratch corpus under build/fuzz; FUZZ_TARGETS picks some (Fuzz/README.md).
# Fails if any finds a crash, a broken invariant, a memory error or a timeout: the inputs go to
# build/fuzz/artifacts/<target>/. The first build (AddressSanitizer + libFuzzer): a few minutes.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz: setup
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_TARGETS="$(FUZZ_TARGETS)" SWIFT="$(SWIFT)" SWIFT_FLAGS="$(SWIFT_FLAGS)" ./scripts/fuzz

clean:
	rm -rf .build build
