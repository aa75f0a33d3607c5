#pragma once
// A ProcessExec that, instead of replacing the process, throws what it would have run: the
// supervisor's restart can be tested in-process (catch Execed and check its argv).
#include <string>
#include <vector>

#include "runtime/supervisor.h"

namespace orion::runtime::testing {

struct Execed {
  std::vector<std::string> argv;
};

class FakeExec : public ProcessExec {
 public:
  void exec(const std::vector<std::string>& argv) override { throw Execed{argv}; }
};

}  // namespace orion::runtime::testing
