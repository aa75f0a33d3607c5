#include "core/cpu_features.h"

#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace orion {

namespace {

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  // Runs before main() when cpu_features() is first used from a static initialiser, so the
  // runtime's feature table may not be filled in yet.
  __builtin_cpu_init();
  // The runtime's AVX flags already include the XGETBV check that the OS saves the wider
  // registers; F16C and FMA operate on the AVX registers, so they need it too.
  const bool avx = __builtin_cpu_supports("avx");
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = avx && __builtin_cpu_supports("fma");
  // clang 14 rejects "f16c" as a __builtin_cpu_supports name, so read CPUID leaf 1 directly.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) f.f16c = avx && (ecx & bit_F16C) != 0;
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = f.avx512f && __builtin_cpu_supports("avx512bw");
  f.avx512vl = f.avx512f && __builtin_cpu_supports("avx512vl");
  f.avx512vnni = f.avx512f && __builtin_cpu_supports("avx512vnni");
  f.avx512bf16 = f.avx512f && __builtin_cpu_supports("avx512bf16");
  // clang 14 rejects "avxvnni" too: CPUID leaf 7 sub-leaf 1, EAX bit 4.
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) f.avxvnni = f.avx2 && (eax & (1u << 4)) != 0;
#elif defined(__aarch64__)
  f.neon = true;  // Advanced SIMD is part of the AArch64 baseline
#if defined(__APPLE__)
  // Apple's documented names (sysctl hw.optional.arm.*); every Apple silicon core has both.
  const auto has = [](const char* name) {
    int value = 0;
    size_t size = sizeof value;
    return sysctlbyname(name, &value, &size, nullptr, 0) == 0 && value != 0;
  };
  f.dotprod = has("hw.optional.arm.FEAT_DotProd");
  f.fp16 = has("hw.optional.arm.FEAT_FP16");
#elif defined(__linux__)
  const unsigned long hwcap = getauxval(AT_HWCAP);
  f.dotprod = (hwcap & HWCAP_ASIMDDP) != 0;
  f.fp16 = (hwcap & HWCAP_FPHP) != 0 && (hwcap & HWCAP_ASIMDHP) != 0;
#endif
#endif
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

std::string cpu_features_summary() {
  const CpuFeatures& f = cpu_features();
  const std::pair<bool, const char*> named[] = {
      {f.avx2, "avx2"},         {f.fma, "fma"},           {f.f16c, "f16c"},
      {f.avx512f, "avx512f"},   {f.avx512bw, "avx512bw"}, {f.avx512vl, "avx512vl"},
      {f.avx512vnni, "avx512vnni"}, {f.avx512bf16, "avx512bf16"}, {f.avxvnni, "avxvnni"},
      {f.neon, "neon"},         {f.dotprod, "dotprod"},   {f.fp16, "fp16"},
  };
  std::string s;
  for (const auto& [present, name] : named) {
    if (!present) continue;
    if (!s.empty()) s += ' ';
    s += name;
  }
  return s.empty() ? "none" : s;
}

}  // namespace orion
