#pragma once
// The pass interface of the ANE compiler. A pass rewrites an IR graph into an equivalent one
// that is closer to what the ANE accepts; the pipeline (pipeline.h) runs passes in order and
// verifies the graph after each.
//
// How passes change graphs: a pass that only edits nodes where they stand (their types, their
// attribute values, a constant's data) edits the graph in place; a pass that adds, removes or
// replaces nodes builds a new graph with GraphRewriter (rewriter.h) and assigns it. Rebuilding
// is the rule for structural changes because the IR keeps every node after its inputs and
// identifies values by their index: inserting the nine nodes of a gelu in the middle of the
// node vector, or deleting dead ones, would renumber every later value. A rebuild walks the old
// graph once in order, so it keeps that order for free, leaves no holes, and costs one copy of
// the node list (constant tensors are shared, not copied).
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace orion::ir {

// A note a pass leaves for the user: not an error (those throw), but something worth knowing,
// such as how many weights saturated when they became fp16.
struct Diagnostic {
  std::string pass;
  std::string message;
};

// What a running pass may report to its pipeline.
class PassContext {
 public:
  explicit PassContext(std::string pass_name) : pass_(std::move(pass_name)) {}
  const std::string& pass() const { return pass_; }
  void note(std::string message) { diagnostics_.push_back({pass_, std::move(message)}); }
  std::vector<Diagnostic>& diagnostics() { return diagnostics_; }

 private:
  std::string pass_;
  std::vector<Diagnostic> diagnostics_;
};

class Pass {
 public:
  virtual ~Pass() = default;
  // The pass's name in messages and in `--dump-after`.
  virtual std::string_view name() const = 0;
  // Rewrites `graph`; returns whether anything changed. Errors throw orion::Error.
  virtual bool run(ir::Graph& graph, PassContext& context) = 0;
};

// The functional form: a named function is a pass.
using PassFn = std::function<bool(ir::Graph&, PassContext&)>;
std::unique_ptr<Pass> make_pass(std::string name, PassFn fn);

}  // namespace orion::ir
