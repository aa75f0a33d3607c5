// orion doctor: the self-test for the first run on a Mac. With a Neural Engine it runs small
// programs Orion's compiler writes and every kernel of two tiny model packages on the `ane`
// device, each held to ane-sim on the same inputs, times them, counts the compiles against the
// budget, probes weight reload once, and writes a report a user can attach to an issue.
// Elsewhere it says why there is no `ane` device and what it would run, then runs the same
// checks on ane-sim against the CPU in f32, labelled as the emulator's self-check.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "core/error.h"
#include "core/machine_info.h"
#include "core/temp_folder.h"
#include "engine/doctor_packages.h"
#include "runtime/device_factory.h"
#include "runtime/doctor.h"
#include "runtime/doctor_programs.h"
#include "runtime/doctor_report.h"
#include "runtime/executable_identity.h"

namespace orion::cli {

namespace {

namespace fs = std::filesystem;

struct DoctorOpts {
  std::string json = "orion-doctor.json";
  std::string target = "auto";
  bool dry_run = false;
  std::uint64_t seed = 0;
  int threads = 2;
};

// The Neural Engine, or nullptr with the reason in `why`. ORION_ANE_TESTS=0 (a Mac without a
// Neural Engine, such as a virtual machine) keeps it closed, as it does for the tests.
std::unique_ptr<device::AneDevice> open_ane(std::string& why) {
  if (const char* v = std::getenv("ORION_ANE_TESTS"); v && std::string(v) == "0") {
    why = "ORION_ANE_TESTS=0: the ane device was not opened";
    return nullptr;
  }
  try {
    runtime::DeviceOptions d;
    d.kind = runtime::DeviceKind::ane;
    return runtime::open_device(d);
  } catch (const Error& e) {
    why = e.what();
    return nullptr;
  }
}

// The report's folder must exist before minutes of checks are spent on a report that cannot be
// written.
void require_report_folder(const std::string& json) {
  if (json.empty()) return;
  const fs::path folder = fs::absolute(json).parent_path();
  if (!fs::is_directory(folder))
    throw Error("--json " + json + ": the folder " + folder.string() + " does not exist");
}

void doctor_command(const DoctorOpts& o) {
  if (!o.dry_run) require_report_folder(o.json);
  runtime::DoctorReport report;
  report.machine = machine_info();
  report.orion_version = kOrionVersion;
  report.executable = runtime::executable_identity();
  std::unique_ptr<device::AneDevice> ane = open_ane(report.ane_error);
  const bool m1_m2 = o.target == "m1-m2" || (o.target == "auto" && is_m1_or_m2(report.machine.cpu));
  report.target = m1_m2 ? "m1-m2" : "any";

  const MachineInfo& m = report.machine;
  std::printf("orion %s (executable %s)\n", kOrionVersion,
              report.executable.empty() ? "unidentified" : report.executable.substr(0, 16).c_str());
  const std::string os = m.os_version.empty() ? m.os : m.os + " (macOS " + m.os_version + ")";
  std::printf("machine: %s, %s, %s, %d threads\n", os.c_str(), m.arch.c_str(), m.cpu.c_str(), m.cores);
  if (ane) std::printf("ane: available; programs compiled for the %s rules\n", m1_m2 ? "M1/M2" : "ANE");
  else std::printf("ane: not available: %s\n", report.ane_error.c_str());

  TempFolder tmp("orion-doctor");
  compile::AneTarget target;
  target.m1_m2 = m1_m2;
  std::vector<runtime::DoctorCheck> plan = runtime::write_doctor_programs(
      tmp.path() + "/programs", target, m1_m2 ? compile::MilDialect::ios16 : compile::MilDialect::ios18);
  for (const engine::DoctorPackage& p : engine::write_doctor_packages(tmp.path() + "/packages", m1_m2, o.seed))
    for (runtime::DoctorCheck& c : runtime::package_kernel_checks(p.folder, p.model)) plan.push_back(std::move(c));

  std::printf("\n%s\n%s", ane ? "The checks, each on the Neural Engine against ane-sim on the same inputs:"
                              : "On a Mac with a Neural Engine, orion doctor runs these checks, each on the ane device "
                                "against ane-sim on the same inputs:",
              runtime::doctor_plan_text(plan, "ane", "ane-sim").c_str());
  if (o.dry_run) {
    std::printf("--dry-run: nothing was run\n");
    return;
  }

  const std::unique_ptr<device::AneDevice> sim = runtime::open_device(runtime::ane_sim_options(o.threads, target));
  device::AneDevice& dev = ane ? *ane : *sim;
  report.device = ane ? "ane" : "ane-sim";
  report.reference = ane ? "ane-sim" : "cpu-f32";
  std::printf("\n%s\n", ane ? "Running them on the Neural Engine:"
                            : "Running them here on ane-sim against the CPU in f32 instead: a self-check of the "
                              "emulator, not a hardware result:");
  runtime::DoctorOptions d;
  d.run.seed = o.seed;
  d.run.cpu_threads = o.threads;
  d.target = target;
  runtime::run_doctor(plan, dev, ane ? sim.get() : nullptr, d, report, [](const runtime::CheckResult& r) {
    std::printf("%s\n", runtime::check_line(r).c_str());
    std::fflush(stdout);
  });
  std::printf("%s", runtime::doctor_summary_text(report).c_str());
  if (!o.json.empty()) {
    runtime::write_doctor_json(report, o.json);
    std::printf("report: %s (attach it to an issue, docs/ane/DEVICE.md says how)\n", o.json.c_str());
  }
  if (!report.passed())
    throw Error("doctor: " + std::to_string(report.failed()) + " check(s) failed on " + report.device +
                (o.json.empty() ? "" : "; the report is in " + o.json));
}

}  // namespace

void add_doctor_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "doctor", "Self-test of the Neural Engine against ane-sim, a report to attach to an issue (elsewhere: what it "
                "would run, and ane-sim against the CPU)");
  auto o = std::make_shared<DoctorOpts>();
  cmd->add_option("--json", o->json, "The JSON report to write ('' writes none)")->capture_default_str();
  cmd->add_flag("--dry-run", o->dry_run, "Write the programs and list the checks; run nothing");
  cmd->add_option("--target", o->target,
                  "Rules the programs are compiled for: auto (M1/M2 on an M1 or M2 chip, else any), any, m1-m2")
      ->check(CLI::IsMember({"auto", "any", "m1-m2"}))
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the inputs and of the tiny models' weights")->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads of ane-sim and of the CPU reference")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->callback([o] { doctor_command(*o); });
}

}  // namespace orion::cli
