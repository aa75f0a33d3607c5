#pragma once
// ane-sim: an emulator of the Apple Neural Engine's direct path, for machines without one.
// It takes what the hardware takes — a folder with model.mil and the weight files it names —
// through the MIL parser (never an in-memory graph), runs it with fp16 storage on the CPU
// executor, and keeps the device's rules (compile/ane/ane_rules.h):
//
//  * compile reads the text and the weights once: they are baked (ANE029); rewriting a weight
//    file changes nothing until the program is unloaded and loaded again (and then only if
//    `reload_reads_weights`, the capability reports disagree on);
//  * every compile counts against a per-process budget (ANE030, default 119);
//  * evaluate binds inputs in alphabetical order of their names and outputs likewise (ANE027),
//    requires one allocation size for all inputs and one for all outputs (ANE010), and reads
//    each surface as packed values from its start (ANE028);
//  * programs must be loaded to run and are counted until unloaded (ANE031);
//  * with a program cache folder, a program compiled before (same text, same weights) loads
//    from the cache without a compile, as the framework's cache does.
//
// By default every violation is a loud orion::Error naming the rule. `faithful` mode instead
// does what the hardware does: compiles that the ANE rejects fail without a diagnosis, and
// silent failures stay silent — garbage outputs after the compile budget or from undersized
// surfaces, stale weights after a file rewrite, zeros from a conv on a runtime weight, a device
// that fails every later evaluation after a `tile`. Tests use it to prove that the compiler and
// the runtime never depend on luck.
//
// One AneSim stands for one process's view of the device: its counters are the process's.
// Calls for different programs may come from different threads at once (AneDevice says so).
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compile/target.h"
#include "device/ane_device.h"

namespace orion::device {

struct AneSimOptions {
  bool faithful = false;
  int compile_budget = 119;
  // Whether unload + load re-reads the weight files (mechramc/Orion's "delta reload") or keeps
  // the weights of the compile (another report's M5): docs/ane/HARDWARE.md, "Weights".
  bool reload_reads_weights = true;
  compile::AneTarget target;  // the chip family emulated (m1_m2) and the opt-ins
  int threads = 1;
  // The framework's on-disk cache of compiled programs, keyed by the program text and its
  // weights: a program found there loads without a compile (not counted against the budget)
  // and survives the process. Empty: no cache. ane-sim keeps a marker per key; it still parses
  // the program, which is its way of running it.
  std::string program_cache_dir;
};

using AneSimIo = AneIo;

class AneSim : public AneDevice {
 public:
  explicit AneSim(AneSimOptions options = {});
  ~AneSim() override;

  // Compiles folder/model.mil with the weights it names. Throws orion::Error for a program the
  // device rejects (with the rule in default mode, without a diagnosis in faithful mode).
  AneProgramId compile(const std::string& folder) override;
  void load(AneProgramId id) override;
  void unload(AneProgramId id) override;

  // Runs a loaded program. inputs[i] binds the i-th input in alphabetical order of the
  // names (inputs() lists them in that order); outputs likewise.
  void evaluate(AneProgramId id, const std::vector<const AneSurface*>& inputs,
                const std::vector<AneSurface*>& outputs) override;

  // As evaluate; when the program is column-independent (live_column_width(id) > 0) and
  // live_columns is below its width, only the live columns are computed (a program narrowed to
  // them, built once per width asked for) and the other output columns are zero. The live
  // columns are the same bits as evaluate's (device/ane_live_columns.h says why).
  void evaluate_live(AneProgramId id, const std::vector<const AneSurface*>& inputs,
                     const std::vector<AneSurface*>& outputs, std::int64_t live_columns) override;

  // The column count S of a program that computes each column by itself, 0 for one that mixes
  // columns (or is garbage): what the static check at compile found.
  std::int64_t live_column_width(AneProgramId id) const;

  // The program's inputs and outputs in binding (alphabetical) order.
  const std::vector<AneSimIo>& inputs(AneProgramId id) const override;
  const std::vector<AneSimIo>& outputs(AneProgramId id) const override;

  int compiles() const override;
  int cache_hits() const;
  int loaded() const override;
  AneTimings timings() const override;
  bool poisoned() const { return poisoned_; }

 private:
  struct Program;
  Program& program(AneProgramId id) const;
  void bake(Program& p);
  void run(AneProgramId id, const std::vector<const AneSurface*>& inputs, const std::vector<AneSurface*>& outputs,
           std::int64_t live_columns);

  AneSimOptions options_;
  // Guards the program table, the counters and the timings, never a program's own state: one
  // program's calls do not overlap (the caller's side of the contract), so its compile or
  // evaluation runs unlocked while other threads use other programs.
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Program>> programs_;
  int compiles_ = 0;
  int cache_hits_ = 0;
  std::atomic<bool> poisoned_{false};
  AneTimings timings_;
};

}  // namespace orion::device
