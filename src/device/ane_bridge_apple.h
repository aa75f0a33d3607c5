#pragma once
// The `ane` device: the Apple Neural Engine driven through the private AppleNeuralEngine
// framework (_ANEInMemoryModel and friends) from plain C++, with no Core ML. The sequence of
// calls, and what has and has not been verified where, is in docs/ane/DEVICE.md.
//
// Built only on Apple platforms (ane_bridge_apple.cpp); elsewhere open_ane_device throws
// (ane_bridge_elsewhere.cpp), and CI checks the Apple source with a compile-only step against
// tests/apple_sdk. Not thread-safe: one thread drives one device.
#include <memory>

#include "device/ane_device.h"

namespace orion::device {

struct AneBridgeOptions {
  int compile_budget = 119;  // ANE030
  unsigned int qos = 21;     // any of 0..63 works with no difference in latency (docs/ane/FORMATS.md)
};

// Opens the framework and checks that every class and method the bridge calls exists. Throws
// orion::Error naming what is missing (or, off macOS, saying that the device is absent).
std::unique_ptr<AneDevice> open_ane_device(AneBridgeOptions options = {});

}  // namespace orion::device
