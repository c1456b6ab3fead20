# tern - top-level driver for the CMake build.
#   make          build everything into build/ (programs in build/bin/)
#   make test     build and run every test (ctest), installing deps first
#   make demo     the main job: tern beside the Linux kernel, real clients
#   make install  libtern (static+shared), tern.h, tern.pc (PREFIX=/usr/local)
#   make fuzz     run the libFuzzer harnesses (FUZZ_SECONDS=60 each)
#   make bench    the full benchmark suite
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")

.PHONY: all deps configure test demo install fuzz bench clean

all: configure
	@cmake --build $(BUILD) -j $(JOBS)

deps:
	@sh scripts/deps.sh

configure: deps
	@test -f $(BUILD)/CMakeCache.txt || \
	  cmake -S . -B $(BUILD) $(GENERATOR) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null

test: all
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

demo: all
	@sh scripts/demo.sh $(BUILD)

install: all
	@cmake --install $(BUILD) --prefix $(PREFIX)

fuzz: deps
	@sh scripts/fuzz.sh $(FUZZ_SECONDS)

bench: all
	@python3 tools/tern bench

clean:
	rm -rf $(BUILD) build-*
