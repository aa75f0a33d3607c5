#pragma once
// One weight file's entry in the dictionary handed to +[_ANEInMemoryModelDescriptor
// modelWithMILText:weights:optionsPlist:], {"offset": 0, "data": NSData}. The framework reads an
// entry by position, not by key: the descriptor's initializer hashes [[entry allValues]
// firstObject] by sending it -bytes, and saveModelFiles writes entry[[entry allKeys]
// firstObject] as the file (a public decompilation of iOS 18.2's framework). Were "offset" first,
// -[NSNumber bytes] would raise an Objective-C exception, which C++ cannot catch: the process
// would abort. So the entry is made as every project that ran on the hardware makes it, the
// literal @{@"offset": @0, @"data": data}, and checked before it is handed over. Apple only
// (and the Linux test of the check, against tests/apple_sdk and a stand-in Core Foundation).
#include <string>

#include "core/error.h"
#include "device/ane_bridge_apple_runtime.h"

namespace orion::device::apple {

// What clang compiles that literal to: +[NSDictionary dictionaryWithObjects:forKeys:count:], an
// immutable dictionary (the count is an NSUInteger, unsigned long on 64-bit Apple platforms).
using SendDictionary = id (*)(id, SEL, const id*, const id*, unsigned long);

// The entry for one file's bytes, autoreleased: alive until the enclosing pool ends.
inline id weight_entry(Class dictionary_class, CFDataRef data) {
  const auto offset = cf_number(0);
  const auto offset_key = cf_string("offset"), data_key = cf_string("data");
  const id objects[] = {ns(offset.get()), ns(data)};
  const id keys[] = {ns(offset_key.get()), ns(data_key.get())};
  const id entry = message<SendDictionary>()(ns(dictionary_class), selector("dictionaryWithObjects:forKeys:count:"),
                                             objects, keys, 2);
  if (!entry) throw Error("device ane: +[NSDictionary dictionaryWithObjects:forKeys:count:] returned nil");
  return entry;
}

// Throws orion::Error unless `entry` has two values and the first it enumerates is the data:
// CFDictionaryGetKeysAndValues gives the order -allValues and -allKeys give.
inline void check_weight_entry(CFDictionaryRef entry, const std::string& file) {
  const CFIndex count = CFDictionaryGetCount(entry);
  if (count != 2)
    throw Error("device ane: the weight entry for " + file + " has " + std::to_string(count) +
                " values, not the two of {\"offset\": 0, \"data\": NSData}");
  const void* keys[2] = {};
  const void* values[2] = {};
  CFDictionaryGetKeysAndValues(entry, keys, values);
  if (!values[0] || CFGetTypeID(values[0]) != CFDataGetTypeID())
    throw Error("device ane: the weight entry for " + file +
                " enumerates \"offset\" before \"data\", and the framework takes its first value for the "
                "file's bytes: sending that number -bytes would abort the process, so it is not handed over");
}

}  // namespace orion::device::apple
