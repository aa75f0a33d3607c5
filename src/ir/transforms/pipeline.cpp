#include "ir/transforms/pipeline.h"

#include <algorithm>

#include "core/error.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace orion::ir {

namespace {

class FunctionPass final : public Pass {
 public:
  FunctionPass(std::string name, PassFn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string_view name() const override { return name_; }
  bool run(ir::Graph& graph, PassContext& context) override { return fn_(graph, context); }

 private:
  std::string name_;
  PassFn fn_;
};

}  // namespace

std::unique_ptr<Pass> make_pass(std::string name, PassFn fn) {
  if (!fn) throw Error("pass '" + name + "' has no function");
  return std::make_unique<FunctionPass>(std::move(name), std::move(fn));
}

bool PipelineResult::changed() const {
  return std::any_of(passes.begin(), passes.end(), [](const PassRecord& r) { return r.changed; });
}

Pipeline& Pipeline::add(std::unique_ptr<Pass> pass) {
  if (!pass) throw Error("pipeline: null pass");
  passes_.push_back(std::move(pass));
  return *this;
}

Pipeline& Pipeline::add(std::string name, PassFn fn) {
  return add(make_pass(std::move(name), std::move(fn)));
}

std::vector<std::string> Pipeline::pass_names() const {
  std::vector<std::string> names;
  for (const auto& p : passes_) names.emplace_back(p->name());
  return names;
}

PipelineResult Pipeline::run(ir::Graph& graph, const PipelineOptions& options) {
  if (options.verify_input) {
    try {
      ir::verify(graph);
    } catch (const Error& e) {
      throw Error("pipeline: the input graph is invalid: " + std::string(e.what()));
    }
  }
  PipelineResult result;
  for (const auto& pass : passes_) {
    const std::string name(pass->name());
    PassContext context(name);
    bool changed = false;
    try {
      changed = pass->run(graph, context);
    } catch (const Error& e) {
      throw Error("pass '" + name + "': " + e.what());
    }
    // Every problem, not only the first: a broken pass tends to break several nodes at once.
    const std::vector<std::string> problems = ir::check_graph(graph);
    if (!problems.empty()) {
      std::string msg = "pass '" + name + "' left an invalid graph: " + problems.front();
      if (problems.size() > 1) msg += " (and " + std::to_string(problems.size() - 1) + " more problems)";
      throw Error(msg);
    }
    result.passes.push_back({name, changed});
    for (Diagnostic& d : context.diagnostics()) result.diagnostics.push_back(std::move(d));
    if (options.after_pass) options.after_pass(name, graph);
  }
  return result;
}

AfterPassFn dump_ir_after(std::ostream& out, std::vector<std::string> only) {
  return [&out, only = std::move(only)](std::string_view pass, const ir::Graph& graph) {
    if (!only.empty() && std::find(only.begin(), only.end(), pass) == only.end()) return;
    out << "# after " << pass << "\n" << ir::print_graph(graph);
  };
}

}  // namespace orion::ir
