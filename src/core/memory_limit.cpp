#include "core/memory_limit.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace orion {

namespace {

constexpr const char* kVar = "ORION_MEMORY_LIMIT";

std::uint64_t parse_size(std::string_view s) {
  std::uint64_t v = 0;
  std::size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    const std::uint64_t d = static_cast<std::uint64_t>(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) throw Error(std::string(kVar) + "=" + std::string(s) + ": too large");
    v = v * 10 + d;
  }
  int shift = 0;
  if (i + 1 == s.size()) {
    switch (s[i]) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      case 'T': shift = 40; break;
      default: shift = -1;
    }
    ++i;
  }
  if (i == 0 || i != s.size() || shift < 0)
    throw Error(std::string(kVar) + "=" + std::string(s) + ": expected a number of bytes, optionally with K, M, G or T");
  if (shift > 0 && v > (UINT64_MAX >> shift)) throw Error(std::string(kVar) + "=" + std::string(s) + ": too large");
  return v << shift;
}

std::string gigabytes(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", static_cast<double>(bytes) / 1e9);
  return buf;
}

}  // namespace

std::uint64_t memory_limit_bytes() {
  if (const char* v = std::getenv(kVar); v && *v) return parse_size(v);
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return UINT64_MAX;  // unknown: refuse nothing
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

void check_fits_in_memory(std::uint64_t bytes, std::string_view what, std::string_view where) {
  const std::uint64_t limit = memory_limit_bytes();
  if (bytes <= limit) return;
  const bool from_env = std::getenv(kVar) && *std::getenv(kVar);
  throw Error::in_file(where, "needs " + gigabytes(bytes) + " of memory for " + std::string(what) + ", more than the " +
                                  gigabytes(limit) + (from_env ? " that $ORION_MEMORY_LIMIT allows" : " this machine has"));
}

}  // namespace orion
