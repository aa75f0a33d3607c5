// orion compile: one GPT-2 block as an ANE kernel. lower_for_ane (compile/ane_lowering.h),
// then the MIL text and its weight blob written into a folder (model.mil, weights/weight.bin):
// what ane-sim and the device compile. The weights are one layer of a model folder (--model,
// --layer) or GPT-2's initialisation (--seed). Prints the kernel's I/O in binding order, the
// passes' notes and the validator's warnings. Whole models (kernels + host ops), packages and
// manifests are later work; so is `--arch` beyond the one block.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "compile/ane_lowering.h"
#include "compile/mil_writer.h"
#include "core/error.h"
#include "core/random.h"
#include "model/gpt2_block.h"
#include "model/gpt2_model.h"

namespace orion::cli {

namespace {

struct CompileOptions {
  std::string arch = "gpt2-block";
  std::string out;
  std::string model;
  int layer = 0;
  std::int64_t dim = 768, heads = 12, seq = 64;
  std::uint64_t seed = 0;
  std::string dialect = "ios18";
  bool m1_m2 = false;
  std::vector<std::string> dump_after;
};

// The block's graph and its weights under the graph's names ("h.0.*").
std::pair<ir::Graph, compile::ParamValues> block_and_weights(const CompileOptions& o) {
  if (o.model.empty()) {
    const model::Gpt2BlockShape shape{.seq = o.seq, .dim = o.dim, .heads = o.heads};
    ir::Graph g = model::gpt2_block_graph(shape);
    Rng rng(o.seed);
    auto init = model::gpt2_init_params(g, 12, rng);  // residual scaling of GPT-2 124M's 12 layers
    return {std::move(g), compile::ParamValues(init.begin(), init.end())};
  }
  const model::Gpt2Model m = model::Gpt2Model::load(o.model);
  const model::Gpt2Config& c = m.config();
  if (o.layer >= c.n_layer)
    throw Error("compile: --layer " + std::to_string(o.layer) + ", but " + o.model + " has " +
                std::to_string(c.n_layer) + " layers");
  const model::Gpt2BlockShape shape{
      .seq = o.seq, .dim = c.n_embd, .heads = c.n_head, .epsilon = c.layer_norm_epsilon, .hidden_size = c.n_inner};
  ir::Graph g = model::gpt2_block_graph(shape);
  const std::string prefix = "h." + std::to_string(o.layer) + ".";
  compile::ParamValues params;
  for (const auto& [name, t] : m.weights())
    if (name.starts_with(prefix)) params.emplace("h.0." + name.substr(prefix.size()), t);
  return {std::move(g), std::move(params)};
}

void print_io(const char* role, const std::vector<compile::KernelIoTensor>& list) {
  for (const compile::KernelIoTensor& t : list)
    std::printf("  %s %-8s %s padded to %s, %lld bytes\n", role, t.name.c_str(), shape_str(t.logical).c_str(),
                shape_str(t.padded).c_str(), static_cast<long long>(t.bytes));
}

void run(const CompileOptions& o) {
  if (o.m1_m2 && o.dialect != "ios16")
    throw Error("compile: M1/M2 targets need --dialect ios16 (ANE024)");
  auto [graph, params] = block_and_weights(o);
  compile::AneLoweringOptions lo;
  lo.target.m1_m2 = o.m1_m2;
  lo.kernel_name = o.arch;
  if (!o.dump_after.empty()) {
    std::vector<std::string> only = o.dump_after;
    if (only.size() == 1 && only[0] == "all") only.clear();
    lo.after_pass = compile::dump_ir_after(std::cout, only);
  }
  const compile::AneLowered k = compile::lower_for_ane(graph, params, lo);
  compile::MilWriteOptions mo;
  mo.dialect = o.dialect == "ios16" ? compile::MilDialect::ios16 : compile::MilDialect::ios18;
  const compile::MilProgram p = compile::write_mil(k.graph, mo);
  compile::write_model_folder(p, o.out, mo);

  for (const compile::Diagnostic& d : k.diagnostics) std::printf("%s: %s\n", d.pass.c_str(), d.message.c_str());
  for (const compile::AneViolation& w : k.warnings) std::printf("%s\n", w.message().c_str());
  std::printf("wrote %s/model.mil (%s, %zu bytes) and %zu weight blobs (%zu bytes)\n", o.out.c_str(),
              o.dialect.c_str(), p.text.size(), p.weights.count(), p.weights.bytes().size());
  std::printf("sequence %lld padded to %lld; binding order:\n", static_cast<long long>(k.io.seq),
              static_cast<long long>(k.io.padded_seq));
  print_io("in ", k.io.inputs);
  print_io("out", k.io.outputs);
}

}  // namespace

void add_compile_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile", "Compile one GPT-2 block into an ANE kernel folder (MIL + weights)");
  auto o = std::make_shared<CompileOptions>();
  cmd->add_option("-o,--out", o->out, "Folder to write model.mil and weights/ into")->required();
  cmd->add_option("--arch", o->arch, "What to compile (only gpt2-block so far)")
      ->check(CLI::IsMember({"gpt2-block"}))
      ->capture_default_str();
  cmd->add_option("--model", o->model, "GPT-2 model folder to take the block's weights from (else GPT-2's init)");
  cmd->add_option("--layer", o->layer, "The model's layer to compile")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--dim", o->dim, "n_embd, without --model")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--heads", o->heads, "n_head, without --model")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seq", o->seq, "Tokens in the window (padded to a legal surface)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the initialisation, without --model")->capture_default_str();
  cmd->add_option("--dialect", o->dialect, "MIL dialect")->check(CLI::IsMember({"ios18", "ios16"}))->capture_default_str();
  cmd->add_flag("--m1-m2", o->m1_m2, "Target M1/M2 chips (ios16, matmul inner dimensions multiples of 32)");
  cmd->add_option("--dump-after", o->dump_after, "Print the IR after these passes ('all': every pass)");
  cmd->callback([o] { run(*o); });
}

}  // namespace orion::cli
