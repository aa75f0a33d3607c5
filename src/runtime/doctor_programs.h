#pragma once
// The programs `orion doctor` runs: a few small ones, each written by the compiler (as the
// reload probe's kernel is) to exercise one thing the hardware must do as ane-sim does, and
// every kernel of a compiled package. Made by Orion's own compiler rather than by hand, because
// what a user needs to know is whether the programs Orion writes run on their Neural Engine.
#include <string>
#include <vector>

#include "compile/mil/mil_syntax.h"
#include "compile/target.h"
#include "runtime/doctor_check.h"

namespace orion::runtime {

// Tolerances: fp16 against fp16 (or f32) for one or two ops, and for a whole transformer
// block's chain of them.
inline constexpr double kProgramTolerance = 1e-2;
inline constexpr double kKernelTolerance = 2e-2;

// Writes the small programs into dir/<name> for `target` in `dialect` (M1/M2 chips need ios16)
// and returns their checks, named "program/<name>". Seeded: the same bytes every run.
std::vector<DoctorCheck> write_doctor_programs(const std::string& dir, const compile::AneTarget& target,
                                               compile::MilDialect dialect);

// One check per kernel folder of the package at `package` (a folder shared by several steps
// once), named "<label>/<folder>". Throws orion::Error for a package whose manifest is
// unreadable or that has no kernels.
std::vector<DoctorCheck> package_kernel_checks(const std::string& package, const std::string& label,
                                               double tolerance = kKernelTolerance);

}  // namespace orion::runtime
