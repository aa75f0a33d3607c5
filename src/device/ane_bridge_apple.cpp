// The `ane` device: the direct path of docs/ane/FORMATS.md ("The direct path on macOS") in plain
// C++. Everything
// that needs no Apple API (reading the folder, binding order, budget, surface checks) is in
// ane_bridge_program.h and ane_bridge_rules.h, tested everywhere; this file only talks to the
// framework. Never run by us on a Mac yet: docs/ane/DEVICE.md says what was verified where.
#include "device/ane_bridge_apple.h"

#include <IOSurface/IOSurfaceRef.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/stopwatch.h"
#include "core/temp_folder.h"
#include "device/ane_bridge_apple_runtime.h"
#include "device/ane_bridge_apple_surface.h"
#include "device/ane_bridge_apple_weights.h"
#include "device/ane_bridge_program.h"
#include "device/ane_bridge_rules.h"
#include "device/ane_request_cache.h"
#include "device/ane_retry.h"
#include "device/ane_work_folder.h"

namespace orion::device {

namespace {

namespace fs = std::filesystem;
using apple::DeviceTurn;
using apple::IoSurface;
using apple::message;
using apple::ns;
using apple::Ref;
using apple::selector;

constexpr const char* kFramework = "/System/Library/PrivateFrameworks/AppleNeuralEngine.framework/AppleNeuralEngine";

// The exact type of each method sent (qos is an unsigned int, errors come back as NSError**).
using SendDescriptor = id (*)(id, SEL, id, id, id);            // +modelWithMILText:weights:optionsPlist:
using SendObject = id (*)(id, SEL, id);                        // +inMemoryModelWithDescriptor:
using SendQosOptions = BOOL (*)(id, SEL, unsigned int, id, id*);  // -compileWithQoS:, -loadWithQoS:
using SendEvaluate = BOOL (*)(id, SEL, unsigned int, id, id, id*);  // -evaluateWithQoS:options:request:error:
using SendUnload = BOOL (*)(id, SEL, unsigned int, id*);       // -unloadWithQoS:error:
using SendSurface = id (*)(id, SEL, IOSurfaceRef);             // +objectWithIOSurface:
using SendRequest = id (*)(id, SEL, id, id, id, id, id, id, id);  // +requestWithInputs:...procedureIndex:

struct Classes {
  Class descriptor = nullptr;  // _ANEInMemoryModelDescriptor
  Class model = nullptr;       // _ANEInMemoryModel
  Class request = nullptr;     // _ANERequest
  Class surface = nullptr;     // _ANEIOSurfaceObject
  Class dictionary = nullptr;  // NSDictionary (Foundation), for the weight entries
};

Error call_failed(const std::string& call, const std::string& folder, const std::string& reason) {
  return Error("device ane: " + call + " failed for " + folder + ": " + reason);
}

// A missing method would raise an Objective-C exception that C++ cannot catch; checking every
// one up front turns a framework that changed into an error naming what changed.
void require_method(Class cls, const char* class_name, const char* name, bool class_method) {
  const SEL sel = selector(name);
  if (!(class_method ? class_getClassMethod(cls, sel) : class_getInstanceMethod(cls, sel)))
    throw Error(std::string("device ane: ") + (class_method ? "+[" : "-[") + class_name + " " + name +
                "] does not exist in this macOS's AppleNeuralEngine framework");
}

Classes open_framework() {
  // Never closed: the framework's classes stay registered with the runtime for the process.
  if (!dlopen(kFramework, RTLD_NOW)) {
    const char* why = dlerror();
    throw Error(std::string("device ane: dlopen(") + kFramework + ") failed: " + (why ? why : "no reason given"));
  }
  const auto find = [](const char* name) {
    Class c = objc_getClass(name);
    if (!c) throw Error(std::string("device ane: objc_getClass(\"") + name + "\") found no such class");
    return c;
  };
  Classes c;
  c.descriptor = find("_ANEInMemoryModelDescriptor");
  c.model = find("_ANEInMemoryModel");
  c.request = find("_ANERequest");
  c.surface = find("_ANEIOSurfaceObject");
  c.dictionary = find("NSDictionary");
  require_method(c.descriptor, "_ANEInMemoryModelDescriptor", "modelWithMILText:weights:optionsPlist:", true);
  require_method(c.model, "_ANEInMemoryModel", "inMemoryModelWithDescriptor:", true);
  for (const char* m : {"hexStringIdentifier", "compileWithQoS:options:error:", "loadWithQoS:options:error:",
                        "evaluateWithQoS:options:request:error:", "unloadWithQoS:error:"})
    require_method(c.model, "_ANEInMemoryModel", m, false);
  require_method(c.surface, "_ANEIOSurfaceObject", "objectWithIOSurface:", true);
  require_method(c.request, "_ANERequest",
                 "requestWithInputs:inputIndices:outputs:outputIndices:weightsBuffer:perfStats:procedureIndex:", true);
  require_method(c.dictionary, "NSDictionary", "dictionaryWithObjects:forKeys:count:", true);
  return c;
}

// A surface the device reads as plain bytes: width = bytes, height 1, one byte per element,
// pixel format 0 (docs/ane/FORMATS.md, "The direct path on macOS", step 5).
Ref<IOSurfaceRef> make_iosurface(std::size_t bytes) {
  const auto props = apple::cf_dictionary();
  const auto n = static_cast<long long>(bytes);
  const auto put = [&](CFStringRef key, long long value) {
    CFDictionarySetValue(props.get(), key, apple::cf_number(value).get());
  };
  put(kIOSurfaceWidth, n);
  put(kIOSurfaceHeight, 1);
  put(kIOSurfaceBytesPerElement, 1);
  put(kIOSurfaceBytesPerRow, n);
  put(kIOSurfaceAllocSize, n);
  put(kIOSurfacePixelFormat, 0);
  Ref<IOSurfaceRef> s(IOSurfaceCreate(props.get()));
  if (!s) throw Error("device ane: IOSurfaceCreate failed for a surface of " + std::to_string(bytes) + " bytes");
  if (IOSurfaceGetAllocSize(s.get()) < bytes)
    throw Error("device ane: IOSurfaceCreate gave " + std::to_string(IOSurfaceGetAllocSize(s.get())) +
                " bytes for a surface of " + std::to_string(bytes));
  return s;
}

// The program's own IOSurfaces, one per position, that host surfaces are copied through: made
// when a host surface is first bound there, and again when the caller's surface sizes change.
struct Staging {
  std::size_t bytes = 0;
  std::vector<std::unique_ptr<IoSurface>> surfaces;
};

struct Program {
  std::string folder;
  std::vector<AneIo> inputs, outputs;  // binding order
  std::vector<std::string> weights;    // the weight files the text names, relative to the folder
  AneWorkFolder work;                  // NSTemporaryDirectory()/hexStringIdentifier, and its kept files
  Ref<id> model;                       // _ANEInMemoryModel
  bool loaded = false;
  Staging staged_inputs, staged_outputs;
};

class AppleAneDevice final : public AneDevice {
 public:
  explicit AppleAneDevice(AneBridgeOptions options)
      : options_(options), budget_(options.compile_budget), kept_("orion-ane") {
    const apple::AutoreleasePool pool;
    classes_ = open_framework();
  }

  // Unloads what is still loaded (a loaded program holds device resources until the process
  // ends: ANE031) and removes the work folders (the kept files go with kept_). Errors cannot be
  // reported from here.
  ~AppleAneDevice() override {
    const apple::AutoreleasePool pool;
    for (auto& p : programs_) {
      if (p->loaded) {
        id error = nullptr;
        message<SendUnload>()(p->model.get(), selector("unloadWithQoS:error:"), options_.qos, &error);
      }
      std::error_code ec;
      fs::remove_all(p->work.dir(), ec);
    }
    programs_.clear();
    requests_->clear();  // the surfaces still out there keep the cache, not its requests
  }

  AneProgramId compile(const std::string& folder) override {
    const Stopwatch clock;
    const AneProgramSource src = read_program_folder(folder);
    {
      const std::lock_guard lock(mutex_);
      budget_.charge(folder);
    }
    const apple::AutoreleasePool pool;
    auto p = std::make_unique<Program>();
    p->folder = folder;
    p->inputs = src.inputs;
    p->outputs = src.outputs;
    for (const AneWeightFile& w : src.weights) p->weights.push_back(w.relative);

    // ANE025: the text as NSData. ANE026: a dictionary even when there are no weights.
    const auto mil = apple::cf_data(std::as_bytes(std::span(src.mil_text)));
    const auto weights = apple::cf_dictionary();
    for (const AneWeightFile& w : src.weights) {
      const id entry = apple::weight_entry(classes_.dictionary, apple::cf_data(w.bytes).get());
      apple::check_weight_entry(reinterpret_cast<CFDictionaryRef>(entry), w.key);
      apple::set(weights, w.key, entry);
    }
    const id descriptor = message<SendDescriptor>()(
        ns(classes_.descriptor), selector("modelWithMILText:weights:optionsPlist:"), ns(mil.get()),
        ns(weights.get()), nullptr);
    if (!descriptor)
      throw call_failed("+[_ANEInMemoryModelDescriptor modelWithMILText:weights:optionsPlist:]", folder,
                        "it returned nil");
    const id model =
        message<SendObject>()(ns(classes_.model), selector("inMemoryModelWithDescriptor:"), descriptor);
    if (!model) throw call_failed("+[_ANEInMemoryModel inMemoryModelWithDescriptor:]", folder, "it returned nil");
    const std::string hex = apple::utf8(message<apple::SendId>()(model, selector("hexStringIdentifier")));
    if (hex.empty()) throw call_failed("-[_ANEInMemoryModel hexStringIdentifier]", folder, "it returned no name");
    p->model = apple::retain(model);

    // The compiler runs in another process and reads the files, not the dictionary; it leaves
    // the compiled program beside them, and the folder is kept for the loads to come.
    p->work = AneWorkFolder((fs::path(apple::utf8(NSTemporaryDirectory())) / hex).string(), next_kept_dir());
    {
      const std::lock_guard lock_folder(folder_lock(p->work.dir()));
      p->work.write(src);
      id error = nullptr;
      const auto no_options = apple::cf_dictionary();
      if (!message<SendQosOptions>()(model, selector("compileWithQoS:options:error:"), options_.qos,
                                     ns(no_options.get()), &error)) {
        const std::string reason = apple::describe_error(error);
        remove_work_dir(*p);
        throw call_failed("-[_ANEInMemoryModel compileWithQoS:options:error:]", folder, reason);
      }
      p->work.keep();
    }
    const std::lock_guard lock(mutex_);
    programs_.push_back(std::move(p));
    timings_.compile_ms = clock.ms();
    return static_cast<AneProgramId>(programs_.size() - 1);
  }

  void load(AneProgramId handle) override {
    const Stopwatch clock;
    Program& p = program(handle);
    if (p.loaded)
      throw Error("device ane: program " + std::to_string(handle) + " (" + p.folder + ") is already loaded");
    const apple::AutoreleasePool pool;
    const auto no_options = apple::cf_dictionary();
    // An unload deleted the work folder, another program with this identifier may have, and a
    // weight file rewritten in the kernel folder is a reload: each attempt refreshes it first.
    const std::lock_guard lock_folder(folder_lock(p.work.dir()));
    const auto warning = retry_once(
        "-[_ANEInMemoryModel loadWithQoS:options:error:]", p.folder, kAneRetryPause, [&]() -> std::optional<std::string> {
          p.work.refresh(p.folder, p.weights);
          id error = nullptr;
          if (message<SendQosOptions>()(p.model.get(), selector("loadWithQoS:options:error:"), options_.qos,
                                        ns(no_options.get()), &error))
            return std::nullopt;
          return apple::describe_error(error);
        });
    if (warning) std::fprintf(stderr, "orion: warning: %s\n", warning->c_str());
    p.loaded = true;
    const std::lock_guard lock(mutex_);
    timings_.load_ms = clock.ms();
  }

  void unload(AneProgramId handle) override {
    Program& p = program(handle);
    if (!p.loaded) throw Error("device ane: program " + std::to_string(handle) + " (" + p.folder + ") is not loaded");
    const apple::AutoreleasePool pool;
    const std::lock_guard lock_folder(folder_lock(p.work.dir()));  // the framework deletes the folder
    id error = nullptr;
    if (!message<SendUnload>()(p.model.get(), selector("unloadWithQoS:error:"), options_.qos, &error))
      throw call_failed("-[_ANEInMemoryModel unloadWithQoS:error:]", p.folder, apple::describe_error(error));
    p.loaded = false;
  }

  AneSurface make_surface(std::size_t bytes) override {
    return apple::device_surface(make_iosurface(bytes), bytes, requests_);
  }

  // Binds the caller's surfaces that this device made as they are (zero-copy) and copies each
  // host surface through the program's own IOSurface for its position.
  void evaluate(AneProgramId handle, const std::vector<const AneSurface*>& inputs,
                const std::vector<AneSurface*>& outputs) override {
    const Stopwatch clock;
    Program& p = program(handle);
    if (!p.loaded) throw Error("device ane: program " + std::to_string(handle) + " (" + p.folder + ") is not loaded");
    check_surfaces(p.folder, p.inputs, p.outputs, inputs, outputs);
    const apple::AutoreleasePool pool;
    std::vector<IoSurface*> in(inputs.size()), out(outputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      in[i] = own(*inputs[i]);
      if (in[i]) continue;
      in[i] = &staged(p.staged_inputs, inputs.size(), i, inputs[i]->size());
      std::memcpy(in[i]->bytes().data(), inputs[i]->bytes().data(), inputs[i]->size());
    }
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      out[i] = own(*outputs[i]);
      if (!out[i]) out[i] = &staged(p.staged_outputs, outputs.size(), i, outputs[i]->size());
    }
    const AneRequestCache::Request request = request_for(p, handle, in, out);
    {
      std::vector<IoSurface*> bound = in;
      bound.insert(bound.end(), out.begin(), out.end());
      DeviceTurn turn(bound, p.folder);
      id error = nullptr;
      const auto no_options = apple::cf_dictionary();
      if (!message<SendEvaluate>()(p.model.get(), selector("evaluateWithQoS:options:request:error:"), options_.qos,
                                   ns(no_options.get()), ns(request.get()), &error))
        throw call_failed("-[_ANEInMemoryModel evaluateWithQoS:options:request:error:]", p.folder,
                          apple::describe_error(error));
      turn.relock();
    }
    for (std::size_t i = 0; i < outputs.size(); ++i)
      if (!own(*outputs[i])) std::memcpy(outputs[i]->bytes().data(), out[i]->bytes().data(), outputs[i]->size());
    const std::lock_guard lock(mutex_);
    timings_.evaluate_ms = clock.ms();
  }

  const std::vector<AneIo>& inputs(AneProgramId handle) const override { return program(handle).inputs; }
  const std::vector<AneIo>& outputs(AneProgramId handle) const override { return program(handle).outputs; }
  int compiles() const override {
    const std::lock_guard lock(mutex_);
    return budget_.used();
  }
  int loaded() const override {
    const std::lock_guard lock(mutex_);
    return static_cast<int>(std::count_if(programs_.begin(), programs_.end(), [](const auto& p) { return p->loaded; }));
  }
  AneTimings timings() const override {
    const std::lock_guard lock(mutex_);
    return timings_;
  }

 private:
  // (Handles are not called `id`: that is the Objective-C object type here.)
  Program& program(AneProgramId handle) const {
    const std::lock_guard lock(mutex_);
    if (handle < 0 || static_cast<std::size_t>(handle) >= programs_.size())
      throw Error("device ane: no program " + std::to_string(handle));
    return *programs_[static_cast<std::size_t>(handle)];
  }

  // Programs compiled from the same text and weights share a hexStringIdentifier, hence a work
  // folder: it goes only with the last of them.
  void remove_work_dir(const Program& p) {
    const std::lock_guard lock(mutex_);
    const bool shared = std::any_of(programs_.begin(), programs_.end(),
                                    [&](const auto& q) { return q.get() != &p && q->work.dir() == p.work.dir(); });
    std::error_code ec;
    if (!shared) fs::remove_all(p.work.dir(), ec);
  }

  // The lock of one work folder: what is written into it, the compile that reads it, the load
  // that needs it and the unload that deletes it, for every program sharing it.
  std::mutex& folder_lock(const std::string& dir) {
    const std::lock_guard lock(mutex_);
    return folder_locks_[dir];
  }

  std::string next_kept_dir() {
    const std::lock_guard lock(mutex_);
    return kept_.path() + "/" + std::to_string(kept_count_++);
  }

  // The IOSurface behind `s` when this device made it; null for host memory (or another
  // device's surface, which is copied like host memory).
  IoSurface* own(const AneSurface& s) const {
    auto* owner = dynamic_cast<IoSurface*>(s.owner());
    return owner && owner->made_by(requests_.get()) ? owner : nullptr;
  }

  // The program's IOSurface for position `i` of `count`, `bytes` long.
  IoSurface& staged(Staging& staging, std::size_t count, std::size_t i, std::size_t bytes) {
    if (staging.bytes != bytes || staging.surfaces.size() != count) {
      staging.surfaces.clear();  // their requests go with them
      staging.surfaces.resize(count);
      staging.bytes = bytes;
    }
    if (!staging.surfaces[i]) staging.surfaces[i] = std::make_unique<IoSurface>(make_iosurface(bytes), bytes, requests_);
    return *staging.surfaces[i];
  }

  // The request binding these IOSurfaces to program `handle`, made at the first evaluation on
  // them (docs/ane/FORMATS.md's direct path, step 6) and kept while they live.
  AneRequestCache::Request request_for(const Program& p, AneProgramId handle, const std::vector<IoSurface*>& in,
                                       const std::vector<IoSurface*>& out) {
    AneRequestCache::Key key;
    for (const IoSurface* s : in) key.push_back(s->serial());
    for (const IoSurface* s : out) key.push_back(s->serial());
    return requests_->get(handle, key, [&] { return make_request(p, in, out); });
  }

  AneRequestCache::Request make_request(const Program& p, const std::vector<IoSurface*>& in,
                                        const std::vector<IoSurface*>& out) const {
    std::vector<Ref<CFNumberRef>> indices;  // kept alive until the arrays hold them
    const auto wrap = [&](const std::vector<IoSurface*>& surfaces, std::vector<CFTypeRef>& objects,
                          std::vector<CFTypeRef>& numbers) {
      for (std::size_t i = 0; i < surfaces.size(); ++i) {
        const id object = message<SendSurface>()(ns(classes_.surface), selector("objectWithIOSurface:"), surfaces[i]->get());
        if (!object) throw call_failed("+[_ANEIOSurfaceObject objectWithIOSurface:]", p.folder, "it returned nil");
        objects.push_back(object);
        indices.push_back(apple::cf_number(static_cast<long long>(i)));
        numbers.push_back(indices.back().get());
      }
    };
    std::vector<CFTypeRef> in_objects, in_indices, out_objects, out_indices;
    wrap(in, in_objects, in_indices);
    wrap(out, out_objects, out_indices);
    const auto procedure = apple::cf_number(0);
    const id request = message<SendRequest>()(
        ns(classes_.request),
        selector("requestWithInputs:inputIndices:outputs:outputIndices:weightsBuffer:perfStats:procedureIndex:"),
        ns(apple::cf_array(in_objects).get()), ns(apple::cf_array(in_indices).get()),
        ns(apple::cf_array(out_objects).get()), ns(apple::cf_array(out_indices).get()), nullptr, nullptr,
        ns(procedure.get()));
    if (!request)
      throw call_failed("+[_ANERequest requestWithInputs:inputIndices:outputs:outputIndices:weightsBuffer:perfStats:"
                        "procedureIndex:]",
                        p.folder, "it returned nil");
    return AneRequestCache::Request(CFRetain(request), CFRelease);  // past the evaluation's pool
  }

  AneBridgeOptions options_;
  AneCompileBudget budget_;
  TempFolder kept_;  // each program's kept work files, in a folder of its own
  Classes classes_;
  // Shared with every IOSurface the device made, which outlive it as the caller likes.
  std::shared_ptr<AneRequestCache> requests_ = std::make_shared<AneRequestCache>();
  // Guards the table, the budget, the folder locks and the timings; one program's calls never
  // overlap (the caller's side of AneDevice's contract), so the framework's calls run under no
  // lock but their work folder's.
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Program>> programs_;
  std::map<std::string, std::mutex> folder_locks_;
  int kept_count_ = 0;
  AneTimings timings_;
};

}  // namespace

std::unique_ptr<AneDevice> open_ane_device(AneBridgeOptions options) {
#if !defined(__arm64__) && !defined(__aarch64__)
  throw Error("device ane: the Apple Neural Engine needs Apple silicon; this build is not for arm64");
#endif
  return std::make_unique<AppleAneDevice>(options);
}

}  // namespace orion::device
