#include "bench_decode_ane.h"

#include "compile/ane/ane_package.h"
#include "core/error.h"
#include "core/stopwatch.h"
#include "runtime/device_factory.h"
#include "runtime/package_session.h"

namespace orion::cli {

struct AneSimDecodeBench::Impl {
  std::unique_ptr<device::AneDevice> sim;
  runtime::PackageRunner runner;
  runtime::PackageSession session;

  Impl(const std::string& package, int threads)
      : sim(runtime::open_device(runtime::ane_sim_options(threads, compile::read_manifest(package).target))),
        runner(package, *sim, threads),
        session(runner) {}
};

AneSimDecodeBench::AneSimDecodeBench(const std::string& package, int threads)
    : impl_(std::make_unique<Impl>(package, threads)) {
  const std::int32_t first[] = {0};
  impl_->session.prefill(first);
  impl_->session.decode(0);
}

AneSimDecodeBench::~AneSimDecodeBench() = default;

double AneSimDecodeBench::run(std::span<const std::int32_t> tokens) {
  if (tokens.size() < 2) throw Error("ane-sim decode bench: needs a prompt token and a token to decode");
  if (static_cast<std::int64_t>(tokens.size()) > impl_->session.capacity())
    throw Error("--tokens must be below the package's decode capacity of " + std::to_string(impl_->session.capacity()));
  impl_->session.prefill(tokens.first(1));
  Stopwatch sw;
  for (std::int32_t t : tokens.subspan(1)) impl_->session.decode(t);
  return static_cast<double>(tokens.size() - 1) / sw.seconds();
}

std::vector<std::vector<float>> AneSimDecodeBench::logits(std::span<const std::int32_t> tokens) {
  std::vector<std::vector<float>> out;
  if (tokens.empty()) return out;
  const auto last_row = [](const Tensor& t) {
    const std::vector<float> all = t.to_floats();
    const auto v = static_cast<std::size_t>(t.shape().back());
    return std::vector<float>(all.end() - static_cast<std::ptrdiff_t>(v), all.end());
  };
  out.push_back(last_row(impl_->session.prefill(tokens.first(1))));
  for (std::int32_t t : tokens.subspan(1)) out.push_back(last_row(impl_->session.decode(t)));
  return out;
}

}  // namespace orion::cli
