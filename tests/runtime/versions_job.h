#pragma once
// The job the budget tests run: one small kernel (y = gelu(x @ W_v + b_v), 32 tokens of 64
// channels) evaluated on a fixed input for successive weight versions v = 0, 1, ..., as a
// training loop does with each step's new weights. Each version's weights come from its own
// seed, so any version's outputs can be recomputed; a stale or garbage version shows.
// Shared by test_runtime and the restart_job executable.
#include <string>
#include <vector>

#include "compile/kernel_io.h"
#include "device/ane_sim.h"

namespace orion::testing_job {

// A faithful ane-sim (the device's rules) with a compile budget of `budget`, whose weight
// reload re-reads the weight files (`reload_reads_weights`) or keeps the compiled ones.
device::AneSimOptions faithful_sim(int budget, bool reload_reads_weights = true);

// Writes version `v` of the kernel as a kernel folder (model.mil + weights/weight.bin) and
// returns its I/O (the same for every version).
compile::KernelIo write_version(int v, const std::string& folder);

// The loaded program's outputs for the job's fixed input, token-major, as floats.
std::vector<float> evaluate(device::AneSim& device, device::AneProgramId id, const compile::KernelIo& io);

// Every version compiled afresh on a device whose budget is far above `versions`: the
// uninterrupted run the budgeted ones must equal. `scratch` is a folder for the kernels.
std::vector<std::vector<float>> reference_outputs(int versions, const std::string& scratch);

// What a job does with no bookkeeping: compile every version on `device` and evaluate it.
std::vector<std::vector<float>> unmanaged_outputs(device::AneSim& device, int versions, const std::string& scratch);

// The restart job's state: the next version to run, how many processes ran, outputs so far.
struct JobState {
  int next = 0;
  int processes = 1;
  std::vector<std::vector<float>> outputs;
};
void save_state(const std::string& path, const JobState& state);  // atomic
JobState load_state(const std::string& path);                      // throws orion::Error

}  // namespace orion::testing_job
