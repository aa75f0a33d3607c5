#pragma once
// A program's work folder on the `ane` device: NSTemporaryDirectory()/<hexStringIdentifier>, where
// the bridge writes model.mil and the weight files, where the framework's compiler leaves the
// compiled program beside them, and which -unloadWithQoS:error: deletes whole. A load needs the
// folder, so after a compile the bridge keeps what is in it and restores it before every load
// (docs/ane/DEVICE.md, "The work folder"). Plain C++, tested everywhere.
#include <string>
#include <utility>
#include <vector>

#include "device/ane_bridge_program.h"

namespace orion::device {

class AneWorkFolder {
 public:
  // `dir`: the work folder; `kept`: a folder of Orion's own, on the same file system where
  // possible, where the files wait between the compile and the loads.
  AneWorkFolder() = default;
  AneWorkFolder(std::string dir, std::string kept) : dir_(std::move(dir)), kept_(std::move(kept)) {}

  // Before the compile: model.mil and each weight file of `source`, written atomically.
  void write(const AneProgramSource& source) const;

  // After the compile: keeps every regular file now in the folder, at its relative path (hard
  // links where the file system allows them, copies where not). Replaces what was kept before.
  void keep();

  // Before a load: restores each kept file that is missing from the folder, then writes each
  // of `weights` (paths relative to both folders) whose bytes in `kernel_folder` differ from the
  // work folder's: a weight file rewritten there is a weight reload (ANE029), which reaches the
  // device only through the work folder. Returns the relative paths written, in that order.
  // Throws orion::Error naming a file that cannot be read or written.
  std::vector<std::string> refresh(const std::string& kernel_folder, const std::vector<std::string>& weights) const;

  const std::string& dir() const { return dir_; }
  const std::string& kept() const { return kept_; }
  const std::vector<std::string>& kept_files() const { return kept_files_; }

 private:
  std::string dir_, kept_;
  std::vector<std::string> kept_files_;  // relative, sorted
};

}  // namespace orion::device
