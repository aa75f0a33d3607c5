#include "demo_package.h"

#include <cstdio>
#include <cstring>

#include "compile/ane/ane_package_writer.h"
#include "core/random.h"
#include "core/stopwatch.h"
#include "core/temp_folder.h"
#include "exec/cpu/executor.h"
#include "model/gpt2/gpt2.h"
#include "model/decoder_ane_package.h"
#include "model/gpt2/gpt2_model.h"
#include "runtime/device_factory.h"
#include "runtime/package_session.h"
#include "tensor_summary.h"

namespace orion::cli {

namespace {

Tensor rows(const Tensor& t, std::int64_t begin, std::int64_t end) { return t.slice(0, begin, end).contiguous(); }

}  // namespace

void demo_package(const DemoPackageOptions& o) {
  model::Gpt2Config c;  // a small GPT-2: 4 layers of 256, a 4096-token vocabulary
  c.n_layer = 4;
  c.n_embd = 256;
  c.n_head = 4;
  c.n_positions = 256;
  c.vocab_size = 4096;
  const TensorMap w = model::gpt2_init_weights(c, o.seed);
  std::printf("\nThe whole model for the ANE: GPT-2 with %lld layers, dim %lld, vocabulary %lld\n",
              static_cast<long long>(c.n_layer), static_cast<long long>(c.n_embd), static_cast<long long>(c.vocab_size));

  TempFolder dir("orion-demo");
  const std::string pkg = dir.path() + "/pkg";
  Stopwatch sw;
  const auto report = compile::write_ane_package(model::gpt2_ane_programs(c, {.window = 64, .capacity = 128}), w, {}, pkg,
                                                  model::gpt2_package_model_info(c, "demo"));
  std::printf("compiled: %d kernels (%.1f MB of fp16 weights) and %d host steps in %.2f s (`orion compile --target ane` "
              "writes the same package; `orion inspect` shows it)\n",
              report.kernels, static_cast<double>(report.kernel_weight_bytes) / 1e6, report.host_segments, sw.seconds());

  Rng rng(o.seed + 1);
  const std::int64_t n = o.prompt + o.steps;
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(n)), pos(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<std::int32_t>(rng.next_u64() % static_cast<std::uint64_t>(c.vocab_size));
    pos[i] = static_cast<std::int32_t>(i);
  }
  TensorMap b = w;
  b["tokens"] = Tensor::from_ints({n}, tokens);
  b["positions"] = Tensor::from_ints({n}, pos);
  const Tensor want = exec::CpuExecutor(model::gpt2_graph(c, {.seq = n}), {exec::Numerics::f32, o.threads}).run(b)[0];

  const int threads = o.threads > 0 ? o.threads : 2;
  const std::unique_ptr<device::AneDevice> sim = runtime::open_device(runtime::ane_sim_options(threads));
  runtime::PackageRunner runner(pkg, *sim, threads);
  runtime::PackageSession session(runner);
  sw.restart();
  const Tensor pre = session.prefill(std::span(tokens).first(static_cast<std::size_t>(o.prompt)));
  const double prefill_ms = sw.ms();
  Tensor got(DType::f32, {o.steps, c.vocab_size});
  sw.restart();
  for (int s = 0; s < o.steps; ++s) {
    const Tensor l = session.decode(tokens[static_cast<std::size_t>(o.prompt + s)]);
    std::memcpy(got.data<float>() + s * c.vocab_size, l.raw(), l.nbytes());
  }
  const double decode_ms = sw.ms() / o.steps;
  const runtime::RunnerStats& st = runner.stats();
  std::printf("ane-sim: prefill of %lld tokens %.0f ms, then %d decode steps %.1f ms each (%d compiles, %d kernel runs, "
              "%d host steps)\n",
              static_cast<long long>(o.prompt), prefill_ms, o.steps, decode_ms, st.compiles, st.evaluations, st.host_runs);
  std::printf("ane-sim logits against f32 on the CPU: relative L2 error %.2g (prefill), %.2g (decode)\n",
              relative_rms(rows(want, 0, o.prompt), pre), relative_rms(rows(want, o.prompt, o.prompt + o.steps), got));
}

}  // namespace orion::cli
