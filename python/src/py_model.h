#pragma once
// A loaded model (orion.load): the folder, the engine chosen for it, the sessions generation
// runs in (one per concurrent generation where the engine can make more) and the graph
// session that scores windows (logits, loss).
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/decoder_factory.h"
#include "model/model_folder.h"
#include "py_tokenizer.h"

namespace orion::python {

struct LoadOptions {
  std::string device = "cpu", weights, engine = "fast", numerics = "f32", lora, package;
  int threads = 0;
};

class PyModel {
 public:
  // Loads the folder and chooses the engine (the GIL released by the caller). Throws
  // ArgumentError for an unknown device, weight dtype, engine or numerics.
  PyModel(const std::string& path, const LoadOptions& o);
  ~PyModel();

  // A session for one generation, reset: an idle one; else a new one where the engine makes
  // more (the fast engine's share the packed weights); else the next to be given back.
  std::unique_ptr<engine::Decoder> take_session();
  void give_back(std::unique_ptr<engine::Decoder> session);

  // The logits [ids, vocab] of every position of a window starting at position 0, as `orion
  // perplexity` computes them: the graph executor on the cpu, the package on a device.
  Tensor window_logits(std::span<const std::int32_t> ids);

  const model::ModelFolder& folder() const { return md_; }
  const PyTokenizer& tokenizer() const { return tokenizer_; }
  const LoadOptions& options() const { return options_; }
  std::string describe() const;

 private:
  LoadOptions options_;
  engine::DecoderOptions decoder_options_;
  model::ModelFolder md_;
  PyTokenizer tokenizer_;
  engine::ChosenDecoder chosen_;
  // Declared after chosen_, whose adapter copy and device run the sessions use.
  std::mutex sessions_mutex_;
  std::condition_variable session_returned_;
  std::vector<std::unique_ptr<engine::Decoder>> idle_;
  std::mutex score_mutex_;
  std::optional<engine::ChosenDecoder> scorer_;
};

// A Python-facing handle: the model shared by the streams that run on it.
using ModelRef = std::shared_ptr<PyModel>;

}  // namespace orion::python
