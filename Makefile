# The two commands a new user runs: `make demo` and `make test`. Both install what is
# missing first (scripts/setup.sh, idempotent), then configure and build with CMake + Ninja.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=
ifeq ($(CI),true)
  CMAKE_FLAGS += -DORION_WERROR=ON
endif

# Robustness (docs/RELIABILITY.md): the test suite under ASan + UBSan, and the fuzz targets,
# both from the one sanitizer build.
SANITIZE_DIR ?= build-asan
FUZZ_SECONDS ?= 600
# Halt on the first report; the suppressions file says why each of its entries is there.
# ORION_TEST_SCALE=small: each test shrinks what adds time but no code path, and the GPT-2
# 124M-sized tests are skipped (tests/test_scale.h).
# The server's load test runs without its resident-memory bound: ASan's quarantine holds freed
# memory on purpose (tests/cli/serve_cli_test.cpp).
# The sanitizer run leaves out the GPT-2 instances of the CLI tests run for both architectures:
# their Llama instances run the same commands, and GPT-2's own code runs under the sanitizer in
# the model, package and golden tests (docs/RELIABILITY.md). It leaves out the GGUF file's
# end-to-end run (generate, chat, perplexity of a 135M-shaped file against its folder): the
# commands run under it on folders, and the GGUF reader's own tests and fuzz target cover it.
# It leaves out the chat fine-tuning run on ane-sim (its CPU instance runs, and device training
# runs under it in test_train) and the QLoRA run (its graphs run under it in tests/train/qlora).
# It runs the Hugging Face folder's commands on the Qwen3 folder alone (the other families run the
# same commands), and leaves out the 4-bit MLX folder's ANE compile (its unpacking runs under it
# in test_model). It leaves out the runs under mpirun: Open MPI's own allocations alive at exit would be leaks to
# LeakSanitizer; the ordered sum runs under it in tests/dist, the trainer's share in test_train,
# the pipeline's stages (ranks as threads) in test_engine. It leaves out the server on ane-sim
# (the decode_batch program and the package session run under it in test_runtime, the server's
# scheduler in the CPU instances), the int8 ANE packages of every architecture (int8 weights'
# programs run under it in test_device's conformance tests, the quantization pass in
# test_compile), LoRA's merged folder and its ane-sim generation (the merge and the adapter as
# kernel inputs run under it in test_engine's LoRA goldens) and the training run that spends its
# compile budget and restarts (the process exec'ing itself; the restore it resumes by runs under
# it in test_train and in TrainCli's killed-and-resumed runs). It leaves out the prompt cache's and
# chunked prefill's timing tests, whose figures are ratios of times the sanitizer distorts: the
# load test's repeated prompts and overlapping arrivals take the cache and the chunks under it.
# It leaves out Gemma 3's command-line runs (its 262k-token folder's chat fine-tune and masked
# loss, and LoRA's five commands on a small one): its graphs, fast engine, package sessions and
# tokenizer run under it in test_model, test_engine, test_runtime and test_text, and the
# commands are the Llama family's.
SANITIZE_SKIP = ^Archs/(LoraCli|TrainCli)[.].*/Gpt2( |$$)|^Archs/AnePackageArchCli[.]Int8|^ServeCli[.]OnAneSim|^Archs/LoraCli[.](Merged|Generates)|^Archs/TrainCli[.]OnAneSimASpentCompileBudget|^GgufCli[.]TheFileRunsAsItsFolder$$|^Devices/FinetuneCli[.].*/AneSim|^(Gemma|Qwen3_5)FinetuneCli[.]|^Families/FinetuneData[.].*/"(gemma3|qwen3[.]5)"|^Archs/LoraCli[.].*/Gemma3|^QloraCli[.]|^(DataParallel|Pipeline)Cli[.]|^Families/HfFolderCli[.].*/(llama32|qwen25|smollm2|tinyllama)|^MlxAneCli[.]|^ServePromptCacheCli[.]
SANITIZE_ENV = ORION_TEST_SCALE=small ORION_SERVE_LOAD_RSS=0 ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# The arm64 cross build (docs/PLATFORMS.md): Debian's aarch64 g++, the cblas path of the gemm
# file, and the unit tests of the layers up to the engine run under qemu-user, sharing the native build's
# test data. Under emulation a test runs ten to fifty times slower, so CI builds the test
# binaries and the libraries under them, not the CLI (`make build-arm64` builds everything), and
# ARM64_SKIP leaves out the tests of whole training runs (on the CPU and through ane-sim), the
# residual guard's compile-and-run on ane-sim (its probe and scale run) and the tests of
# checkpoints and data files, whose time goes into repetition rather than into anything arm64
# does differently (the optimizer's, the loss scaler's and the gradients' tests run);
# It leaves out the GGUF goldens as well: their files are rebuilt from Orion's seeded init, whose
# normals go through libm (core/random.h), and aarch64's libm rounds some of them otherwise in
# the last bit, which changes a file's hash (the GGUF reader's own tests run). Of the string
# code (tokenizers, chat templates) it runs one vocabulary of each kind (Qwen3's byte-level BPE
# with its regex, Llama 2's SentencePiece style) and leaves out the others, the long template
# and special-token sweeps and the GGUF files' tokenizers, which the native suites run; it leaves
# out the readers' corruption sweeps (the fuzz step's job), the batched prefill's model-shape
# variants beyond one per weight format (the kernels are the format's), and LoRA's ane-sim
# golden on the Llama instance (the GPT-2 one runs).
# `make test-arm64 ARM64_SKIP=` runs them all. Before the tests, scripts/check_arm64_libs.sh checks
# that every library the binaries load comes from a package setup.sh installs.
ARM64_DIR ?= build-arm64
ARM64_LAYERS ?= core;ir;exec;text;model;train;engine
ARM64_TESTS ?= $(patsubst %,test_%,$(subst ;, ,$(ARM64_LAYERS)))
ARM64_SKIP_TEXT = ChatTemplate[.]WhatItDoesNotCover|HfTokenizer[.]KnowsItsSpecialTokens|GgufTokenizer[.](Llama3s|Qwen3s)|HfTokenizer(Reference|Kjv)[.].*/"(llama3_2|mistral_nemo|llama3|qwen2_5|gemma3)"
ARM64_SKIP_SHAPES = LlamaBatchedPrefill[.].*/(q8_qwen2_bias|f16_llama_bias_rope3|f32_qwen3_head_dim|f16_odd_mha_tied|f32_odd_mqa_untied)|LoraGolden[.]AsKernelInputsOnAneSim.*/lora_llama_gqa
ARM64_SKIP ?= DeviceTraining|DeviceGraph|ResidualScale[.]AStream|CheckpointTest|TrainerArch|JsonlRecords|Qlora|DataParallelTrainer|GgufGolden|GgufFileTest[.]EveryTruncation|SafetensorsReader[.]RandomCorruption|$(ARM64_SKIP_TEXT)|$(ARM64_SKIP_SHAPES)
.PHONY: all setup configure build python demo test configure-sanitize test-sanitize fuzz configure-arm64 build-arm64 test-arm64 clean

all: build

setup:
	@scripts/setup.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

configure: $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR)

# The Python module alone (python/README.md), which `make` builds too where pybind11 is
# installed: import it with PYTHONPATH=$(BUILD_DIR)/python, or `pip install .` into a venv.
python: setup configure
	cmake --build $(BUILD_DIR) --target orion_python
	@echo "the module: PYTHONPATH=$(BUILD_DIR)/python python3 -c 'import orion'"

# The main job (scripts/demo.sh): train a small GPT-2 on the default corpus, plot its loss,
# compile it for the ANE and generate on the CPU and ane-sim. `orion demo` walks the compiler.
demo: setup
	@$(MAKE) --no-print-directory build
	scripts/demo.sh $(BUILD_DIR)

test: setup
	@scripts/fetch_test_data.sh $(BUILD_DIR)/test-data
	@scripts/fetch_corpus.sh $(BUILD_DIR)/test-data
	@$(MAKE) --no-print-directory build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $$(nproc)

# Debug, so asserts are on, at -O1 as the sanitizers' documentation advises. Clang with line
# tables only (enough for the reports' file:line): it builds the suite faster than GCC at
# -O1 -g (docs/RELIABILITY.md, "Sanitizer test run"), and libFuzzer is clang's. With libc++, as
# Apple's clang has it (docs/PLATFORMS.md): one build is both the sanitizer and the libc++ build,
# its C++ libraries built against libc++ (and AddressSanitizer) by scripts/libcxx_deps.sh.
# The CLI's and the tests' own files at -O0 (cmake/driver_code.cmake): they were most of the
# build's compile time, and what they check runs in the libraries at -O1.
LIBCXX_DEPS = $(SANITIZE_DIR)/libcxx-deps
configure-sanitize: setup
	@scripts/libcxx_deps.sh $(LIBCXX_DEPS) -fsanitize=address -fno-omit-frame-pointer
	@test -f $(SANITIZE_DIR)/build.ninja || cmake -S . -B $(SANITIZE_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" \
	  -DORION_SANITIZE=ON -DORION_LIBCXX_DEPS=$(CURDIR)/$(LIBCXX_DEPS) -DORION_BENCH=OFF -DORION_DRIVER_OPT=-O0 $(CMAKE_FLAGS)

test-sanitize: configure-sanitize
	@if [ -d $(BUILD_DIR)/test-data/node_modules ] && [ ! -d $(SANITIZE_DIR)/test-data/node_modules ]; then \
	  mkdir -p $(SANITIZE_DIR) && cp -a $(BUILD_DIR)/test-data $(SANITIZE_DIR)/; fi
	@scripts/fetch_test_data.sh $(SANITIZE_DIR)/test-data
	cmake --build $(SANITIZE_DIR)
	$(SANITIZE_ENV) ctest --test-dir $(SANITIZE_DIR) --output-on-failure -j $$(nproc) -E '$(SANITIZE_SKIP)'

# Builds the fuzz targets in the sanitizer build and runs each for FUZZ_SECONDS, one after
# another; the seeds are made with the normal build's orion.
fuzz: configure-sanitize
	@$(MAKE) --no-print-directory build
	cmake --build $(SANITIZE_DIR) --target fuzz_targets
	scripts/fuzz.sh $(BUILD_DIR)/bin/orion $(SANITIZE_DIR) $(FUZZ_SECONDS)

configure-arm64: setup
	@scripts/setup.sh --arm64 $(ARM64_DIR)/sysroot
	@test -f $(ARM64_DIR)/build.ninja || cmake -S . -B $(ARM64_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/aarch64-linux-gnu.cmake -DORION_ARM64_SYSROOT=$(CURDIR)/$(ARM64_DIR)/sysroot \
	  -DORION_GEMM=cblas -DORION_BENCH=OFF "-DORION_TEST_LAYERS=$(ARM64_LAYERS)" \
	  -DORION_TEST_DATA=$(CURDIR)/$(BUILD_DIR)/test-data $(CMAKE_FLAGS)

build-arm64: configure-arm64
	cmake --build $(ARM64_DIR)

test-arm64: configure-arm64
	@scripts/fetch_test_data.sh $(BUILD_DIR)/test-data
	@scripts/fetch_corpus.sh $(BUILD_DIR)/test-data
	cmake --build $(ARM64_DIR) --target $(ARM64_TESTS)
	scripts/check_arm64_libs.sh $(ARM64_DIR)
	ORION_TEST_SCALE=small ctest --test-dir $(ARM64_DIR) --output-on-failure -j $$(nproc) $(if $(ARM64_SKIP),-E '$(ARM64_SKIP)')

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_DIR) $(ARM64_DIR)
