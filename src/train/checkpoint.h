#pragma once
// Crash-safe training checkpoints (docs/FORMATS.md, "Checkpoints"). A checkpoint is one folder
// OUT/step-<step, 8 digits>/ written as a whole (core/atomic_folder.h): a crash or kill -9 at
// any moment leaves either the previous checkpoints alone or the new one complete. The folder
// is an ordinary model folder (config.json, model.safetensors, tokenizer files: `orion
// generate -m OUT/step-00000100` reads it), or for a LoRA run an adapter folder
// (adapter_config.json, adapter_model.safetensors: `generate --lora`), plus
// optimizer.safetensors and checkpoint.json,
// which holds the step, the trainer's state and the size and XXH3-128 checksum of every other
// file, so that a checkpoint damaged after it was written (a flipped byte, a truncated or
// missing file) is recognised and skipped in favour of the one before.
//
// One writer per OUT: saving also clears temporary folders left there by interrupted saves.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/cpu/executor.h"
#include "model/model_folder.h"

namespace orion::train {

inline constexpr int kCheckpointVersion = 1;

struct CheckpointData {
  std::int64_t step = 0;
  std::string config_json;                 // the model's config.json (or the adapter's), verbatim
  const TensorMap* params = nullptr;  // the model's weights (the model folder's names), or the adapter's
  std::string config_file = model::kConfigFile;   // or adapter_config.json
  std::string weights_file = model::kWeightsFile;  // or adapter_model.safetensors
  std::vector<std::string> model_files;    // further files copied into the model folder (tokenizer files)
  TensorMap optimizer;                // AdamW::state()
  nlohmann::json state;                    // the trainer's own: loss scaler, RNG, loader, options...
};

// Writes OUT/step-<step, 8 digits>/ as a whole (replacing a checkpoint of the same step), then
// removes all but the newest keep_last checkpoints (never the one just written; keep_last < 1
// keeps them all). OUT is created if missing. Reports nothing; throws orion::Error naming the
// path on failure, leaving the earlier checkpoints as they were.
void save_checkpoint(const std::string& out_dir, const CheckpointData& data, int keep_last);

struct LoadedCheckpoint {
  std::string dir;
  std::int64_t step = 0;
  TensorMap params;     // owned copies (writable: the trainer's master weights)
  TensorMap optimizer;  // owned copies
  nlohmann::json state;
  std::string config_json;
  std::string config_file, weights_file;  // as saved (CheckpointData's)
};

// The newest checkpoint in out_dir whose checksums verify; a newer one that does not verify
// (torn, corrupt, half-deleted) is skipped with a warning on stderr naming it and why, and so
// is a temporary folder left by an interrupted save. nullopt when there is none (or out_dir
// does not exist).
std::optional<LoadedCheckpoint> load_latest_checkpoint(const std::string& out_dir);

// One checkpoint folder: nullopt when `dir` does not exist; throws orion::Error naming the file
// and the problem when it does not verify.
std::optional<LoadedCheckpoint> load_checkpoint(const std::string& dir);

// Whether out_dir holds any folder named as a checkpoint (verified or not); false when out_dir
// does not exist.
bool has_checkpoint_folders(const std::string& out_dir);

// "step-00000100": the folder name of a step's checkpoint.
std::string checkpoint_folder_name(std::int64_t step);

}  // namespace orion::train
