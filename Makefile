# tern - top-level driver for the CMake build.
#   make              build everything into build/ (programs in build/bin/)
#   make test         build and run every test (ctest), installing deps first
#   make demo         the main job: tern beside the Linux kernel, real clients
#   make install      libtern + libtern-linux (static+shared), headers, .pc
#                     files (PREFIX=/usr/local)
#   make install-lib  only the libraries, with only a C compiler and CMake:
#                     no packages installed, no tests, no programs
#   make fuzz         run the libFuzzer harnesses (FUZZ_SECONDS=60 each)
#   make bench        the full benchmark suite
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
DEPS = DEPS_LOG=$(BUILD)/deps.log sh scripts/deps.sh

# $(call configure,DIR,OPTIONS): configure DIR (first time with the
# generator and prefix), keep CMake's output in DIR/configure.log and show
# its summary (what is built, what was skipped and why).
define configure
	@mkdir -p $(1)
	@if [ -f $(1)/CMakeCache.txt ]; then set -- ; else set -- $(GENERATOR) \
	    -DCMAKE_INSTALL_PREFIX=$(PREFIX); fi; \
	cmake -S . -B $(1) "$$@" $(2) >$(1)/configure.log 2>&1 || \
	    { cat $(1)/configure.log; exit 1; }
	@grep '^-- tern:' $(1)/configure.log | sed 's/^-- //'
endef

.PHONY: all deps configure test demo install install-lib fuzz bench clean

all:
	@$(DEPS) build
	$(call configure,$(BUILD),)
	@cmake --build $(BUILD) -j $(JOBS)

deps:
	@$(DEPS) build test demo

configure:
	$(call configure,$(BUILD),)

test:
	@$(DEPS) test
	$(call configure,$(BUILD),-DTERN_BUILD_TESTS=ON -DTERN_BUILD_APPS=ON)
	@cmake --build $(BUILD) -j $(JOBS)
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

demo:
	@$(DEPS) demo
	$(call configure,$(BUILD),-DTERN_BUILD_APPS=ON)
	@cmake --build $(BUILD) -j $(JOBS) --target apps
	@sh scripts/demo.sh $(BUILD)

install: all
	@cmake --install $(BUILD) --prefix $(PREFIX)

install-lib:
	$(call configure,build-lib,-DTERN_BUILD_TESTS=OFF -DTERN_BUILD_APPS=OFF)
	@cmake --build build-lib -j $(JOBS)
	@cmake --install build-lib --prefix $(PREFIX)

fuzz:
	@$(DEPS) test
	@sh scripts/fuzz.sh $(FUZZ_SECONDS)

bench: all
	@python3 tools/tern bench

clean:
	rm -rf $(BUILD) build-*
