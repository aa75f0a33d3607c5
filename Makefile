# The two commands a new user runs: `make demo` and `make test`. Both install what is
# missing first (scripts/setup.sh, idempotent), then configure and build with CMake + Ninja.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=
ifeq ($(CI),true)
  CMAKE_FLAGS += -DORION_WERROR=ON
endif

.PHONY: all setup configure build demo test clean

all: build

setup:
	@scripts/setup.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

configure: $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR)

demo: setup
	@$(MAKE) --no-print-directory build
	$(BUILD_DIR)/bin/orion demo

test: setup
	@scripts/fetch_test_data.sh $(BUILD_DIR)/test-data
	@scripts/fetch_corpus.sh $(BUILD_DIR)/test-data
	@$(MAKE) --no-print-directory build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $$(nproc)

clean:
	rm -rf $(BUILD_DIR)
