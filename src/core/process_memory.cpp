#include "core/process_memory.h"

#include <unistd.h>

#include <fstream>
#include <string>

namespace orion {

double resident_mb() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  if (!(f >> pages >> resident)) return 0;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e6;
}

double peak_resident_mb() {
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key) {
    if (key == "VmHWM:") {
      double kb = 0;
      f >> kb;
      return kb * 1024 / 1e6;
    }
    f.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace orion
