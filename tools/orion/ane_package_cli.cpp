#include "ane_package_cli.h"

#include <cstdio>

#include "core/error.h"
#include "model/session/decoder_ane_package.h"

namespace orion::cli {

void add_ane_package_options(CLI::App* cmd, AnePackageOptions& o) {
  cmd->add_option("--seq", o.seq, "Prefill window in tokens (shorter prompts are padded)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--context", o.context,
                  "KV-cache slots of the decode program, a multiple of 32 unless --host-attention (0: the model's context - 1, "
                  "rounded down)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--host-attention", o.host_attention,
                "Decode's attention over the KV cache on the host (the cache packed every step) instead of in the ANE kernels");
  cmd->add_option("--dialect", o.dialect, "MIL dialect")->check(CLI::IsMember({"ios18", "ios16"}))->capture_default_str();
  cmd->add_flag("--m1-m2", o.m1_m2, "Target M1/M2 chips (needs --dialect ios16)");
  cmd->add_flag("--allow-concat", o.allow_concat, "Emit concat on the ANE (named-const form) instead of on the host");
  cmd->add_option("--on-chip-mb", o.on_chip_mb, "On-chip weight budget per kernel, MB (ANE015)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

compile::PackageReport compile_package(const model::CausalLm& m, const std::string& source, const AnePackageOptions& o,
                                            const std::string& out, bool replace, bool progress) {
  if (o.m1_m2 && o.dialect != "ios16") throw Error("compile: M1/M2 targets need --dialect ios16 (ANE024)");
  compile::PackageOptions po;
  po.target.m1_m2 = o.m1_m2;
  po.target.allow_concat = o.allow_concat;
  po.target.on_chip_bytes = static_cast<std::int64_t>(o.on_chip_mb * 1e6);
  po.dialect = o.dialect == "ios16" ? compile::MilDialect::ios16 : compile::MilDialect::ios18;
  po.replace = replace;
  if (progress) po.progress = [](std::string_view line) { std::fprintf(stderr, "  %.*s\n", static_cast<int>(line.size()), line.data()); };
  const auto programs = model::ane_programs(m, {.window = o.seq, .capacity = o.context, .host_attention = o.host_attention});
  return compile::write_ane_package(programs, m.weights(), po, out, model::package_model_info(m, source));
}

}  // namespace orion::cli
