#pragma once
// A stand-in for the few Core Foundation functions the bridge's Apple-only helpers call, so
// that their logic runs in tests off Apple (core_foundation_stand_in.cpp, compiled with the
// declarations of tests/apple_sdk). Its dictionaries enumerate in the order they were created
// in, which is what lets a test make an entry in the order a real dictionary might choose.
namespace orion::device::stand_in {

// Objects created and not yet released: 0 after a test that releases what it made.
int live_objects();

}  // namespace orion::device::stand_in
