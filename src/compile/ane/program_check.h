#pragma once
// The validator's verdict on a program folder as a user hands it over (model.mil and the weight
// files it names): what `orion mil check` prints and ane-sim enforces, for programs written by
// hand or by other tools as well as by Orion. Every violation carries the MIL line it is about.
#include <string>
#include <vector>

#include "compile/ane/ane_validator.h"
#include "compile/ane/weight_slots.h"
#include "compile/mil/mil_ast.h"

namespace orion::compile {

struct ProgramFinding {
  AneViolation violation;
  std::string at;  // "FOLDER/model.mil:LINE:COL" of the op, input or argument, or the file
};

struct ProgramVerdict {
  std::string mil_path;
  std::vector<ProgramFinding> findings;  // MIL-stage rules first, then graph-stage, in text order
  std::vector<MilVar> inputs, outputs;   // as the signature and the return name them
  std::vector<std::string> weight_files;  // each file a BLOBFILE names, once, relative to the folder, sorted
  WeightSlots slots;                      // the per-program weight budget spent (ANE037)
  int ops = 0;
  // The MIL reader's error when the program has no IR form (an unknown op, an argument of the
  // wrong kind, a type that does not check, a weight file that cannot be read): the device's
  // compiler refuses such a program too. Empty when it was read; then the graph-stage rules
  // were checked.
  std::string unreadable;
  int errors() const;
};

// Parses and checks folder/model.mil against every MIL- and graph-stage rule for `target`.
// Text that does not parse throws orion::Error "FILE:LINE:COL: ..." as the MIL parser says it.
ProgramVerdict check_program_folder(const std::string& folder, const AneTarget& target);

// "error ANE004 m/model.mil:12:5 %c (concat): concat is not opted in\n  fix: ...\n  source: ..."
std::string describe_finding(const ProgramFinding& f);

}  // namespace orion::compile
