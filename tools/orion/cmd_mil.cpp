// orion mil: a workbench for ANE programs written by hand or by other tools, as well as the
// kernel folders Orion writes. `check` prints the validator's verdict with rule ids, MIL lines,
// fixes and sources; `run` evaluates the program on ane-sim (or the ANE) with seeded or given
// inputs (runtime/program_run.h), writes the outputs as .npy and raw (.f16 or .f32), and with --compare
// reports each output's error against the same program in f32 on the CPU executor.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "commands.h"
#include "compile/ane/program_check.h"
#include "compile/mil/mil_parser.h"
#include "compile/target.h"
#include "core/error.h"
#include "runtime/device_factory.h"
#include "runtime/program_run.h"
#include "tensor_summary.h"

namespace orion::cli {

namespace {

struct TargetOpts {
  std::string target = "any";
};

void add_target_option(CLI::App* cmd, TargetOpts& o) {
  cmd->add_option("--target", o.target,
                  "Chip family whose rules apply: any (the rules every ANE keeps) or m1-m2 (stricter: ios16, no "
                  "cast, matmul inner dimensions of 32)")
      ->check(CLI::IsMember({"any", "m1-m2"}))
      ->capture_default_str();
}

compile::AneTarget target_of(const TargetOpts& o) {
  compile::AneTarget t;
  t.m1_m2 = o.target == "m1-m2";
  return t;
}

std::string type_str(const compile::MilVar& v) {
  return v.type.dtype + shape_str(v.type.shape);
}

void check_command(const std::string& dir, const TargetOpts& t) {
  runtime::require_program_folder(dir);
  const compile::ProgramVerdict v = compile::check_program_folder(dir, target_of(t));
  std::printf("%s: %d ops, %zu inputs, %zu outputs, weight files: ", v.mil_path.c_str(), v.ops, v.inputs.size(),
              v.outputs.size());
  for (std::size_t i = 0; i < v.weight_files.size(); ++i) std::printf("%s%s", i ? ", " : "", v.weight_files[i].c_str());
  std::printf("%s\n", v.weight_files.empty() ? "none" : "");
  const compile::AneTarget target = target_of(t);
  std::printf("  weight slots: %lld of %lld (%lld BLOBFILE tensors%s; ANE037)\n", static_cast<long long>(v.slots.total()),
              static_cast<long long>(target.max_weight_tensors), static_cast<long long>(v.slots.blobfile_tensors),
              v.slots.scalar_operand ? " + 1 for scalar operands" : "");
  if (v.slots.total() > target.max_weight_tensors)
    std::printf("  warning: over the %lld weight slots a program was seen to compile with (ANE037)\n",
                static_cast<long long>(target.max_weight_tensors));
  for (const compile::MilVar& in : v.inputs) std::printf("  input  %-24s %s\n", in.name.c_str(), type_str(in).c_str());
  for (const compile::MilVar& out : v.outputs) std::printf("  output %-24s %s\n", out.name.c_str(), type_str(out).c_str());
  for (const compile::ProgramFinding& f : v.findings) std::fputs(compile::describe_finding(f).c_str(), stdout);
  if (!v.unreadable.empty())
    std::printf("error: %s\n  (the program has no meaning the emulator can run, so the graph rules were not checked; "
                "the device's compiler refuses such a program too)\n",
                v.unreadable.c_str());
  const int errors = v.errors();
  const int warnings = static_cast<int>(v.findings.size()) - (errors - (v.unreadable.empty() ? 0 : 1));
  if (errors > 0) {
    const auto first = std::find_if(v.findings.begin(), v.findings.end(),
                                     [](const compile::ProgramFinding& f) { return f.violation.is_error(); });
    throw Error(dir + ": the device would reject this program: " + std::to_string(errors) + " error(s), " +
                std::to_string(warnings) + " warning(s); the first: " +
                (first != v.findings.end() ? std::string(first->violation.rule->id) + " at " + first->at
                                           : v.unreadable));
  }
  std::printf("%s: the %s rules hold (%d warning(s))\n", dir.c_str(), t.target == "m1-m2" ? "M1/M2" : "ANE",
              warnings);
}

struct RunOpts {
  std::string dir, inputs, out = "mil-run", device = "ane-sim";
  TargetOpts target;
  bool faithful = false, compare = false;
  std::uint64_t seed = 0;
  int threads = 2;
};

void run_command(const RunOpts& o) {
  runtime::ProgramRunOptions r;
  r.device.kind = runtime::device_kind(o.device);
  r.device.threads = o.threads;
  r.device.target = target_of(o.target);
  r.device.faithful = o.faithful;
  r.inputs = o.inputs;
  r.seed = o.seed;
  r.compare = o.compare;
  r.cpu_threads = o.threads;
  const runtime::ProgramRun run = runtime::run_program_folder(o.dir, r);
  runtime::write_program_run(run, o.out);
  for (const runtime::ProgramValue& out : run.outputs) std::printf("%s %s\n", out.name.c_str(), summarize(out.value).c_str());
  std::fprintf(stderr, "ran %s on %s%s: %zu inputs (%s), outputs in %s/ (.npy and raw .f16 or .f32)\n", o.dir.c_str(),
               o.device.c_str(), o.faithful ? " (faithful)" : "", run.inputs.size(),
               o.inputs.empty() ? ("seed " + std::to_string(o.seed)).c_str() : o.inputs.c_str(), o.out.c_str());
  if (!o.compare) return;
  std::printf("compared with the program in f32 on the CPU:\n");
  for (std::size_t i = 0; i < run.outputs.size(); ++i) {
    const Tensor& got = run.outputs[i].value;
    const std::vector<float> w = run.reference[i].to_floats(), h = got.to_floats();
    double max_abs = 0;
    for (std::size_t j = 0; j < w.size(); ++j) max_abs = std::max(max_abs, std::abs(double(w[j]) - double(h[j])));
    std::printf("  %-24s relative rms error %.3g, max abs error %.3g\n", run.outputs[i].name.c_str(),
                relative_rms(run.reference[i], got), max_abs);
  }
}

}  // namespace

void add_mil_command(CLI::App& app) {
  auto* mil = app.add_subcommand("mil", "Check and run ANE programs (a folder with model.mil and its weights)");
  mil->require_subcommand(1);

  auto* check = mil->add_subcommand("check", "Print the validator's verdict: rule ids, MIL lines, fixes, sources");
  auto dir = std::make_shared<std::string>();
  auto target = std::make_shared<TargetOpts>();
  check->add_option("dir", *dir, "Program folder (model.mil + weights/), e.g. a kernel folder of a package")->required();
  add_target_option(check, *target);
  check->callback([dir, target] { check_command(*dir, *target); });

  auto* run = mil->add_subcommand("run", "Run a program on ane-sim with seeded or given inputs; write the outputs");
  auto o = std::make_shared<RunOpts>();
  run->add_option("dir", o->dir, "Program folder (model.mil + weights/)")->required();
  run->add_option("--inputs", o->inputs, "Folder with NAME.npy per program input (f16 or f32); else seeded normal(0, 1)");
  run->add_option("--out", o->out, "Folder for the outputs (NAME.npy, NAME.f16 or NAME.f32) and the inputs used (inputs/)")
      ->capture_default_str();
  run->add_option("--seed", o->seed, "Seed of the random inputs")->capture_default_str();
  run->add_option("--device", o->device, "ane-sim, or ane on a Mac")->check(CLI::IsMember({"ane-sim", "ane"}))
      ->capture_default_str();
  run->add_flag("--faithful", o->faithful, "ane-sim does what the hardware does: silent failures stay silent");
  run->add_flag("--compare", o->compare, "Also run the program in f32 on the CPU and report each output's error");
  run->add_option("--threads", o->threads, "The emulator's threads")->check(CLI::PositiveNumber)->capture_default_str();
  add_target_option(run, o->target);
  run->callback([o] { run_command(*o); });
}

}  // namespace orion::cli
