#include "train/gpt2_loss.h"

#include "model/gpt2.h"

namespace orion::train {

LossGraphFn gpt2_loss_graph(const model::Gpt2Config& config) {
  return [config](std::int64_t batch, std::int64_t seq) {
    return model::gpt2_graph(config, model::Gpt2GraphOptions{.seq = seq, .past = 0, .last_only = false, .batch = batch, .loss = true});
  };
}

}  // namespace orion::train
