#pragma once
// Host-side packing between the IR's token-major tensors and a kernel's [1, C, 1, S_pad] fp16
// surfaces (compile/kernel_io.h): the transpose to channel-major, the real tokens in
// the first S columns and zeros in the padded ones (the values the padding analysis assumes
// are finite), and the way back that drops the padded columns.
#include <cstdint>

#include "core/tensor.h"
#include "device/ane_surface.h"

namespace orion::device {

// x [S, C] (any float dtype) -> fp16 [1, C, 1, padded_seq] at the start of `s`, element (c, t)
// at c * padded_seq + t, clamped to +-65504 (ANE032); padded columns are zero, the bytes of the
// surface after the tensor are left as they were (never read, ANE028). Throws orion::Error when
// padded_seq < S or it does not fit.
void pack_token_major(const Tensor& x, std::int64_t padded_seq, AneSurface& s);

// A runtime weight (compile/kernel_io.h, KernelIoTensor::weight): w [A, B] (a vector [N] as
// [1, N]) -> fp16 [1, A, 1, columns] at the start of `s`, element (a, b) at a * columns + b,
// clamped to +-65504 (ANE032), zeros in columns B..columns. Returns the bytes written. Throws
// orion::Error when columns < B or it does not fit.
std::int64_t pack_weight(const Tensor& w, std::int64_t columns, AneSurface& s);

// The first `seq` columns of a [1, channels, 1, padded_seq] fp16 surface as f32 [seq, channels].
Tensor unpack_token_major(const AneSurface& s, std::int64_t channels, std::int64_t seq, std::int64_t padded_seq);

// One column of a [1, C, 1, S] fp16 surface: where a device-resident KV cache takes a step's new
// token, fp16 to fp16 with no conversion. Column `from_col` of `from` ([1, >= channels, 1,
// from_columns]) is copied to column `to_col` of `to` ([1, >= channels, 1, to_columns]), for the
// first `channels` channels. Throws orion::Error when a column or a surface is out of range.
struct SurfaceColumns {
  std::int64_t channels = 0, columns = 0;  // the tensor's real channels and its surface's S
};

// Columns [first, first + count) of a [1, C, 1, S] fp16 surface (`shape`) from x [n, C]
// (n <= count, any float dtype): x's rows in the first n, clamped to +-65504 (ANE032), zeros in
// the rest; the other columns are left as they are. One sequence's part of a KV cache that
// holds several side by side (model/decoder_ane_package.h, decode_batch). Throws orion::Error
// when x or the columns do not fit.
void pack_columns(const Tensor& x, AneSurface& s, SurfaceColumns shape, std::int64_t first, std::int64_t count);
void copy_column(const AneSurface& from, SurfaceColumns from_shape, std::int64_t from_col, AneSurface& to,
                 SurfaceColumns to_shape, std::int64_t to_col);

}  // namespace orion::device
