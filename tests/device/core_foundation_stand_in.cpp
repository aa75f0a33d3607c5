// Core Foundation off Apple, for tests: data, strings, numbers, immutable dictionaries and
// IOSurfaces with reference counts, nothing else (core_foundation_stand_in.h).
#include "device/core_foundation_stand_in.h"

#include <CoreFoundation/CoreFoundation.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

// Left incomplete by the declarations: defined here, where the constants are.
struct CFArrayCallBacks {
  int unused;
};
struct CFDictionaryKeyCallBacks {
  int unused;
};
struct CFDictionaryValueCallBacks {
  int unused;
};

namespace {

enum Kind : CFTypeID { kData = 1, kString, kNumber, kDictionary, kSurface };

int live = 0;

struct Object {
  explicit Object(Kind k) : kind(k) { ++live; }
  virtual ~Object() { --live; }
  Kind kind;
  int refs = 1;
};

struct Data : Object {
  Data() : Object(kData) {}
  std::vector<UInt8> bytes;
};

struct String : Object {
  String() : Object(kString) {}
  std::string text;
};

struct Number : Object {
  Number() : Object(kNumber) {}
  long long value = 0;
};

struct Dictionary : Object {
  Dictionary() : Object(kDictionary) {}
  ~Dictionary() override;
  std::vector<std::pair<CFTypeRef, CFTypeRef>> entries;  // in creation order
};

int unbalanced = 0, released_while_locked = 0;

struct Surface : Object {
  explicit Surface(std::size_t bytes) : Object(kSurface), memory(bytes, std::byte{0xA5}) {}
  ~Surface() override {
    if (locks != 0) ++released_while_locked;
  }
  std::vector<std::byte> memory;
  int locks = 0;
  bool fail_lock = false;
};

Object* object(CFTypeRef ref) { return static_cast<Object*>(const_cast<void*>(ref)); }
template <typename Ref>
Ref as(Object* o) {
  return reinterpret_cast<Ref>(static_cast<void*>(o));
}

Dictionary::~Dictionary() {
  for (auto& [k, v] : entries) {
    CFRelease(k);
    CFRelease(v);
  }
}

}  // namespace

namespace orion::device::stand_in {
int live_objects() { return live; }

namespace {
Surface& surface(IOSurfaceRef s) { return *static_cast<Surface*>(object(s)); }
}  // namespace

IOSurfaceRef iosurface(std::size_t bytes) { return as<IOSurfaceRef>(new Surface(bytes)); }
int locks(IOSurfaceRef s) { return surface(s).locks; }
void fail_next_lock(IOSurfaceRef s) { surface(s).fail_lock = true; }
void move_memory(IOSurfaceRef s) {
  std::vector<std::byte> elsewhere(surface(s).memory);
  surface(s).memory.swap(elsewhere);
}
int unbalanced_unlocks() { return unbalanced; }
int released_locked() { return released_while_locked; }
}  // namespace orion::device::stand_in

extern "C" {
const CFAllocatorRef kCFAllocatorDefault = nullptr;
const CFArrayCallBacks kCFTypeArrayCallBacks{};
const CFDictionaryKeyCallBacks kCFTypeDictionaryKeyCallBacks{};
const CFDictionaryValueCallBacks kCFTypeDictionaryValueCallBacks{};

CFTypeRef CFRetain(CFTypeRef cf) {
  ++object(cf)->refs;
  return cf;
}

void CFRelease(CFTypeRef cf) {
  Object* o = object(cf);
  if (--o->refs == 0) delete o;
}

CFTypeID CFGetTypeID(CFTypeRef cf) { return object(cf)->kind; }
CFTypeID CFDataGetTypeID(void) { return kData; }

CFDataRef CFDataCreate(CFAllocatorRef, const UInt8* bytes, CFIndex length) {
  auto* d = new Data;
  d->bytes.assign(bytes, bytes + length);
  return as<CFDataRef>(d);
}

CFStringRef CFStringCreateWithCString(CFAllocatorRef, const char* cStr, CFStringEncoding) {
  auto* s = new String;
  s->text = cStr;
  return as<CFStringRef>(s);
}

CFNumberRef CFNumberCreate(CFAllocatorRef, CFNumberType, const void* valuePtr) {
  auto* n = new Number;
  std::memcpy(&n->value, valuePtr, sizeof n->value);
  return as<CFNumberRef>(n);
}

CFDictionaryRef CFDictionaryCreate(CFAllocatorRef, const void** keys, const void** values, CFIndex numValues,
                                   const CFDictionaryKeyCallBacks*, const CFDictionaryValueCallBacks*) {
  auto* d = new Dictionary;
  for (CFIndex i = 0; i < numValues; ++i) d->entries.emplace_back(CFRetain(keys[i]), CFRetain(values[i]));
  return as<CFDictionaryRef>(d);
}

CFIndex CFDictionaryGetCount(CFDictionaryRef theDict) {
  return static_cast<CFIndex>(static_cast<Dictionary*>(object(theDict))->entries.size());
}

void CFDictionaryGetKeysAndValues(CFDictionaryRef theDict, const void** keys, const void** values) {
  const auto& entries = static_cast<Dictionary*>(object(theDict))->entries;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (keys) keys[i] = entries[i].first;
    if (values) values[i] = entries[i].second;
  }
}

// Failures return IOKit's codes: kIOReturnError for a lock made to fail, kIOReturnNotLocked
// for an unlock without a lock.
kern_return_t IOSurfaceLock(IOSurfaceRef buffer, IOSurfaceLockOptions, uint32_t*) {
  Surface& s = orion::device::stand_in::surface(buffer);
  if (std::exchange(s.fail_lock, false)) return static_cast<kern_return_t>(0xe00002bc);
  ++s.locks;
  return 0;
}

kern_return_t IOSurfaceUnlock(IOSurfaceRef buffer, IOSurfaceLockOptions, uint32_t*) {
  Surface& s = orion::device::stand_in::surface(buffer);
  if (s.locks == 0) {
    ++unbalanced;
    return static_cast<kern_return_t>(0xe00002cd);
  }
  --s.locks;
  return 0;
}

void* IOSurfaceGetBaseAddress(IOSurfaceRef buffer) { return orion::device::stand_in::surface(buffer).memory.data(); }
size_t IOSurfaceGetAllocSize(IOSurfaceRef buffer) { return orion::device::stand_in::surface(buffer).memory.size(); }
}
