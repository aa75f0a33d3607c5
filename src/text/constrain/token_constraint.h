#pragma once
// What generation asks of a constraint on its answer (engine/generation.h): which tokens may
// come next, and the token that came. The JSON grammar's is text/constrain/json_constraint.h.
#include <cstdint>
#include <span>

namespace orion::text {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Sets the logits of every token that cannot come next to -infinity. Throws orion::Error when
  // no token of the vocabulary can.
  virtual void mask(std::span<float> logits) = 0;
  // The token sampled from the masked logits. Throws orion::Error for one the mask excluded.
  virtual void accept(std::int32_t token) = 0;
  // Whether the answer is whole and nothing more may come.
  virtual bool complete() const = 0;
};

}  // namespace orion::text
