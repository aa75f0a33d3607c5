// The check of a weight entry's order (device/ane_bridge_apple_weights.h) off Apple: compiled
// against the declarations of tests/apple_sdk and run on a stand-in Core Foundation whose
// dictionaries enumerate in creation order, so that a test can make the order a real dictionary
// might choose. The wrong order must be an orion::Error, never the abort it is on the device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "device/ane_bridge_apple_weights.h"
#include "device/core_foundation_stand_in.h"
#include "device/device_test_util.h"

namespace orion::device::apple {
namespace {

constexpr const char* kFile = "@model_path/weights/weight.bin";

// An entry of "offset" and "data" in this order of keys (both when `keys` names them twice).
Ref<CFDictionaryRef> entry(const std::vector<std::string>& keys) {
  const std::string blob = "a weight file's bytes";
  const auto data = cf_data(std::as_bytes(std::span(blob)));
  const auto zero = cf_number(0);
  std::vector<Ref<CFStringRef>> names;
  std::vector<const void*> k, v;
  for (const std::string& key : keys) {
    names.push_back(cf_string(key));
    k.push_back(names.back().get());
    v.push_back(key == "data" ? static_cast<CFTypeRef>(data.get()) : zero.get());
  }
  return Ref<CFDictionaryRef>(CFDictionaryCreate(kCFAllocatorDefault, k.data(), v.data(),
                                                 static_cast<CFIndex>(k.size()), &kCFTypeDictionaryKeyCallBacks,
                                                 &kCFTypeDictionaryValueCallBacks));
}

std::string error_of(CFDictionaryRef e) {
  return test_programs::error_of([&] { check_weight_entry(e, kFile); });
}

TEST(AneWeightEntry, DataFirstIsHandedOver) {
  {
    const auto e = entry({"data", "offset"});
    EXPECT_NO_THROW(check_weight_entry(e.get(), kFile));
  }
  EXPECT_EQ(stand_in::live_objects(), 0);
}

TEST(AneWeightEntry, OffsetFirstIsAnErrorNotAnAbort) {
  {
    const auto e = entry({"offset", "data"});
    const std::string m = error_of(e.get());
    EXPECT_NE(m.find(kFile), std::string::npos) << m;
    EXPECT_NE(m.find("enumerates \"offset\" before \"data\""), std::string::npos) << m;
  }
  EXPECT_EQ(stand_in::live_objects(), 0);
}

TEST(AneWeightEntry, AnEntryWithoutBothValuesIsAnError) {
  const auto only_data = entry({"data"});
  EXPECT_NE(error_of(only_data.get()).find("has 1 values, not the two"), std::string::npos);
  const auto three = entry({"data", "offset", "size"});
  EXPECT_NE(error_of(three.get()).find("has 3 values"), std::string::npos);
}

}  // namespace
}  // namespace orion::device::apple
