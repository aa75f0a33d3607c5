#pragma once
// Weight reload: a compiled kernel gets new weights without a compile. The ANE bakes weights
// at compile time (ANE029), but mechramc/Orion's "delta reload" reports that unload, rewrite
// the weight file IN PLACE (same size, same offsets), load makes the device read the file
// again. Another report, which replaced the file atomically (a new inode), saw the old weights
// (docs/ane/HARDWARE.md, "Weights"): so the file is overwritten where it is, never renamed over. Whether a device reloads at all is probed
// (runtime/reload_probe.h); this file only does the rewrite.
#include <string>

namespace orion::runtime {

// Why the kernel folder `version` cannot replace the weights of the kernel folder `kernel` in
// place, or "" when it can: the same model.mil bytes (so the same BLOBFILE offsets) and the
// same files with the same sizes.
std::string reload_mismatch(const std::string& kernel, const std::string& version);

// Overwrites every weight file of `kernel` with the bytes of the same file in `version`, in
// place, and flushes them to disk. Throws orion::Error naming the file (or the mismatch) when
// it cannot. Not atomic: a crash midway leaves a mix, so `version` must be kept until the
// kernel has been loaded again.
void rewrite_weights_in_place(const std::string& kernel, const std::string& version);

}  // namespace orion::runtime
