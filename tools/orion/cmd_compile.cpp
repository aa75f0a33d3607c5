// orion compile: a model for the ANE.
//
//   orion compile -m DIR --target ane -o PKG   the whole model as a package (compile/ane/ane_package.h):
//                                              prefill and decode programs, kernels + host segments,
//                                              manifest.json; `orion inspect PKG` shows it
//   orion compile [--model DIR --layer L] -o K  one GPT-2 block as one kernel folder (model.mil,
//                                              weights/weight.bin), from a model's layer or GPT-2's
//                                              initialisation (--seed): what the demo runs
//
// Both print the passes' notes and the validator's warnings.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "ane_package_cli.h"
#include "commands.h"
#include "core/stopwatch.h"
#include "compile/driver.h"
#include "core/error.h"
#include "core/random.h"
#include "model/any_model.h"
#include "model/gpt2/gpt2_block.h"
#include "model/gpt2/gpt2_model.h"

namespace orion::cli {

namespace {

struct CompileOptions {
  std::string arch = "gpt2-block";
  std::string target;  // "ane": a whole-model package
  std::string out;
  std::string model;
  int layer = 0;
  std::int64_t dim = 768, heads = 12;
  std::uint64_t seed = 0;
  engine::AnePackageOptions pkg;  // --seq, --dialect, --m1-m2... (both modes)
  bool force = false, verbose = false;
  std::vector<std::string> dump_after;
};

// The block's graph and its weights under the graph's names ("h.0.*").
std::pair<ir::Graph, TensorMap> block_and_weights(const CompileOptions& o) {
  if (o.model.empty()) {
    const model::Gpt2BlockShape shape{.seq = o.pkg.seq, .dim = o.dim, .heads = o.heads};
    ir::Graph g = model::gpt2_block_graph(shape);
    Rng rng(o.seed);
    auto init = model::gpt2_init_params(g, 12, rng);  // residual scaling of GPT-2 124M's 12 layers
    return {std::move(g), TensorMap(init.begin(), init.end())};
  }
  const model::Gpt2Model m = model::Gpt2Model::load(o.model);
  const model::Gpt2Config& c = m.config();
  if (o.layer >= c.n_layer)
    throw Error("compile: --layer " + std::to_string(o.layer) + ", but " + o.model + " has " +
                std::to_string(c.n_layer) + " layers");
  const model::Gpt2BlockShape shape{
      .seq = o.pkg.seq, .dim = c.n_embd, .heads = c.n_head, .epsilon = c.layer_norm_epsilon, .hidden_size = c.n_inner};
  ir::Graph g = model::gpt2_block_graph(shape);
  const std::string prefix = "h." + std::to_string(o.layer) + ".";
  TensorMap params;
  for (const auto& [name, t] : m.weights())
    if (name.starts_with(prefix)) params.emplace("h.0." + name.substr(prefix.size()), t);
  return {std::move(g), std::move(params)};
}

void print_io(const char* role, const std::vector<compile::KernelIoTensor>& list) {
  for (const compile::KernelIoTensor& t : list)
    std::printf("  %s %-8s %s padded to %s, %lld bytes\n", role, t.name.c_str(), shape_str(t.logical).c_str(),
                shape_str(t.padded).c_str(), static_cast<long long>(t.bytes));
}

void run_package(const CompileOptions& o) {
  if (o.model.empty()) throw Error("compile --target ane: name the model folder with -m DIR");
  Stopwatch sw;
  const model::AnyModel any = model::load_any_model(o.model, o.pkg.context > 0 ? o.pkg.context + 1 : 0);
  const model::CausalLm& m = model::causal_lm(any);
  const double load_s = sw.seconds();
  std::fprintf(stderr, "compiling %s for the ANE (%s%s), prefill window %lld:\n", o.model.c_str(), o.pkg.dialect.c_str(),
               o.pkg.m1_m2 ? ", M1/M2" : "", static_cast<long long>(o.pkg.seq));
  sw.restart();
  const compile::PackageReport r = engine::compile_model_package(m, o.model, o.pkg, o.out, o.force, true);
  if (o.verbose)
    for (const ir::Diagnostic& d : r.diagnostics) std::printf("%s: %s\n", d.pass.c_str(), d.message.c_str());
  std::printf("wrote %s: %d kernels running %d programs to compile, weights %s (%.1f MB of kernel weights), %d host "
              "segments (%.1f MB of host weights) in %.2f s (model loaded in %.2f s); see `orion inspect %s`\n",
              o.out.c_str(), r.kernels, r.programs, std::string(compile::kernel_weights_name(r.weights)).c_str(),
              static_cast<double>(r.kernel_weight_bytes) / 1e6, r.host_segments, static_cast<double>(r.host_weight_bytes) / 1e6,
              sw.seconds(), load_s, o.out.c_str());
}

void run(const CompileOptions& o) {
  if (o.target == "ane") return run_package(o);
  if (o.pkg.m1_m2 && o.pkg.dialect != "ios16")
    throw Error("compile: M1/M2 targets need --dialect ios16 (ANE024)");
  auto [graph, params] = block_and_weights(o);
  compile::KernelOptions ko;
  ko.lowering.target.m1_m2 = o.pkg.m1_m2;
  if (const std::optional<compile::WeightForm> form = compile::weight_form_from_name(o.pkg.weights)) {
    ko.lowering.target.weights = *form;
    ko.lowering.target.weight_block = o.pkg.weight_block >= 0 ? o.pkg.weight_block : compile::default_weight_block(*form);
  }
  ko.lowering.kernel_name = o.arch;
  if (!o.dump_after.empty()) {
    std::vector<std::string> only = o.dump_after;
    if (only.size() == 1 && only[0] == "all") only.clear();
    ko.lowering.after_pass = ir::dump_ir_after(std::cout, only);
  }
  ko.mil.dialect = o.pkg.dialect == "ios16" ? compile::MilDialect::ios16 : compile::MilDialect::ios18;
  const compile::BuiltKernel built = compile::build_kernel(graph, params, o.out, ko);
  const compile::AneLowered& k = built.lowered;
  const compile::MilProgram& p = built.mil;

  for (const ir::Diagnostic& d : k.diagnostics) std::printf("%s: %s\n", d.pass.c_str(), d.message.c_str());
  for (const compile::AneViolation& w : k.warnings) std::printf("%s\n", w.message().c_str());
  std::printf("wrote %s/model.mil (%s, %zu bytes) and %zu weight blobs (%zu bytes)\n", o.out.c_str(),
              o.pkg.dialect.c_str(), p.text.size(), p.weights.count(), p.weights.bytes().size());
  std::printf("sequence %lld padded to %lld; binding order:\n", static_cast<long long>(k.io.seq),
              static_cast<long long>(k.io.padded_seq));
  print_io("in ", k.io.inputs);
  print_io("out", k.io.outputs);
}

}  // namespace

void add_compile_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile", "Compile a model for the ANE: a whole-model package (--target ane) or one GPT-2 block");
  auto o = std::make_shared<CompileOptions>();
  cmd->add_option("-o,--out", o->out, "Package folder (--target ane), else the kernel folder")->required();
  cmd->add_option("--target", o->target, "ane: compile the whole model (-m) into a package")->check(CLI::IsMember({"ane"}));
  cmd->add_option("-m,--model", o->model, "Model folder or GGUF file (with --target ane: the model; else the block's weights)");
  cmd->add_flag("-f,--force", o->force, "Replace an existing package folder");
  cmd->add_flag("-v,--verbose", o->verbose, "With --target ane: print every pass's notes per kernel");
  cmd->add_option("--arch", o->arch, "Without --target: what to compile (gpt2-block)")
      ->check(CLI::IsMember({"gpt2-block"}))
      ->capture_default_str();
  cmd->add_option("--layer", o->layer, "The model's layer to compile")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--dim", o->dim, "n_embd, without --model")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--heads", o->heads, "n_head, without --model")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the initialisation, without --model")->capture_default_str();
  add_ane_package_options(cmd, o->pkg, "--weights,--kernel-weights");
  cmd->add_option("--dump-after", o->dump_after, "Block mode: print the IR after these passes ('all': every pass)");
  cmd->callback([o] { run(*o); });
}

}  // namespace orion::cli
