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
      {f.avx512vnni, "avx512vnni"}, {f.avx512bf16, "avx512bf16"}, {f.avxvnni, "avxvnni"}};
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
#else
  GTEST_SKIP() << "needs Linux on x86";
#endif
}

}  // namespace
}  // namespace orion
