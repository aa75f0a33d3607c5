// Fuzz target: the ANE package manifest (compile/ane/ane_package.h), read from its folder as
// `orion run` reads it, then written back and read again.
#include <filesystem>
#include <string>

#include "compile/ane/ane_package.h"
#include "core/atomic_file.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // One package folder per process, in memory where there is /dev/shm (the writer fsyncs).
  static const std::string dir = [] {
    std::string d = (std::filesystem::path(std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp") / ("orion-fuzz-pkg-" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(d);
    return d;
  }();
  orion::write_file_atomic(dir + "/" + orion::compile::kManifestFile, orion::fuzz::as_text(data, size));
  orion::fuzz::expect_ok_or_error([&] {
    const auto m = orion::compile::read_manifest(dir);
    (void)orion::compile::manifest_from_json(orion::compile::manifest_to_json(m), "round trip");
  });
  return 0;
}
