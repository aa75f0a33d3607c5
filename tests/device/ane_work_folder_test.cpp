// The work folder of the `ane` device (device/ane_work_folder.h) with the framework played by
// hand: a "compile" that leaves compiled files beside the sources, an "unload" that deletes the
// folder, and a weight rewritten in the kernel folder. What each load must find there, and
// what the bridge writes to get it there.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/testing_temp_dir.h"
#include "device/ane_bridge_program.h"
#include "device/ane_work_folder.h"
#include "device/device_test_util.h"

namespace orion::device {
namespace {

namespace fs = std::filesystem;
using testing_util::TempDir;
using namespace test_programs;
using Paths = std::vector<std::string>;

const Paths kWeights{"weights/weight.bin"};
const Paths kAll{"data", "model.mil", "net.plist", "weights/weight.bin"};

// A kernel folder, and its work folder after a compile (the framework's files as stand-ins).
struct Compiled {
  Compiled() : work(tmp.path() + "/0123abcd", tmp.path() + "/kept/0") {
    write_folder(kernel.path(), conv_program());
    work.write(read_program_folder(kernel.path()));
    write_text(work.dir() + "/net.plist", "<plist>compiled</plist>");
    write_text(work.dir() + "/data", "compiled weights");
    work.keep();
  }
  std::string at(const std::string& rel) const { return work.dir() + "/" + rel; }
  TempDir kernel, tmp;
  AneWorkFolder work;
};

TEST(AneWorkFolder, KeepsEverythingTheCompileLeft) {
  const Compiled c;
  EXPECT_EQ(c.work.kept_files(), kAll);
  for (const std::string& rel : kAll) EXPECT_EQ(file_bytes(c.work.kept() + "/" + rel), file_bytes(c.at(rel))) << rel;
  EXPECT_EQ(file_bytes(c.at("model.mil")), file_bytes(c.kernel.file("model.mil")));
  // Hard links on one file system: keeping costs no copy.
  EXPECT_EQ(fs::hard_link_count(c.at("data")), 2u);
}

TEST(AneWorkFolder, AnIntactFolderIsLeftAlone) {
  const Compiled c;
  const auto before = fs::last_write_time(c.at("weights/weight.bin"));
  EXPECT_EQ(c.work.refresh(c.kernel.path(), kWeights), Paths{});
  EXPECT_EQ(fs::last_write_time(c.at("weights/weight.bin")), before);
}

// -unloadWithQoS:error: deletes the folder; the next load finds it as the compile left it.
TEST(AneWorkFolder, AfterAnUnloadDeletedItEveryFileComesBack) {
  const Compiled c;
  const std::vector<std::byte> plist = file_bytes(c.at("net.plist")), weights = file_bytes(c.at("weights/weight.bin"));
  fs::remove_all(c.work.dir());
  EXPECT_EQ(c.work.refresh(c.kernel.path(), kWeights), kAll);
  EXPECT_EQ(file_bytes(c.at("net.plist")), plist);
  EXPECT_EQ(file_bytes(c.at("weights/weight.bin")), weights);
  EXPECT_EQ(c.work.refresh(c.kernel.path(), kWeights), Paths{});  // and a second load has nothing to do
}

TEST(AneWorkFolder, OnlyWhatIsMissingIsRestored) {
  const Compiled c;
  fs::remove(c.at("net.plist"));
  EXPECT_EQ(c.work.refresh(c.kernel.path(), kWeights), Paths{"net.plist"});
}

// A weight file rewritten in the kernel folder (a reload, ANE029) reaches the work folder, and
// stays there across an unload; what was kept is still the compile's.
TEST(AneWorkFolder, AWeightRewrittenInTheKernelFolderIsWhatTheLoadFinds) {
  const Compiled c;
  const std::vector<std::byte> compiled = file_bytes(c.at("weights/weight.bin"));
  write_folder(c.kernel.path(), conv_program(), 1);
  const std::vector<std::byte> rewritten = file_bytes(c.kernel.file("weights/weight.bin"));
  ASSERT_NE(rewritten, compiled);
  EXPECT_EQ(c.work.refresh(c.kernel.path(), kWeights), kWeights);
  EXPECT_EQ(file_bytes(c.at("weights/weight.bin")), rewritten);
  EXPECT_EQ(file_bytes(c.work.kept() + "/weights/weight.bin"), compiled);
  fs::remove_all(c.work.dir());
  EXPECT_EQ(c.work.refresh(c.kernel.path(), kWeights), kAll);  // the weights once, though written twice
  EXPECT_EQ(file_bytes(c.at("weights/weight.bin")), rewritten);
}

TEST(AneWorkFolder, AWeightFileGoneFromTheKernelFolderIsNamed) {
  const Compiled c;
  fs::remove(c.kernel.file("weights/weight.bin"));
  const std::string m = error_of([&] { c.work.refresh(c.kernel.path(), kWeights); });
  EXPECT_NE(m.find(c.kernel.file("weights/weight.bin")), std::string::npos) << m;
}

TEST(AneWorkFolder, AFolderThatCannotBeWrittenIsNamed) {
  TempDir kernel, tmp;
  write_folder(kernel.path(), conv_program());
  write_text(tmp.file("file"), "a file where the work folder's parent should be");
  const AneWorkFolder work(tmp.file("file") + "/0123abcd", tmp.file("kept"));
  const std::string m = error_of([&] { work.write(read_program_folder(kernel.path())); });
  EXPECT_NE(m.find(tmp.file("file")), std::string::npos) << m;
}

}  // namespace
}  // namespace orion::device
