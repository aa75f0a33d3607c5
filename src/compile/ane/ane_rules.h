#pragma once
// The ANE constraint catalogue: the one list of what the Apple Neural Engine is known to do
// (docs/ane/HARDWARE.md), each rule with a stable id, what the hardware does when the rule
// is broken, where Orion enforces it, how to fix a violation and where the rule is known from.
// The validator (ane_validator.h) checks the rules of the graph and MIL stages; the runtime and
// the ane-sim device enforce the runtime ones. docs/ane/RULES.md is generated from this table
// (`orion rules --markdown`) and a test keeps the two equal.
#include <span>
#include <string>
#include <string_view>

namespace orion::compile {

// What the hardware does when the rule is broken.
enum class AneFailure : std::uint8_t {
  crash,   // the process dies
  loud,    // compile or evaluation reports an error (usually without a diagnosis)
  silent,  // wrong numbers, zeros or stale results, and no error
  poison,  // later evaluations in the process fail
  leak,    // device resources are not returned
  slow,    // correct but slower
  drift,   // correct but less precise
};

// Where Orion enforces the rule.
enum class AneStage : std::uint8_t {
  graph,    // the validator, on a kernel's graph in ANE form, before any MIL is written
  mil,      // the validator, on the MIL text and weight blob as written
  runtime,  // the device bridge, the runtime and ane-sim, while programs compile and run
};

// How firmly the record establishes the rule. Where one report stands alone or two disagree,
// the validator warns (naming both sides in the rule's text) instead of refusing, and the
// compiler keeps to the side that was seen to run.
enum class AneEvidence : std::uint8_t {
  seen,      // observed on hardware, not contradicted
  single,    // one project's report, not reproduced
  disputed,  // reports disagree
};

struct AneRule {
  std::string_view id;       // "ANE001": stable, never reused
  std::string_view summary;  // the rule, one sentence
  AneFailure failure;
  AneStage stage;
  std::string_view fix;     // what the compiler or the user does about it
  std::string_view source;  // where the rule is known from
  AneEvidence evidence = AneEvidence::seen;
};

std::span<const AneRule> ane_rules();
// The rule with that id; throws orion::Error for an unknown id.
const AneRule& ane_rule(std::string_view id);

std::string_view ane_failure_name(AneFailure f);
std::string_view ane_stage_name(AneStage s);
std::string_view ane_evidence_name(AneEvidence e);

// Violations of these rules stop the compiler; the others (slow, drift, and rules the record
// does not settle) are warnings.
constexpr bool ane_rule_is_error(const AneRule& r) {
  return r.failure != AneFailure::slow && r.failure != AneFailure::drift && r.evidence == AneEvidence::seen;
}

// docs/ane/RULES.md: the catalogue as a Markdown page.
std::string ane_rules_markdown();

}  // namespace orion::compile
