#pragma once
// The pass pipeline: runs passes in order, verifies the graph after every one, and collects
// what the passes report. A pass that leaves an invalid graph stops the pipeline with an
// orion::Error naming the pass and the verifier's message; the graph is then left as that pass
// left it, so that it can be printed and looked at.
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "ir/transforms/pass.h"

namespace orion::ir {

// Called after each pass (once the graph passed the verifier) with the pass's name.
using AfterPassFn = std::function<void(std::string_view pass, const ir::Graph& graph)>;

struct PipelineOptions {
  bool verify_input = true;  // verify the graph before the first pass, so a failure is ours
  AfterPassFn after_pass;    // for `orion compile --dump-after`; see dump_ir_after()
};

struct PassRecord {
  std::string pass;
  bool changed = false;
};

struct PipelineResult {
  std::vector<PassRecord> passes;       // one per pass run, in order
  std::vector<Diagnostic> diagnostics;  // everything the passes noted, in order
  bool changed() const;
};

class Pipeline {
 public:
  Pipeline& add(std::unique_ptr<Pass> pass);
  Pipeline& add(std::string name, PassFn fn);
  std::vector<std::string> pass_names() const;

  PipelineResult run(ir::Graph& graph, const PipelineOptions& options = {});

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

// An AfterPassFn that writes "# after PASS" and the graph's IR text to `out` after each pass
// named in `only` (after every pass when `only` is empty).
AfterPassFn dump_ir_after(std::ostream& out, std::vector<std::string> only = {});

}  // namespace orion::ir
