#pragma once
// `orion doctor`'s report: the plan as text (what a run on the Neural Engine would do), one
// line per check as it finishes, the summary, and the JSON file a user attaches to an issue.
// The JSON's fields are listed in docs/ane/DEVICE.md ("The first run on a Mac").
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/doctor.h"

namespace orion::runtime {

inline constexpr const char* kDoctorFormat = "orion-doctor";
inline constexpr int kDoctorVersion = 1;

// One line per check, then the probe and the budget: each check's name, what it exercises and
// its comparison ("ane against ane-sim, relative L2 error <= 0.01").
std::string doctor_plan_text(const std::vector<DoctorCheck>& plan, const std::string& device,
                             const std::string& reference);

// "  ok    NAME  relative L2 error 4.1e-04 (<= 0.01), max abs 1.2e-03; compile 10.2 ms, ...",
// the worst output's figures; or the error that stopped it.
std::string check_line(const CheckResult& r);

// The probe's answer, the budget and the verdict, a line each.
std::string doctor_summary_text(const DoctorReport& r);

// Keys in the order a reader wants them: what ran where first, then the checks.
nlohmann::ordered_json doctor_json(const DoctorReport& r);
// Written atomically; throws orion::Error naming the path when it cannot be.
void write_doctor_json(const DoctorReport& r, const std::string& path);

}  // namespace orion::runtime
