// Fuzz target: a checkpoint's checkpoint.json (train/checkpoint.h) and the trainer state inside
// it. The input is written as checkpoint.json into a private copy of the checkpoint folder at
// $ORION_FUZZ_CHECKPOINT_FOLDER (scripts/fuzz.sh points it at a checkpoint of a tiny run), so
// that the files it lists exist and mutations reach the checks of sizes, checksums and the
// tensors behind them; unset, the folder holds only checkpoint.json.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fuzz_input.h"
#include "train/checkpoint.h"
#include "train/data/data_loader.h"
#include "train/optim/loss_scaler.h"

namespace fs = std::filesystem;

namespace {

// Created on the first input and removed when libFuzzer exits (it returns from main, or calls
// exit, on every path but a crash).
std::string& folder() {
  static std::string dir;
  return dir;
}

const std::string& private_folder() {
  if (folder().empty()) {
    std::string dir = (fs::temp_directory_path() / "orion-checkpoint-fuzz-XXXXXX").string();
    if (!::mkdtemp(dir.data())) std::abort();
    if (const char* seed = std::getenv("ORION_FUZZ_CHECKPOINT_FOLDER"))
      fs::copy(seed, dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    folder() = dir;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(folder(), ec);
    });
  }
  return folder();
}

const nlohmann::json& field_or_self(const nlohmann::json& j, const char* name) {
  return j.is_object() && j.contains(name) ? j.at(name) : j;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& folder = private_folder();
  {
    std::ofstream out(folder + "/checkpoint.json", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) std::abort();
  }
  orion::fuzz::expect_ok_or_error([&] {
    const auto c = orion::train::load_checkpoint(folder);
    if (!c) std::abort();  // the folder exists
    // The trainer's readers of its state (Trainer::restore calls them on these fields).
    orion::fuzz::expect_ok_or_error([&] {
      orion::train::LossScaler scaler;
      scaler.from_json(field_or_self(c->state, "loss_scaler"));
    });
    orion::fuzz::expect_ok_or_error(
        [&] { (void)orion::train::loader_state_from_json(field_or_self(c->state, "loader"), "checkpoint.json"); });
  });
  return 0;
}
