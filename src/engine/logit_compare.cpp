#include "engine/logit_compare.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace orion::engine {

LogitAgreement compare_logits(const LogitRows& want, const LogitRows& got) {
  if (want.empty() || want.size() != got.size())
    throw Error("compare_logits: " + std::to_string(got.size()) + " rows of logits against " + std::to_string(want.size()) +
                " reference rows");
  double num = 0, den = 0;
  std::size_t agree = 0;
  for (std::size_t p = 0; p < want.size(); ++p) {
    const std::vector<float>& x = want[p];
    const std::vector<float>& y = got[p];
    if (x.empty() || x.size() != y.size())
      throw Error("compare_logits: row " + std::to_string(p) + " has " + std::to_string(y.size()) + " logits against " +
                  std::to_string(x.size()) + " in the reference");
    for (std::size_t i = 0; i < x.size(); ++i) {
      num += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
      den += static_cast<double>(x[i]) * x[i];
    }
    agree += std::max_element(x.begin(), x.end()) - x.begin() == std::max_element(y.begin(), y.end()) - y.begin();
  }
  if (den == 0) throw Error("compare_logits: the reference logits are all zero");
  return {std::sqrt(num / den), static_cast<double>(agree) / static_cast<double>(want.size())};
}

LogitRows teacher_forced_logits(Decoder& decoder, std::span<const std::int32_t> tokens) {
  LogitRows rows;
  rows.reserve(tokens.size());
  for (std::int32_t t : tokens) rows.push_back(decoder.decode(t));
  return rows;
}

}  // namespace orion::engine
