#pragma once
// The Decoder of each of Orion's two device modes over a package session:
//   everything on the device   prefill and decode programs (attention over the KV cache on
//                              the host with --host-attention packages)
//   prefill on the device      the prompt on the device, then decoding on the CPU (the graph
//                              engine takes over the device's KV cache)
#include <functional>
#include <memory>

#include "model/causal_lm.h"
#include "engine/decoder.h"
#include "runtime/package_batch.h"
#include "runtime/package_session.h"

namespace orion::engine {

// Both modes start with the prefill program; after it, adopt_device_prefill() hands the
// session's state to whatever decodes.
class DeviceModeDecoder : public Decoder {
 public:
  virtual void adopt_device_prefill() = 0;
};

// `prefill_on_device`: the CPU decodes after the device's prefill (threads: its threads).
std::unique_ptr<DeviceModeDecoder> device_mode_decoder(bool prefill_on_device, runtime::PackageSession& session,
                                                       const model::CausalLm& model, int threads);

// Everything on the device, in slot `slot` of a batch: decode_batch runs the slots that ask
// together (their batch_key is the batch); `release(slot)` is called when the decoder goes.
std::unique_ptr<Decoder> batch_slot_decoder(runtime::PackageBatch& batch, int slot, std::function<void(int)> release,
                                            std::int64_t vocab);

}  // namespace orion::engine
