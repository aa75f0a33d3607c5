#include "compile/ane/package_weights.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "compile/blob/weight_blob_writer.h"
#include "core/error.h"
#include "core/half.h"

namespace orion::compile {

namespace {

// Blob files are little-endian, and so is every host Orion builds for: raw bytes go as they are.
static_assert(std::endian::native == std::endian::little);

constexpr std::size_t kPiece = std::size_t{1} << 16;  // elements converted at a time

// Elements [at, at + n) of contiguous `t` as floats.
void read_floats(const Tensor& t, std::size_t at, std::span<float> out) {
  const std::byte* raw = t.raw();
  switch (t.dtype()) {
    case DType::f32: std::memcpy(out.data(), raw + at * 4, out.size() * 4); return;
    case DType::f16:
      halves_to_floats({reinterpret_cast<const std::uint16_t*>(raw) + at, out.size()}, out);
      return;
    case DType::bf16:
      bf16s_to_floats({reinterpret_cast<const std::uint16_t*>(raw) + at, out.size()}, out);
      return;
    default: throw Error("package weights: a " + std::string(dtype_name(t.dtype())) + " param is not a float weight");
  }
}

// Writes `value` as the next blob, of `dtype`; returns its record's offset.
std::uint64_t stream_tensor(const Tensor& value, DType dtype, WeightBlobStream& out) {
  const Tensor t = value.contiguous();
  const auto n = static_cast<std::size_t>(t.numel());
  const std::size_t width = dtype == DType::f32 ? 4 : 2;
  const std::uint64_t record = out.begin(dtype == DType::f32 ? BlobDType::fp32 : BlobDType::fp16, n * width);
  if (t.dtype() == dtype) {
    out.write({t.raw(), n * width});
    return record;
  }
  std::vector<float> floats(std::min(n, kPiece));
  std::vector<std::uint16_t> halves(dtype == DType::f16 ? floats.size() : 0);
  for (std::size_t at = 0; at < n; at += kPiece) {
    const std::size_t k = std::min(kPiece, n - at);
    const std::span<float> f(floats.data(), k);
    read_floats(t, at, f);
    if (dtype == DType::f32) {
      out.write(std::as_bytes(f));
    } else {
      const std::span<std::uint16_t> h(halves.data(), k);
      floats_to_halves(f, h);
      out.write(std::as_bytes(h));
    }
  }
  return record;
}

}  // namespace

std::vector<HostWeight> write_weight_file(const std::string& path, const std::vector<std::string>& names,
                                          const TensorMap& weights, DType dtype, const std::string& reader,
                                          std::int64_t& bytes) {
  WeightBlobStream out(path, static_cast<std::uint32_t>(names.size()));
  std::vector<HostWeight> entries;
  for (const std::string& name : names) {
    auto it = weights.find(name);
    if (it == weights.end()) throw Error("write_ane_package: no value for param " + name + " (" + reader + ")");
    const Tensor& t = it->second;
    entries.push_back({name, t.shape(), stream_tensor(t, dtype, out)});
    bytes += t.numel() * static_cast<std::int64_t>(dtype == DType::f32 ? 4 : 2);
  }
  out.commit();
  return entries;
}

}  // namespace orion::compile
