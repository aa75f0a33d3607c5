#include "core/machine_info.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace orion {
namespace {

std::string first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

TEST(MachineInfo, SaysWhatTheOsSays) {
  const MachineInfo m = machine_info();
  EXPECT_FALSE(m.cpu.empty());
  EXPECT_FALSE(m.arch.empty());
  EXPECT_GT(m.cores, 0);
#if defined(__linux__)
  // The kernel's own files, read here rather than through uname.
  EXPECT_EQ(m.os, first_line("/proc/sys/kernel/ostype") + " " + first_line("/proc/sys/kernel/osrelease"));
  EXPECT_EQ(m.os_version, "");
#elif defined(__APPLE__)
  EXPECT_EQ(m.os.rfind("Darwin ", 0), 0u) << m.os;
  EXPECT_FALSE(m.os_version.empty());
#endif
}

TEST(MachineInfo, TellsM1AndM2ChipsFromOthers) {
  for (const char* yes : {"Apple M1", "Apple M1 Pro", "Apple M2 Max", "Apple M2 Ultra"}) EXPECT_TRUE(is_m1_or_m2(yes)) << yes;
  for (const char* no : {"Apple M3", "Apple M4 Pro", "Apple M10", "Apple M20 Max", "Intel(R) Xeon(R)", "unknown", ""})
    EXPECT_FALSE(is_m1_or_m2(no)) << no;
}

}  // namespace
}  // namespace orion
