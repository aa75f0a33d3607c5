#pragma once
// Shared by the gradient tests: one small forward graph per case (every op with a gradient
// rule, with broadcasting and the attributes that matter), turned into a scalar loss, and
// central finite differences of a graph's loss in fp64.
#include <functional>
#include <string>
#include <vector>

#include "core/random.h"
#include "ir/builder.h"
#include "train/f64_interpreter.h"

namespace orion::train::testing {

// How a case's float inputs are drawn: uniform in [lo, hi), redrawn while within `gap` of one of
// `kinks` (so that central differences never straddle a point where the op is not smooth).
struct Domain {
  double lo = -2, hi = 2;
  std::vector<double> kinks = {};
  double gap = 0;
};

struct GradCase {
  std::string name;
  // Adds the case's inputs (float inputs are differentiated) and returns the value to check.
  std::function<ir::Value(ir::Builder&)> build;
  Domain domain = {};
};

std::vector<GradCase> grad_cases();

// forward graph of a case: its output times fixed random weights, summed to the scalar `loss`.
ir::Graph loss_graph(const GradCase& c, std::uint64_t seed);

// Random bindings for the graph's float inputs and params (and i32 inputs in [0, 2)).
F64Bindings random_bindings(const ir::Graph& g, const Domain& d, Rng& rng);

// The names of the graph's float inputs and params.
std::vector<std::string> float_sources(const ir::Graph& g);

// d loss / d (element i of binding `name`) by central differences with step h.
double finite_difference(const ir::Graph& forward, F64Bindings bindings, const std::string& name,
                         std::int64_t i, double h);

}  // namespace orion::train::testing
