#include "device/ane_packing.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"

namespace orion::device {

namespace {

// x within fp16's finite range (ANE032); NaN stays NaN.
float in_fp16_range(float x) { return std::isnan(x) ? x : std::clamp(x, -65504.0f, 65504.0f); }

// `row` (already in range) as fp16 at `out`, through `h` (row's size).
void store_row(const std::vector<float>& row, std::vector<std::uint16_t>& h, std::byte* out) {
  floats_to_halves(row, h);
  std::memcpy(out, h.data(), h.size() * 2);
}

}  // namespace

void pack_token_major(const Tensor& x, std::int64_t padded_seq, AneSurface& s) {
  if (x.rank() != 2) throw Error("ane packing: expected a token-major [S, C] tensor, got " + shape_str(x.shape()));
  const std::int64_t S = x.shape()[0], C = x.shape()[1];
  if (padded_seq < S)
    throw Error("ane packing: " + std::to_string(S) + " tokens do not fit a sequence of " + std::to_string(padded_seq));
  const auto n = static_cast<std::size_t>(C * padded_seq);
  if (n * 2 > s.size())
    throw Error("ane packing: [1, " + std::to_string(C) + ", 1, " + std::to_string(padded_seq) + "] in fp16 is " +
                std::to_string(n * 2) + " bytes, more than the surface's " + std::to_string(s.size()));
  const Tensor f = x.contiguous().to(DType::f32);
  const std::span<const float> v = f.span<const float>();
  std::vector<float> cm(n, 0.0f);
  for (std::int64_t t = 0; t < S; ++t)
    for (std::int64_t c = 0; c < C; ++c) {
      cm[static_cast<std::size_t>(c * padded_seq + t)] = in_fp16_range(v[static_cast<std::size_t>(t * C + c)]);
    }
  std::vector<std::uint16_t> h(n);
  floats_to_halves(cm, h);
  std::memcpy(s.bytes().data(), h.data(), n * 2);
  // The rest of the surface is left alone: the device reads the C * S packed values from the
  // start and nothing after them (ANE028). Clearing it would cost a step the whole allocation,
  // which a kernel with a KV-cache input sizes by the cache, not by this tensor.
}

std::int64_t pack_weight(const Tensor& w, std::int64_t columns, AneSurface& s) {
  if (w.rank() != 1 && w.rank() != 2) throw Error("ane packing: a runtime weight is [N] or [A, B], not " + shape_str(w.shape()));
  const std::int64_t A = w.rank() == 2 ? w.shape()[0] : 1, B = w.shape().back();
  if (columns < B) throw Error("ane packing: a weight of " + std::to_string(B) + " columns in a surface of " + std::to_string(columns));
  const auto n = static_cast<std::size_t>(A * columns);
  if (n * 2 > s.size())
    throw Error("ane packing: a weight [1, " + std::to_string(A) + ", 1, " + std::to_string(columns) + "] in fp16 is " +
                std::to_string(n * 2) + " bytes, more than the surface's " + std::to_string(s.size()));
  const Tensor f = w.contiguous().to(DType::f32);
  const std::span<const float> v = f.span<const float>();
  // Row by row: a row's columns past B stay zero in `h`.
  std::vector<float> row(static_cast<std::size_t>(columns), 0.0f);
  std::vector<std::uint16_t> h(static_cast<std::size_t>(columns));
  std::byte* out = s.bytes().data();
  for (std::int64_t a = 0; a < A; ++a) {
    for (std::int64_t b = 0; b < B; ++b) row[static_cast<std::size_t>(b)] = in_fp16_range(v[static_cast<std::size_t>(a * B + b)]);
    store_row(row, h, out + a * columns * 2);
  }
  return static_cast<std::int64_t>(n * 2);
}

Tensor unpack_token_major(const AneSurface& s, std::int64_t channels, std::int64_t seq, std::int64_t padded_seq) {
  if (seq > padded_seq || seq < 0 || channels < 0) throw Error("ane packing: bad unpack shape");
  const auto n = static_cast<std::size_t>(channels * padded_seq);
  if (n * 2 > s.size())
    throw Error("ane packing: [1, " + std::to_string(channels) + ", 1, " + std::to_string(padded_seq) +
                "] in fp16 is more than the surface's " + std::to_string(s.size()) + " bytes");
  // Only the real columns of each channel row, converted by the vectorised routine, then the
  // transpose to token-major in tiles that stay in cache.
  std::vector<std::uint16_t> h(static_cast<std::size_t>(seq));
  std::vector<float> cm(static_cast<std::size_t>(channels * seq));
  const auto* rows = reinterpret_cast<const std::uint16_t*>(s.bytes().data());
  for (std::int64_t c = 0; c < channels; ++c) {
    std::memcpy(h.data(), rows + c * padded_seq, static_cast<std::size_t>(seq) * 2);
    halves_to_floats(h, std::span(cm).subspan(static_cast<std::size_t>(c * seq), static_cast<std::size_t>(seq)));
  }
  Tensor out(DType::f32, {seq, channels});
  float* o = out.data<float>();
  constexpr std::int64_t kTile = 32;
  for (std::int64_t c0 = 0; c0 < channels; c0 += kTile)
    for (std::int64_t t0 = 0; t0 < seq; t0 += kTile)
      for (std::int64_t c = c0; c < std::min(channels, c0 + kTile); ++c)
        for (std::int64_t t = t0; t < std::min(seq, t0 + kTile); ++t)
          o[t * channels + c] = cm[static_cast<std::size_t>(c * seq + t)];
  return out;
}

void pack_columns(const Tensor& x, AneSurface& s, SurfaceColumns shape, std::int64_t first, std::int64_t count) {
  const std::int64_t n = x.rank() == 2 ? x.shape()[0] : -1, C = shape.channels;
  if (n < 0 || x.shape()[1] != C || n > count || first < 0 || first + count > shape.columns ||
      static_cast<std::size_t>(C * shape.columns) * 2 > s.size())
    throw Error("ane packing: " + shape_str(x.shape()) + " does not go to columns " + std::to_string(first) + " to " +
                std::to_string(first + count) + " of [1, " + std::to_string(C) + ", 1, " + std::to_string(shape.columns) + "]");
  const Tensor f = x.contiguous().to(DType::f32);
  const std::span<const float> v = f.span<const float>();
  std::vector<float> row(static_cast<std::size_t>(count), 0.0f);
  std::vector<std::uint16_t> h(static_cast<std::size_t>(count));
  std::byte* out = s.bytes().data();
  for (std::int64_t c = 0; c < C; ++c) {
    for (std::int64_t t = 0; t < n; ++t) row[static_cast<std::size_t>(t)] = in_fp16_range(v[static_cast<std::size_t>(t * C + c)]);
    store_row(row, h, out + (c * shape.columns + first) * 2);
  }
}

void copy_column(const AneSurface& from, SurfaceColumns fs, std::int64_t from_col, AneSurface& to, SurfaceColumns ts,
                 std::int64_t to_col) {
  const auto fits = [](const AneSurface& s, SurfaceColumns shape, std::int64_t col, std::int64_t channels) {
    return col >= 0 && col < shape.columns && channels <= shape.channels &&
           static_cast<std::size_t>(channels * shape.columns) * 2 <= s.size();
  };
  const std::int64_t channels = fs.channels;
  if (ts.channels != channels || !fits(from, fs, from_col, channels) || !fits(to, ts, to_col, channels))
    throw Error("ane packing: column " + std::to_string(from_col) + " of [1, " + std::to_string(fs.channels) + ", 1, " +
                std::to_string(fs.columns) + "] does not go to column " + std::to_string(to_col) + " of [1, " +
                std::to_string(ts.channels) + ", 1, " + std::to_string(ts.columns) + "]");
  const std::byte* src = from.bytes().data();
  std::byte* dst = to.bytes().data();
  for (std::int64_t c = 0; c < channels; ++c)
    std::memcpy(dst + (c * ts.columns + to_col) * 2, src + (c * fs.columns + from_col) * 2, 2);
}

}  // namespace orion::device
