#pragma once
// A Hugging Face checkpoint as a set of safetensors files: model.safetensors alone, or the
// shards a model.safetensors.index.json names. The index is untrusted like every file Orion
// reads: it is checked against the shards before any tensor is used (every shard it names
// exists, every tensor it places is in that shard, every tensor a shard holds is placed there),
// and each error names the file and the tensor.
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "model/formats/safetensors.h"

namespace orion::model {

class Checkpoint {
 public:
  // DIR/model.safetensors when it exists, else DIR/model.safetensors.index.json and its shards.
  static Checkpoint open(const std::string& dir);
  static Checkpoint single(SafetensorsFile file);
  static Checkpoint from_index(const std::string& index_path);

  // The files, in the index's order of first mention (one for an unsharded checkpoint).
  const std::vector<SafetensorsFile>& files() const { return files_; }
  // The file holding tensor `name`, or nullptr.
  const SafetensorsFile* file_of(std::string_view name) const;
  // model.safetensors, or the index: the path errors about the whole checkpoint name.
  const std::string& path() const { return path_; }
  bool sharded() const { return files_.size() != 1 || path_ != files_.front().path(); }

 private:
  std::vector<SafetensorsFile> files_;
  std::map<std::string, std::size_t, std::less<>> where_;
  std::string path_;
};

// How a checkpoint is written: one model.safetensors, or Hugging Face's sharded layout
// (model-0000i-of-0000N.safetensors and the index) when shards > 1; float tensors in `dtype`.
struct CheckpointLayout {
  std::int64_t shards = 1;
  DType dtype = DType::f32;
};

// Writes `tensors` (in order; shards cut by bytes, so each holds about an equal share) into the
// folder `dir` with the names above. The caller makes the folder's replacement atomic.
void write_checkpoint(const std::string& dir, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const CheckpointLayout& layout);
// A shard's file name as Hugging Face spells it: model-00001-of-00003.safetensors.
std::string shard_file_name(std::int64_t index, std::int64_t count);
// Whether `name` is a checkpoint file (model.safetensors, its index or a shard).
bool is_checkpoint_file(std::string_view name);

}  // namespace orion::model
