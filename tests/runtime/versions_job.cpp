#include "versions_job.h"

#include <cstdint>
#include <cstring>
#include <filesystem>

#include "compile/ane/ane_lowering.h"
#include "compile/mil/mil_writer.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/random.h"
#include "device/ane_packing.h"
#include "ir/builder.h"

namespace orion::testing_job {

namespace {

constexpr std::int64_t kSeq = 32, kDim = 64;

Tensor random_tensor(Shape shape, std::uint64_t seed, float stddev) {
  Tensor t(DType::f32, std::move(shape));
  Rng rng(seed);
  rng.fill_normal(t.span<float>(), 0.0f, stddev);
  return t;
}

Tensor job_input() {
  Tensor t(DType::f32, {kSeq, kDim});
  Rng(7).fill_uniform(t.span<float>(), -1.0f, 1.0f);
  return t;
}

}  // namespace

compile::KernelIo write_version(int v, const std::string& folder) {
  ir::Builder b("versions_job");
  const auto x = b.input("x", DType::f32, {kSeq, kDim});
  const auto w = b.param("w", DType::f32, {kDim, kDim});
  const auto bias = b.param("b", DType::f32, {kDim});
  b.output(b.gelu(b.add(b.matmul(x, w), bias)));
  const auto seed = static_cast<std::uint64_t>(1000 + 2 * v);
  const TensorMap weights{{"w", random_tensor({kDim, kDim}, seed, 0.25f)},
                                     {"b", random_tensor({kDim}, seed + 1, 0.5f)}};
  compile::AneLoweringOptions lo;
  lo.kernel_name = "versions_job";
  const compile::AneLowered k = compile::lower_for_ane(b.finish(), weights, lo);
  compile::write_model_folder(compile::write_mil(k.graph), folder);
  return k.io;
}

std::vector<float> evaluate(device::AneSim& device, device::AneProgramId id, const compile::KernelIo& io) {
  device::AneSurface in(static_cast<std::size_t>(io.input_bytes)), out(static_cast<std::size_t>(io.output_bytes));
  device::pack_token_major(job_input(), io.padded_seq, in);
  device.evaluate(id, {&in}, {&out});
  return device::unpack_token_major(out, kDim, kSeq, io.padded_seq).to_floats();
}

std::vector<std::vector<float>> unmanaged_outputs(device::AneSim& device, int versions, const std::string& scratch) {
  std::vector<std::vector<float>> out;
  for (int v = 0; v < versions; ++v) {
    const std::string folder = scratch + "/v" + std::to_string(v);
    const compile::KernelIo io = write_version(v, folder);
    const device::AneProgramId id = device.compile(folder);
    device.load(id);
    out.push_back(evaluate(device, id, io));
    device.unload(id);
  }
  return out;
}

device::AneSimOptions faithful_sim(int budget, bool reload_reads_weights) {
  device::AneSimOptions o;
  o.faithful = true;
  o.compile_budget = budget;
  o.reload_reads_weights = reload_reads_weights;
  return o;
}

std::vector<std::vector<float>> reference_outputs(int versions, const std::string& scratch) {
  device::AneSim device(faithful_sim(versions + 1000));
  return unmanaged_outputs(device, versions, scratch);
}

// Layout: "ORJS", then int32 next, processes, versions, values per version, then the floats.
void save_state(const std::string& path, const JobState& state) {
  std::vector<std::byte> bytes;
  const auto put = [&](const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes.insert(bytes.end(), b, b + n);
  };
  put("ORJS", 4);
  const std::int32_t per = state.outputs.empty() ? 0 : static_cast<std::int32_t>(state.outputs[0].size());
  const std::int32_t head[4] = {state.next, state.processes, static_cast<std::int32_t>(state.outputs.size()), per};
  put(head, sizeof head);
  for (const auto& o : state.outputs) {
    if (static_cast<std::int32_t>(o.size()) != per) throw Error(path + ": versions of different sizes");
    put(o.data(), o.size() * sizeof(float));
  }
  write_file_atomic(path, bytes);
}

JobState load_state(const std::string& path) {
  const auto file = MappedFile::open(path);
  const auto bytes = file->bytes();
  std::int32_t head[4];
  if (bytes.size() < 4 + sizeof head || std::memcmp(bytes.data(), "ORJS", 4) != 0)
    throw Error::in_file(path, "not a job state");
  std::memcpy(head, bytes.data() + 4, sizeof head);
  if (head[2] < 0 || head[3] < 0 ||
      bytes.size() != 4 + sizeof head + static_cast<std::size_t>(head[2]) * static_cast<std::size_t>(head[3]) * 4)
    throw Error::in_file(path, "truncated or inconsistent job state");
  JobState s{head[0], head[1], {}};
  const std::byte* p = bytes.data() + 4 + sizeof head;
  for (int i = 0; i < head[2]; ++i) {
    std::vector<float> o(static_cast<std::size_t>(head[3]));
    std::memcpy(o.data(), p, o.size() * sizeof(float));
    p += o.size() * sizeof(float);
    s.outputs.push_back(std::move(o));
  }
  return s;
}

}  // namespace orion::testing_job
