#pragma once
// Calling Objective-C from plain C++: references to Core Foundation and Objective-C objects,
// autorelease pools, messages through objc_msgSend, and the CF objects that stand in for
// NSData, NSDictionary, NSArray, NSNumber and NSString (toll-free bridged). Apple only: included
// by ane_bridge_apple.cpp alone (and by the Linux compile-only check, against tests/apple_sdk).
#include <CoreFoundation/CoreFoundation.h>
#include <objc/message.h>
#include <objc/runtime.h>

#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

// Exported by libobjc and Foundation but declared only in private or Objective-C headers.
extern "C" {
void* objc_autoreleasePoolPush(void);
void objc_autoreleasePoolPop(void* pool);
id NSTemporaryDirectory(void);  // NSString*
}

namespace orion::device::apple {

// Objects the framework autoreleases inside a call die when the pool around the call ends.
// There is no pool on a thread by default in a C++ program: without one they would leak.
class AutoreleasePool {
 public:
  AutoreleasePool() : pool_(objc_autoreleasePoolPush()) {}
  ~AutoreleasePool() { objc_autoreleasePoolPop(pool_); }
  AutoreleasePool(const AutoreleasePool&) = delete;
  AutoreleasePool& operator=(const AutoreleasePool&) = delete;

 private:
  void* pool_;
};

// An owned (+1) reference to a Core Foundation or Objective-C object; CFRelease releases either.
template <typename T>
class Ref {
 public:
  Ref() = default;
  explicit Ref(T owned) : ref_(owned) {}
  ~Ref() {
    if (ref_) CFRelease(ref_);
  }
  Ref(Ref&& other) noexcept : ref_(std::exchange(other.ref_, nullptr)) {}
  Ref& operator=(Ref&& other) noexcept {
    std::swap(ref_, other.ref_);
    return *this;
  }
  T get() const { return ref_; }
  explicit operator bool() const { return ref_ != nullptr; }

 private:
  T ref_ = nullptr;
};

// Keeps an autoreleased object past the pool it was made in.
inline Ref<id> retain(id object) {
  CFRetain(object);
  return Ref<id>(object);
}

// A CF object as the Objective-C object it is bridged to.
inline id ns(CFTypeRef cf) { return static_cast<id>(const_cast<void*>(cf)); }
inline id ns(Class cls) { return reinterpret_cast<id>(cls); }

inline SEL selector(const char* name) { return sel_registerName(name); }

// objc_msgSend as the exact function type of one method: the ABI passes arguments by their
// declared types, so every method gets its own type, spelled where it is sent.
template <typename Fn>
Fn message() {
  return reinterpret_cast<Fn>(&objc_msgSend);
}

using SendId = id (*)(id, SEL);  // a method without arguments returning an object

[[noreturn]] inline void out_of_memory(const char* call) {
  throw Error(std::string("device ane: ") + call + " returned NULL (out of memory)");
}

inline Ref<CFDataRef> cf_data(std::span<const std::byte> bytes) {
  CFDataRef d = CFDataCreate(kCFAllocatorDefault, reinterpret_cast<const UInt8*>(bytes.data()),
                             static_cast<CFIndex>(bytes.size()));
  if (!d) out_of_memory("CFDataCreate");
  return Ref<CFDataRef>(d);
}

inline Ref<CFStringRef> cf_string(const std::string& text) {
  CFStringRef s = CFStringCreateWithCString(kCFAllocatorDefault, text.c_str(), kCFStringEncodingUTF8);
  if (!s) throw Error("device ane: CFStringCreateWithCString refused '" + text + "' (not UTF-8?)");
  return Ref<CFStringRef>(s);
}

inline Ref<CFNumberRef> cf_number(long long value) {
  static_assert(sizeof(long long) == 8, "kCFNumberSInt64Type reads 8 bytes");
  CFNumberRef n = CFNumberCreate(kCFAllocatorDefault, kCFNumberSInt64Type, &value);
  if (!n) out_of_memory("CFNumberCreate");
  return Ref<CFNumberRef>(n);
}

// An empty NSMutableDictionary with retaining keys and values (what `@{}` gives).
inline Ref<CFMutableDictionaryRef> cf_dictionary() {
  CFMutableDictionaryRef d = CFDictionaryCreateMutable(kCFAllocatorDefault, 0, &kCFTypeDictionaryKeyCallBacks,
                                                       &kCFTypeDictionaryValueCallBacks);
  if (!d) out_of_memory("CFDictionaryCreateMutable");
  return Ref<CFMutableDictionaryRef>(d);
}

inline void set(const Ref<CFMutableDictionaryRef>& dict, const std::string& key, CFTypeRef value) {
  CFDictionarySetValue(dict.get(), cf_string(key).get(), value);
}

// An NSArray retaining `objects`.
inline Ref<CFArrayRef> cf_array(std::vector<CFTypeRef> objects) {
  CFArrayRef a = CFArrayCreate(kCFAllocatorDefault, objects.data(),
                               static_cast<CFIndex>(objects.size()), &kCFTypeArrayCallBacks);
  if (!a) out_of_memory("CFArrayCreate");
  return Ref<CFArrayRef>(a);
}

// An NSString (or CFString) as UTF-8.
inline std::string utf8(id string) {
  if (!string) return {};
  const auto s = reinterpret_cast<CFStringRef>(string);
  const CFIndex size = CFStringGetMaximumSizeForEncoding(CFStringGetLength(s), kCFStringEncodingUTF8) + 1;
  std::string text(static_cast<std::size_t>(size), '\0');
  if (!CFStringGetCString(s, text.data(), size, kCFStringEncodingUTF8)) return "(a string not convertible to UTF-8)";
  text.resize(std::strlen(text.c_str()));
  return text;
}

// An NSError as one line: its localized description, then its full description (domain, code
// and user info, where the framework puts the reason) when that says more.
inline std::string describe_error(id error) {
  if (!error) return "it returned NO without an NSError";
  const std::string localized = utf8(message<SendId>()(error, selector("localizedDescription")));
  const std::string full = utf8(message<SendId>()(error, selector("description")));
  if (localized.empty()) return full.empty() ? "an NSError without a description" : full;
  if (full.empty() || full == localized) return localized;
  return localized + " (" + full + ")";
}

}  // namespace orion::device::apple
