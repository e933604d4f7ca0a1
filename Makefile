# The two commands of the README: `make serve` and `make test`.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: deps configure build test serve clean

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

serve: configure
	@cmake --build $(BUILD) -j $(JOBS) --target keel
	@$(BUILD)/keel serve $(ARGS)

clean:
	rm -rf $(BUILD)
