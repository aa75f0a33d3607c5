// The `ane` bridge's request cache (device/ane_request_cache.h): one request per program and
// tuple of bound surfaces, made once, dropped with any surface it names, and kept alive by an
// evaluation that still holds it.
#include "device/ane_request_cache.h"

#include <gtest/gtest.h>

#include <set>

namespace orion::device {
namespace {

// Requests, each its own object, that count how many were made and how many released.
struct CountedRequests {
  int made = 0, released = 0;
  AneRequestCache::Request operator()() {
    ++made;
    return AneRequestCache::Request(new int(made), [this](const int* r) {
      ++released;
      delete r;
    });
  }
};

TEST(AneRequestCache, OneRequestPerProgramAndTupleOfSurfaces) {
  CountedRequests r;  // outlives the cache, which releases what it still holds
  AneRequestCache cache;
  const auto make = [&] { return r(); };
  const auto first = cache.get(0, {1, 2, 3}, make);
  EXPECT_EQ(cache.get(0, {1, 2, 3}, make), first);  // the 28th layer's step is no new request
  EXPECT_NE(cache.get(0, {4, 5, 3}, make), first);  // another layer's surfaces
  EXPECT_NE(cache.get(1, {1, 2, 3}, make), first);  // another program
  EXPECT_NE(cache.get(0, {2, 1, 3}, make), first);  // the same surfaces bound in another order
  EXPECT_EQ(r.made, 4);
  EXPECT_EQ(cache.size(), 4u);
}

TEST(AneRequestCache, ASurfaceThatDiesTakesItsRequestsWithIt) {
  CountedRequests r;
  AneRequestCache cache;
  const auto make = [&] { return r(); };
  cache.get(0, {1, 2}, make);
  cache.get(0, {3, 2}, make);
  cache.get(1, {2, 4}, make);
  cache.get(1, {3, 4}, make);
  cache.forget(2);
  EXPECT_EQ(r.released, 3);
  EXPECT_EQ(cache.size(), 1u);
  cache.forget(99);  // bound by nothing: nothing to drop
  EXPECT_EQ(cache.size(), 1u);
  cache.clear();
  EXPECT_EQ(r.released, 4);
}

TEST(AneRequestCache, AnEvaluationKeepsItsRequestWhileItRuns) {
  CountedRequests r;
  AneRequestCache cache;
  const auto held = cache.get(0, {1}, [&] { return r(); });
  cache.forget(1);
  EXPECT_EQ(r.released, 0);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(AneRequestCache, SerialsAreNeverReused) {
  AneRequestCache cache;
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(seen.insert(cache.new_serial()).second);
}

}  // namespace
}  // namespace orion::device
