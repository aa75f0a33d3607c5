#pragma once
// What the `ane` device hands the AppleNeuralEngine framework for one kernel folder, gathered
// without any Apple API so that it is tested on every machine: the MIL text as bytes (ANE025),
// one entry per weight file the text names (the weights dictionary, never nil: ANE026), and the
// inputs and outputs in the order the hardware binds them (ANE027).
#include <cstddef>
#include <string>
#include <vector>

#include "device/ane_device.h"

namespace orion::device {

struct AneWeightFile {
  std::string key;       // as the MIL text names it: "@model_path/weights/weight.bin"
  std::string relative;  // the same file under the program's folder: "weights/weight.bin"
  std::vector<std::byte> bytes;
};

struct AneProgramSource {
  std::string folder;
  std::string mil_text;
  std::vector<AneWeightFile> weights;  // each file a BLOBFILE names, once, in order of first use
  std::vector<AneIo> inputs, outputs;  // binding (alphabetical) order
};

// Reads folder/model.mil and every weight file it names. Throws orion::Error naming the file
// for a text the MIL parser refuses, a program without exactly one function `main`, an I/O
// dtype the IR has no type for, a BLOBFILE path outside `@model_path/` or leaving it with
// "..", and a weight file that cannot be read.
AneProgramSource read_program_folder(const std::string& folder);

}  // namespace orion::device
