#pragma once
// How far one engine's logits are from another's over the same positions: the relative L2
// error of all of them together and the share of positions whose top token agrees. What
// `orion bench decode` reports of a weight format (f16, q8) or of ane-sim against f32 weights,
// so that a speed is never read without the accuracy it costs.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/decoder.h"

namespace orion::engine {

// One row of logits per position.
using LogitRows = std::vector<std::vector<float>>;

struct LogitAgreement {
  double rel_l2 = 0;  // ||got - want|| / ||want|| over every row
  double top1 = 1;    // share of rows whose largest logit is at the same index (the first, on ties)
};

// `got` against the reference `want`. Throws orion::Error unless both have the same non-zero
// number of rows, row for row of the same length, and `want` is not all zeros.
LogitAgreement compare_logits(const LogitRows& want, const LogitRows& got);

// The logits of `decoder` teacher-forced over `tokens`, one decode step each, after what it
// has cached: the rows compare_logits takes.
LogitRows teacher_forced_logits(Decoder& decoder, std::span<const std::int32_t> tokens);

}  // namespace orion::engine
