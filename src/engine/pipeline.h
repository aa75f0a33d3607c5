#pragma once
// Pipeline-parallel decoding (`mpirun -np N orion generate|serve --pipeline`, as mlx-lm's
// --pipeline): a Llama-family model's layers split into N contiguous ranges, one per rank. Rank
// 0 embeds the tokens and runs its range; each rank passes the residual stream on to the next;
// the last applies the final norm and the head and sends the logits back to rank 0, where
// generation runs (the tokenizer, sampling, the server). Each rank reads only its part of the
// weights (rank 0 also the embedding, the last the norm and the head), so a model larger than one
// machine's memory runs across several. Every stage runs the fast CPU engine's kernels in the
// order one process runs them, so the logits are the same bits.
//
// Rank 0's sessions are numbered; each message to the next stage names one (run rows, reset,
// close), and the other ranks keep a session of their layers for each, so a server's concurrent
// requests each have their caches on every rank. Stages other than rank 0 wait between messages
// without spinning, and end when rank 0's decoder and sessions are gone.
#include <functional>
#include <memory>
#include <string>

#include "dist/collective.h"
#include "engine/decoder_factory.h"
#include "engine/fast/llama_fast.h"
#include "model/model_folder.h"

namespace orion::engine {

// The layers of stage `stage` of `stages`: contiguous, the first ones a layer longer when the
// stages do not divide them. Throws orion::Error for more stages than layers.
LayerRange pipeline_stage_range(std::int64_t layers, int stages, int stage);
// The params stage `range` reads: its layers', the embedding for the first (and for the last
// when the head is tied to it), the final norm and head for the last.
model::ParamFilter pipeline_stage_params(const model::LlamaConfig& config, LayerRange range);

// DIR's part for `job`'s rank (ModelFolder::load of its stage's params, the tokenizer with it).
// Throws orion::Error naming the file for a model that is not of the Llama family.
model::ModelFolder load_pipeline_stage(const std::string& dir, const dist::Collective& job);

// The stages over packed models (what the two below run; tests run ranks as threads).
// pipeline_sessions, on rank 0: a factory of sessions through every rank; `stage` holds rank 0's
// layers (the embedding with them). When the factory and its sessions are gone, the other ranks'
// run_stage returns.
std::function<std::unique_ptr<Decoder>()> pipeline_sessions(std::shared_ptr<const LlamaFastModel> stage, int threads,
                                                             std::shared_ptr<dist::Collective> job);
void run_stage(std::shared_ptr<const LlamaFastModel> stage, int threads, dist::Collective& job);

// Rank 0: the decoder (with new_session, for a server's requests) whose sessions run through
// every rank's stage. `md` is rank 0's part (load_pipeline_stage). Throws orion::Error for
// options a pipeline does not run: a device, the graph executor, f16 numerics, a LoRA adapter.
ChosenDecoder make_pipeline_decoder(const model::ModelFolder& md, const DecoderOptions& o,
                                    std::shared_ptr<dist::Collective> job);
// Every other rank: runs rank 0's sessions' rows through this rank's layers until rank 0's
// decoder and sessions are gone.
void run_pipeline_stage(const model::ModelFolder& md, const DecoderOptions& o, dist::Collective& job);

}  // namespace orion::engine
