#pragma once
// The device rules the `ane` device enforces before a call reaches the hardware, where breaking
// them fails silently or with a bare status code: the per-process compile budget (ANE030) and
// the I/O surfaces of an evaluation (ANE010, ANE012, ANE028). Plain C++, tested everywhere.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "device/ane_device.h"

namespace orion::device {

// The smallest I/O surface the hardware is known to evaluate correctly (ANE012).
inline constexpr std::size_t kAneMinSurfaceBytes = 49'152;

class AneCompileBudget {
 public:
  explicit AneCompileBudget(int limit) : limit_(limit) {}

  // Counts a compile of `folder` that is about to reach the device. Throws orion::Error (ANE030)
  // instead when it would be over the limit: past it the hardware "compiles" and computes garbage.
  void charge(const std::string& folder);
  int used() const { return used_; }
  int limit() const { return limit_; }

 private:
  int limit_;
  int used_ = 0;
};

// The bytes an I/O tensor occupies packed at a surface's start.
std::size_t surface_bytes(const AneIo& io);

// Checks an evaluation's surfaces against the program's I/O (binding order): the counts, one
// allocation size per direction (ANE010), every surface at least kAneMinSurfaceBytes (ANE012)
// and large enough for its tensor packed (ANE028). Throws orion::Error naming `program`.
void check_surfaces(std::string_view program, const std::vector<AneIo>& inputs, const std::vector<AneIo>& outputs,
                    const std::vector<const AneSurface*>& input_surfaces,
                    const std::vector<AneSurface*>& output_surfaces);

}  // namespace orion::device
