#pragma once
// A stand-in for the few Core Foundation and IOSurface functions the bridge's Apple-only
// helpers call, so that their logic runs in tests off Apple (core_foundation_stand_in.cpp,
// compiled with the declarations of tests/apple_sdk). Its dictionaries enumerate in the order
// they were created in, which is what lets a test make an entry in the order a real dictionary
// might choose. Its IOSurfaces count their locks, and refuse an unlock without a lock.
#include <IOSurface/IOSurfaceRef.h>

#include <cstddef>

namespace orion::device::stand_in {

// Objects created and not yet released: 0 after a test that releases what it made.
int live_objects();

// An IOSurface of `bytes` whose memory is not zeroed (IOSurfaceCreate promises nothing), owned
// by the caller (CFRelease).
IOSurfaceRef iosurface(std::size_t bytes);
// The locks `s` holds now.
int locks(IOSurfaceRef s);
// The next IOSurfaceLock of `s` fails.
void fail_next_lock(IOSurfaceRef s);
// Moves the memory of `s` elsewhere, as the base address never should.
void move_memory(IOSurfaceRef s);
// Since the process started: unlocks of a surface not locked, and surfaces released locked.
int unbalanced_unlocks();
int released_locked();

}  // namespace orion::device::stand_in
