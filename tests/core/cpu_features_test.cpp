#include "core/cpu_features.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

namespace orion {
namespace {

std::set<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

TEST(CpuFeatures, SummaryListsExactlyTheFlagsThatAreSet) {
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(&f, &cpu_features());  // detected once
  const std::string summary = cpu_features_summary();
  std::cout << "cpu features: " << summary << "\n";
  const std::set<std::string> listed = words(summary);
  const std::pair<bool, const char*> flags[] = {
      {f.avx2, "avx2"},         {f.fma, "fma"},           {f.f16c, "f16c"},
      {f.avx512f, "avx512f"},   {f.avx512bw, "avx512bw"}, {f.avx512vl, "avx512vl"},
      {f.avx512vnni, "avx512vnni"}, {f.avx512bf16, "avx512bf16"}, {f.avxvnni, "avxvnni"},
      {f.neon, "neon"},         {f.dotprod, "dotprod"},   {f.fp16, "fp16"}};
  bool any = false;
  for (const auto& [present, name] : flags) {
    EXPECT_EQ(listed.count(name) == 1, present) << name;
    any = any || present;
  }
  if (!any) {
    EXPECT_EQ(summary, "none");
  } else {
    EXPECT_EQ(listed.count("none"), 0u);
  }
}

// Each architecture's flags are set only on it; Advanced SIMD is in every arm64 core, and
// the dot-product and fp16 extensions need it.
TEST(CpuFeatures, FlagsBelongToTheirArchitecture) {
  const CpuFeatures& f = cpu_features();
  const bool x86 = f.avx2 || f.fma || f.f16c || f.avx512f || f.avx512bw || f.avx512vl ||
                   f.avx512vnni || f.avx512bf16 || f.avxvnni;
#if defined(__aarch64__)
  EXPECT_TRUE(f.neon);
  EXPECT_FALSE(x86);
#else
  EXPECT_FALSE(f.neon);
  EXPECT_FALSE(f.dotprod);
  EXPECT_FALSE(f.fp16);
#endif
  if (f.dotprod || f.fp16) {
    EXPECT_TRUE(f.neon);
  }
  if (f.neon) {
    EXPECT_FALSE(x86);
  }
}

TEST(CpuFeatures, AgreesWithTheKernelsCpuinfo) {
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__))
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> kernel;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      kernel = words(line.substr(line.find(':') + 1));
      break;
    }
  if (kernel.empty()) GTEST_SKIP() << "no flags in /proc/cpuinfo";
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(f.avx2, kernel.count("avx2") == 1);
  EXPECT_EQ(f.fma, kernel.count("fma") == 1);
  EXPECT_EQ(f.f16c, kernel.count("f16c") == 1);
  EXPECT_EQ(f.avx512f, kernel.count("avx512f") == 1);
  EXPECT_EQ(f.avx512bw, kernel.count("avx512bw") == 1);
  EXPECT_EQ(f.avx512vl, kernel.count("avx512vl") == 1);
  EXPECT_EQ(f.avx512vnni, kernel.count("avx512_vnni") == 1);
  EXPECT_EQ(f.avx512bf16, kernel.count("avx512_bf16") == 1);
  EXPECT_EQ(f.avxvnni, kernel.count("avx_vnni") == 1);
#elif defined(__linux__) && defined(__aarch64__)
  // Linux names the hardware capabilities in the "Features" line. qemu-user (before 8.1) shows
  // the host's /proc/cpuinfo instead, which has none.
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> kernel;
  while (std::getline(in, line))
    if (line.rfind("Features", 0) == 0) {
      kernel = words(line.substr(line.find(':') + 1));
      break;
    }
  if (kernel.empty()) GTEST_SKIP() << "no Features line in /proc/cpuinfo (an emulator?)";
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(f.neon, kernel.count("asimd") == 1);
  EXPECT_EQ(f.dotprod, kernel.count("asimddp") == 1);
  EXPECT_EQ(f.fp16, kernel.count("fphp") == 1 && kernel.count("asimdhp") == 1);
#else
  GTEST_SKIP() << "needs Linux on x86 or arm64";
#endif
}

}  // namespace
}  // namespace orion
