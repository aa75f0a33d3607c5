// The runtime's compile-budget bookkeeping, without a device: counts and limits.
#include <gtest/gtest.h>

#include "core/error.h"
#include "runtime/compile_budget.h"

namespace orion::runtime {
namespace {

TEST(CompileBudget, KeepsAReserveBelowTheDeviceBudget) {
  EXPECT_EQ(CompileBudget().limit(), 119 - 7);  // 119 / 16
  EXPECT_EQ(CompileBudget(5).limit(), 4);  // at least one kept back
  EXPECT_EQ(CompileBudget(5, 0).limit(), 5);
  EXPECT_THROW(CompileBudget(0), Error);
  EXPECT_THROW(CompileBudget(3, 3), Error);
}

TEST(CompileBudget, RefusesTheCompileThatWouldGoOver) {
  CompileBudget b(3, 0);
  EXPECT_TRUE(b.allows_compile(3));
  EXPECT_FALSE(b.allows_compile(4));
  b.charge_compile("a");
  b.charge_compile("b");
  EXPECT_EQ(b.remaining(), 1);
  b.charge_compile("c");
  EXPECT_FALSE(b.allows_compile());
  try {
    b.charge_compile("kernel d");
    FAIL() << "a fourth compile was allowed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel d"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("limit of 3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(b.compiles(), 3);
}

TEST(CompileBudget, CountsLoadsAndAdoptsTheDevicesCount) {
  CompileBudget b(2, 0);
  b.note_load("a");
  b.note_load("b");
  EXPECT_THROW(b.note_load("c"), Error);  // two loaded at once is the limit
  b.note_unload();
  b.note_load("c");
  EXPECT_EQ(b.loads(), 3);
  EXPECT_EQ(b.loaded(), 2);
  b.sync(1);
  EXPECT_EQ(b.compiles(), 1);
  b.sync(0);  // never backwards
  EXPECT_EQ(b.compiles(), 1);
}

}  // namespace
}  // namespace orion::runtime
