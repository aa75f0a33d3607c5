#include "train/data/data_loader.h"

#include <algorithm>
#include <numeric>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/random.h"

namespace orion::train {

namespace {

// splitmix64's finaliser: decorrelates (seed, epoch) pairs before they seed an Rng (seeds that
// differ by the Rng's own increment would otherwise share most of their streams).
std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t json_u64(const nlohmann::json& j, const char* key, std::string_view where) {
  if (!j.contains(key)) throw Error(std::string(where) + ": loader state: missing \"" + key + "\"");
  const nlohmann::json& v = j.at(key);
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<std::int64_t>() < 0))
    throw Error(std::string(where) + ": loader state: \"" + key + "\" is " + v.dump() +
                ", not a non-negative integer");
  return v.get<std::uint64_t>();
}

}  // namespace

Rng epoch_rng(std::uint64_t seed, std::uint64_t epoch) { return Rng(mix(seed ^ mix(epoch + 0x9e3779b97f4a7c15ull))); }

nlohmann::json to_json(const LoaderState& state) { return {{"seed", state.seed}, {"position", state.position}}; }

LoaderState loader_state_from_json(const nlohmann::json& j, std::string_view where) {
  if (!j.is_object()) throw Error(std::string(where) + ": loader state: expected an object, found " + j.dump());
  return {json_u64(j, "seed", where), json_u64(j, "position", where)};
}

DataLoader::DataLoader(const TokenFile& file, Split split, std::int64_t batch, std::int64_t seq, std::uint64_t seed)
    : file_(file), split_(split), batch_(batch), seq_(seq), seed_(seed) {
  if (batch <= 0 || seq <= 0)
    throw Error::in_file(file.path(), "data loader: batch (" + std::to_string(batch) + ") and sequence length (" +
                                          std::to_string(seq) + ") must be positive");
  const std::uint64_t n = file.size(split);
  if (n < static_cast<std::uint64_t>(seq) + 1)
    throw Error::in_file(file.path(), std::string("the ") + split_name(split) + " split has " + std::to_string(n) +
                                          " tokens, fewer than the " + std::to_string(seq + 1) +
                                          " of one window (sequence length + 1)");
}

DataLoader::Epoch DataLoader::draw_epoch(std::uint64_t epoch, std::vector<std::uint64_t>* order) const {
  const std::uint64_t n = file_.size(split_), seq = static_cast<std::uint64_t>(seq_);
  Rng rng = epoch_rng(seed_, epoch);
  // The offset leaves room for at least one whole window: offset <= n - 1 - seq.
  const std::uint64_t offset = rng.below(std::min(seq, n - seq));
  const Epoch e{offset, (n - 1 - offset) / seq};
  if (order) {
    order->resize(e.windows);
    std::iota(order->begin(), order->end(), std::uint64_t{0});
    for (std::uint64_t i = e.windows; i > 1; --i) std::swap((*order)[i - 1], (*order)[rng.below(i)]);
  }
  return e;
}

std::uint64_t DataLoader::windows_in_epoch(std::uint64_t epoch) const { return draw_epoch(epoch, nullptr).windows; }

void DataLoader::seek_window(std::uint64_t g) {
  if (!cached_ || g < epoch_first_) {
    epoch_ = 0;
    epoch_first_ = 0;
    shape_ = draw_epoch(0, nullptr);
    order_.clear();
    cached_ = true;
  }
  while (g >= epoch_first_ + shape_.windows) {
    epoch_first_ += shape_.windows;
    shape_ = draw_epoch(++epoch_, nullptr);
    order_.clear();
  }
  if (order_.empty()) draw_epoch(epoch_, &order_);
}

Batch DataLoader::next() {
  const auto seq = static_cast<std::size_t>(seq_);
  Batch b;
  b.rows = batch_;
  b.seq = seq_;
  b.tokens.resize(static_cast<std::size_t>(batch_) * seq);
  b.targets.resize(b.tokens.size());
  b.weights.assign(b.tokens.size(), 1.0f);
  b.trained = static_cast<std::int64_t>(b.tokens.size());
  std::vector<std::int32_t> window(seq + 1);
  for (std::int64_t r = 0; r < batch_; ++r) {
    const std::uint64_t g = position_ * static_cast<std::uint64_t>(batch_) + static_cast<std::uint64_t>(r);
    seek_window(g);
    const std::uint64_t k = order_[g - epoch_first_];
    file_.copy(split_, shape_.offset + k * seq, window);
    const auto row = static_cast<std::size_t>(r) * seq;
    std::copy(window.begin(), window.end() - 1, b.tokens.begin() + static_cast<std::ptrdiff_t>(row));
    std::copy(window.begin() + 1, window.end(), b.targets.begin() + static_cast<std::ptrdiff_t>(row));
  }
  ++position_;
  return b;
}

void DataLoader::restore(const LoaderState& state) {
  seed_ = state.seed;
  position_ = state.position;
  cached_ = false;  // the next batch recomputes its epoch from the (possibly new) seed
}

}  // namespace orion::train
