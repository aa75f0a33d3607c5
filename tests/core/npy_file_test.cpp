// .npy files: what numpy writes, read back (bytes spelled out here as numpy 1.24 writes them),
// round trips, and the files a reader must refuse. tests/cli/mil_cli_test.cpp exchanges files
// with numpy itself.
#include "core/npy_file.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "core/half.h"

namespace orion {
namespace {

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

// np.save of np.arange(6, dtype='<f4').reshape(2, 3): header padded to 64 bytes in all.
std::string numpy_file(const std::string& dict, const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string s = std::string("\x93NUMPY\x01\x00", 8);
  s += static_cast<char>(header.size() & 0xff);
  s += static_cast<char>(header.size() >> 8);
  return s + header + data;
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

TEST(Npy, ReadsWhatNumpyWrites) {
  const std::string f = numpy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                   floats({0, 1, 2, 3, 4, 5}));
  const Tensor t = parse_npy(bytes_of(f), "a.npy");
  EXPECT_EQ(t.dtype(), DType::f32);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.to_floats(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  // A 1-tuple shape, another key order, a scalar.
  const Tensor v = parse_npy(bytes_of(numpy_file("{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}", floats({7, 8}))), "b.npy");
  EXPECT_EQ(v.shape(), (Shape{2}));
  const Tensor s = parse_npy(bytes_of(numpy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", floats({9}))), "c.npy");
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.to_floats()[0], 9.0f);
}

// numpy 1.24's np.save: a 118-byte header (the dict, spaces, a newline), the data at byte 128.
std::string numpy_saved(const std::string& dict, const std::string& data) {
  std::string header = dict + std::string(117 - dict.size(), ' ') + "\n";
  return std::string("\x93NUMPY\x01\x00\x76\x00", 10) + header + data;
}

TEST(Npy, WritesTheBytesNumpyWrites) {
  const auto same = [](const Tensor& t, const std::string& want) {
    const std::vector<std::byte> got = npy_bytes(t);
    return got.size() == want.size() && std::memcmp(got.data(), want.data(), want.size()) == 0;
  };
  EXPECT_TRUE(same(Tensor::from_floats({2, 3}, std::vector<float>{0, 1, 2, 3, 4, 5}),
                   numpy_saved("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", floats({0, 1, 2, 3, 4, 5}))));
  EXPECT_TRUE(same(Tensor::from_floats({1}, std::vector<float>{1}),
                   numpy_saved("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", floats({1}))));
  EXPECT_TRUE(same(Tensor::scalar(9), numpy_saved("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", floats({9}))));
}

TEST(Npy, RoundTripsEveryDtypeItHas) {
  for (const DType d : {DType::f32, DType::f16, DType::i32, DType::i8, DType::u8}) {
    const Tensor t = Tensor::from_floats({3, 1, 2}, std::vector<float>{1, 2, 3, 4, 5, 6}).to(d);
    const Tensor back = parse_npy(npy_bytes(t), "t.npy");
    EXPECT_EQ(back.dtype(), d);
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(back.to_floats(), t.to_floats());
  }
  EXPECT_THROW(npy_bytes(Tensor(DType::bf16, {2})), Error);
}

std::string error_of(const std::string& file) {
  try {
    parse_npy(bytes_of(file), "bad.npy");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Npy, RefusesWhatItCannotRead) {
  EXPECT_EQ(error_of("PK\x03\x04"), "bad.npy: at byte 0: not a .npy file (no \\x93NUMPY magic)");
  EXPECT_NE(error_of(numpy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", floats({1})))
                .find("dtype '>f4'"),
            std::string::npos);
  EXPECT_NE(error_of(numpy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", floats({1})))
                .find("Fortran-order"),
            std::string::npos);
  EXPECT_NE(error_of(numpy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", floats({1})))
                .find("needs 12 data bytes, the file has 4"),
            std::string::npos);
  EXPECT_NE(error_of(numpy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""))
                .find("too large"),
            std::string::npos);
  EXPECT_NE(error_of(numpy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1", "")).find("at byte"),
            std::string::npos);
  std::string cut = numpy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", floats({1}));
  cut[8] = '\xff';
  EXPECT_NE(error_of(cut).find("runs past the end"), std::string::npos);
}

}  // namespace
}  // namespace orion
