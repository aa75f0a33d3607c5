#pragma once
// What a program spends of the ANE's per-program weight budget (ANE037): one slot per BLOBFILE
// weight tensor, and one more, once, when an elementwise op takes an inline scalar const
// (add, mul, pow... against a value written in the text, not a BLOBFILE). Counted on the MIL,
// as the hardware's compiler sees it; the partitioner keeps kernels inside the same budget.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compile/mil/mil_ast.h"

namespace orion::compile {

struct WeightSlots {
  std::int64_t blobfile_tensors = 0;
  bool scalar_operand = false;
  MilPos scalar_at;  // the first such op
  std::map<std::string, std::int64_t> tensors_per_file;  // BLOBFILE path -> tensors in it
  std::vector<std::string> names;  // the ops holding them, in text order

  std::int64_t total() const { return blobfile_tensors + (scalar_operand ? 1 : 0); }
};

WeightSlots count_weight_slots(const MilFunction& f);

}  // namespace orion::compile
