# Quick start: `make run` (build and do a real multi-lane transfer) and `make test`.
BUILD ?= build
JOBS  ?= $(shell nproc)
# The libFuzzer targets (fuzz/): their own tree, built with clang, ASan and UBSan.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
CCACHE := $(shell command -v ccache 2>/dev/null)

.PHONY: all deps build run test bench fuzz-build fuzz clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@scripts/demo.sh $(BUILD)

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --timeout 1200

bench: build
	@bench/run all

fuzz-build: deps
	@cmake -S fuzz -B $(FUZZ_BUILD) -DCMAKE_CXX_COMPILER=clang++ $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)

# Every target for FUZZ_SECONDS each; fails on any finding (fuzz/run.sh).
fuzz: fuzz-build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh $(FUZZ_BUILD)

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD)

PREFIX ?= /usr/local
.PHONY: install deb
# The binary, its man page and bash/zsh completions under $(PREFIX) (DESTDIR honoured).
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

# A Debian package in $(BUILD): apt install ./$(BUILD)/braid_*.deb
deb: build
	@cd $(BUILD) && cpack -G DEB
