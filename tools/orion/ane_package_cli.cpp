#include "ane_package_cli.h"

namespace orion::cli {

void add_ane_package_options(CLI::App* cmd, engine::AnePackageOptions& o, const std::string& kernel_weights_names) {
  cmd->add_option("--seq", o.seq, "Prefill window in tokens (shorter prompts are padded)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--context", o.context,
                  "KV-cache slots of the decode program, a multiple of 32 unless --host-attention (0: the model's context - 1, "
                  "rounded down; beyond 4095 where the config's max_position_embeddings allows; a device run prints the "
                  "memory it takes)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--host-attention", o.host_attention,
                "Decode's attention over the KV cache on the host (the cache packed every step) instead of in the ANE kernels");
  cmd->add_option("--ane-batch", o.batch,
                  "Also a decode_batch program: one token of each of N sequences per run, the weights read once for all "
                  "(what `orion serve` batches concurrent requests with; 0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--ane-chunk", o.chunk,
                  "Also an extend program: a prompt longer than --seq goes on N tokens a run after the cache (0: none, "
                  "one token a run)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--dialect", o.dialect, "MIL dialect")->check(CLI::IsMember({"ios18", "ios16"}))->capture_default_str();
  cmd->add_flag("--m1-m2", o.m1_m2, "Target M1/M2 chips (needs --dialect ios16)");
  cmd->add_flag("--allow-concat", o.allow_concat, "Emit concat on the ANE (named-const form) instead of on the host");
  cmd->add_option("--on-chip-mb", o.on_chip_mb, "On-chip weight budget per kernel, MB (ANE015)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option(kernel_weights_names, o.weights,
                  "Baked weights in the kernels: fp16; or dequantized in the kernel: int8 with fp16 scales (half the bytes; "
                  "ios18), int4 with fp16 scales or uint4 with scales and offsets (a quarter; ios18), lut4, 4-bit codes into "
                  "16-entry fp16 tables fitted by k-means (a quarter; the form seen on the ANE)")
      ->check(CLI::IsMember({"fp16", "int8", "int4", "uint4", "lut4"}))
      ->capture_default_str();
  cmd->add_option("--ane-weights", o.ane_weights,
                  "How kernels hold the weights: baked into each kernel, as inputs (kernels of one shape shared by the layers, "
                  "compiled once), or auto (baked while the kernels fit the compile budget)")
      ->check(CLI::IsMember({"auto", "baked", "inputs"}))
      ->capture_default_str();
  cmd->add_option("--weight-block,--int8-block", o.weight_block,
                  "With --weights int8, int4, uint4: input channels per scale (0: one per output channel; default 0 for "
                  "int8, 64 for int4 and uint4); lut4: output channels per table (0: one per weight; default 8)")
      ->check(CLI::NonNegativeNumber);
}

void add_device_run_options(CLI::App* cmd, engine::DeviceRunOptions& o) {
  cmd->add_option("--package", o.package, "ane-sim, ane: run this package from `orion compile --target ane` (else the package cache's)");
  cmd->add_flag("--ane-prefill", o.ane_prefill, "ane-sim, ane: the prompt on the device, decoding on the CPU");
  cmd->add_flag("--no-cache", o.no_cache, "ane-sim, ane: compile into a temporary folder, not the package cache");
  add_ane_package_options(cmd, o.pkg);
}

}  // namespace orion::cli
