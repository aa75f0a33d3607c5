#include "device/ane_bridge_rules.h"

#include "core/dtype.h"
#include "core/error.h"

namespace orion::device {

namespace {

template <typename Surface>
void check_direction(std::string_view program, const char* role, const std::vector<AneIo>& io,
                     const std::vector<Surface*>& surfaces) {
  const std::string where = "device ane: " + std::string(program) + ": ";
  if (surfaces.size() != io.size())
    throw Error(where + "takes " + std::to_string(io.size()) + " " + role + " surfaces, got " +
                std::to_string(surfaces.size()));
  for (std::size_t i = 0; i < io.size(); ++i) {
    const std::size_t size = surfaces[i]->size();
    if (size != surfaces.front()->size())
      throw Error(where + "the " + role + " surfaces have different allocation sizes (" +
                  std::to_string(surfaces.front()->size()) + " and " + std::to_string(size) +
                  " bytes); the ANE fails with status 0x1d (ANE010: pad the smaller ones)");
    if (size < kAneMinSurfaceBytes)
      throw Error(where + role + " " + io[i].name + ": a surface of " + std::to_string(size) +
                  " bytes is below the " + std::to_string(kAneMinSurfaceBytes) +
                  " the ANE evaluates correctly (ANE012: pad the sequence axis)");
    if (size < surface_bytes(io[i]))
      throw Error(where + role + " " + io[i].name + " " + io[i].type.str() + " needs " +
                  std::to_string(surface_bytes(io[i])) + " bytes, the surface has " + std::to_string(size) +
                  " (ANE028)");
  }
}

}  // namespace

void AneCompileBudget::charge(const std::string& folder) {
  if (used_ >= limit_)
    throw Error("device ane: ANE030: compiling " + folder + " would be compile " + std::to_string(used_ + 1) +
                " of this process, over the budget of " + std::to_string(limit_) +
                " (past it the ANE fails silently): restart the process from a checkpoint, or reuse compiled "
                "programs");
  ++used_;
}

std::size_t surface_bytes(const AneIo& io) {
  return static_cast<std::size_t>(io.type.numel()) * dtype_size(io.type.dtype);
}

void check_surfaces(std::string_view program, const std::vector<AneIo>& inputs, const std::vector<AneIo>& outputs,
                    const std::vector<const AneSurface*>& input_surfaces,
                    const std::vector<AneSurface*>& output_surfaces) {
  check_direction(program, "input", inputs, input_surfaces);
  check_direction(program, "output", outputs, output_surfaces);
}

}  // namespace orion::device
