#pragma once
// GPT-2's loss graph as the trainer takes it: the batched training graph of model/gpt2.h
// (tokens, positions and targets in, the mean cross-entropy `loss` out).
#include "model/gpt2_config.h"
#include "train/trainer.h"

namespace orion::train {

LossGraphFn gpt2_loss_graph(const model::Gpt2Config& config);

}  // namespace orion::train
