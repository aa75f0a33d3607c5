#pragma once
// The fixed-order sum every transport uses: the flat vector cut into one contiguous piece per
// rank; each rank receives every rank's copy of its piece and adds them in rank order (rank 0's,
// then rank 1's...), then every rank receives every reduced piece. Each rank sends and receives
// 2 (N - 1) / N of the vector, as a ring all-reduce does, but the additions' order is fixed by
// the ranks, not by the transport's algorithm or the message sizes.
#include <cstdint>
#include <span>
#include <vector>

namespace orion::dist {

// Piece k of a vector of n values over `ranks` ranks: [begin, end).
struct Piece {
  std::int64_t begin, end;
};
inline Piece piece_of(std::int64_t n, int ranks, int k) {
  return {n * k / ranks, n * (k + 1) / ranks};
}

// `parts` holds every rank's copy of one piece, rank after rank, each `len` values: their sum
// added in rank order into `out`.
template <class T>
void add_in_rank_order(std::span<const T> parts, int ranks, std::span<T> out) {
  const std::size_t len = out.size();
  for (std::size_t i = 0; i < len; ++i) out[i] = parts[i];
  for (int r = 1; r < ranks; ++r) {
    const T* p = parts.data() + static_cast<std::size_t>(r) * len;
    for (std::size_t i = 0; i < len; ++i) out[i] += p[i];
  }
}

}  // namespace orion::dist
