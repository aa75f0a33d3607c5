#include "train/data/corpus_split.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace orion::train {

void add_document(SplitCorpus& corpus, std::span<const std::int32_t> tokens, std::int32_t eot_id, double val_fraction,
                  std::optional<std::int32_t> bos_id) {
  if (!(val_fraction >= 0.0 && val_fraction < 1.0))
    throw Error("the validation fraction " + std::to_string(val_fraction) + " is not in [0, 1)");
  if (tokens.empty()) return;
  const auto held = static_cast<std::size_t>(std::llround(static_cast<double>(tokens.size()) * val_fraction));
  const std::size_t kept = tokens.size() - held;
  auto append = [eot_id, bos_id](std::vector<std::int32_t>& to, std::span<const std::int32_t> part) {
    if (part.empty()) return;
    if (bos_id) to.push_back(*bos_id);
    to.insert(to.end(), part.begin(), part.end());
    to.push_back(eot_id);
  };
  append(corpus.train, tokens.first(kept));
  append(corpus.val, tokens.subspan(kept));
}

}  // namespace orion::train
