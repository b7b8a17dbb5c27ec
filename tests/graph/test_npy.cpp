// graph/npy.h: round trips, numpy compatibility (both directions, when /usr/bin/python3 has
// numpy), and one test per refusal: Fortran order, big-endian, other dtypes, truncation, junk.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "graph/npy.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A .npy file with the given header dict and raw data, version `major`.
std::string make_npy(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const size_t len_bytes = major == 1 ? 2 : 4;
  while ((6 + 2 + len_bytes + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < len_bytes; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.begin(), s.size());
  return s;
}

bool have_numpy() {
  static const bool ok = std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
  return ok;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("npy round trip keeps dtype, shape and bytes", "[npy]") {
  auto dir = test::scratch_dir("npy_round_trip");
  const std::vector<TensorDesc> descs = {{DType::kF32, {2, 3}}, {DType::kF32, {}},
                                         {DType::kF32, {5}},    {DType::kI32, {4, 1, 3}},
                                         {DType::kI64, {7}},    {DType::kF32, {1, 1, 1, 1, 2}},
                                         {DType::kF32, {0, 3}}};
  uint64_t seed = 1;
  for (const TensorDesc& d : descs) {
    Tensor t = test::random_tensor(d, seed++, -100, 100);
    const std::string path = (dir / ("t" + std::to_string(seed) + ".npy")).string();
    REQUIRE(graph::write_npy(path, t).is_ok());
    auto back = graph::read_npy(path);
    REQUIRE(back.is_ok());
    CHECK(back->desc() == t.desc());
    CHECK(std::memcmp(back->data(), t.data(), t.bytes()) == 0);
    // numpy aligns the data start to 64 bytes; so do we.
    CHECK((slurp(path).size() - t.bytes()) % 64 == 0);
  }
}

TEST_CASE("npy reads format versions 2.0 and 3.0", "[npy]") {
  for (int major : {2, 3}) {
    auto t = graph::parse_npy(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                       floats({1.5f, -2.0f}), major),
                              "v.npy");
    REQUIRE(t.is_ok());
    CHECK(t->shape() == Shape{2});
    CHECK(t->data_as<float>()[1] == -2.0f);
  }
}

TEST_CASE("npy refuses Fortran order, naming the file", "[npy]") {
  auto t = graph::parse_npy(
      make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1), }", floats({1, 2})),
      "f.npy");
  REQUIRE_FALSE(t.is_ok());
  CHECK(contains(t.status().message(), "f.npy"));
  CHECK(contains(t.status().message(), "Fortran"));
}

TEST_CASE("npy refuses float64, naming the dtype found", "[npy]") {
  auto t = graph::parse_npy(
      make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0')),
      "d.npy");
  REQUIRE_FALSE(t.is_ok());
  CHECK(contains(t.status().message(), "d.npy"));
  CHECK(contains(t.status().message(), "float64"));
  CHECK(t.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("npy refuses big-endian data", "[npy]") {
  auto t = graph::parse_npy(
      make_npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0')),
      "be.npy");
  REQUIRE_FALSE(t.is_ok());
  CHECK(contains(t.status().message(), "big-endian"));
}

TEST_CASE("npy refuses other dtypes by their numpy names", "[npy]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"|u1", "uint8"}, {"|b1", "bool"},      {"<f2", "float16"},
      {"<i2", "int16"}, {"<c8", "complex64"}, {"|O", "object"}};
  for (const auto& [descr, name] : cases) {
    auto t = graph::parse_npy(
        make_npy("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (1,), }",
                 std::string(16, '\0')),
        "x.npy");
    REQUIRE_FALSE(t.is_ok());
    INFO(t.status().message());
    CHECK(contains(t.status().message(), name));
  }
  auto rec = graph::parse_npy(
      make_npy("{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (1,), }",
               std::string(8, '\0')),
      "r.npy");
  REQUIRE_FALSE(rec.is_ok());
  CHECK(contains(rec.status().message(), "structured"));
}

TEST_CASE("npy reports truncation at every length and never crashes", "[npy]") {
  Tensor t = test::random_tensor({DType::kF32, {3, 5}}, 7);
  const std::string bytes = graph::serialize_npy(t);
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto r = graph::parse_npy(std::string_view(bytes).substr(0, len), "cut.npy");
    REQUIRE_FALSE(r.is_ok());
    CHECK(contains(r.status().message(), "cut.npy"));
  }
  auto extra = graph::parse_npy(bytes + "xyz", "long.npy");
  REQUIRE_FALSE(extra.is_ok());
  CHECK(contains(extra.status().message(), "3 bytes after the data"));
}

TEST_CASE("npy survives flipped header bytes", "[npy]") {
  Tensor t = test::random_tensor({DType::kI64, {2, 2}}, 3, 0, 9);
  const std::string bytes = graph::serialize_npy(t);
  for (size_t i = 0; i < 128 && i < bytes.size(); ++i) {
    for (unsigned char flip : {0x01, 0x20, 0x80, 0xff}) {
      std::string b = bytes;
      b[i] = static_cast<char>(b[i] ^ flip);
      auto r = graph::parse_npy(b, "flip.npy");  // either an error or a tensor; never a crash
      if (r.is_ok()) CHECK(r->bytes() <= b.size());
    }
  }
}

TEST_CASE("npy rejects junk headers with a message", "[npy]") {
  const std::vector<std::string> dicts = {
      "",
      "{",
      "{'descr': '<f4'}",
      "{'descr': '<f4', 'fortran_order': False}",
      "{'descr': '<f4', 'fortran_order': 1, 'shape': (1,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, 99999999999)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} trailing"};
  for (const std::string& d : dicts) {
    auto r = graph::parse_npy(make_npy(d, floats({1})), "junk.npy");
    INFO(d);
    REQUIRE_FALSE(r.is_ok());
    CHECK(contains(r.status().message(), "junk.npy"));
  }
  auto magic = graph::parse_npy("PK\x03\x04 not numpy", "zip.npy");
  REQUIRE_FALSE(magic.is_ok());
  CHECK(contains(magic.status().message(), "not a .npy file"));
  auto version = graph::parse_npy(std::string("\x93NUMPY\x09\x00", 8) + "xxxx", "v9.npy");
  REQUIRE_FALSE(version.is_ok());
  CHECK(contains(version.status().message(), "version 9.0"));
}

TEST_CASE("npy read of a missing file is an I/O error naming the path", "[npy]") {
  auto r = graph::read_npy("/nonexistent/dir/x.npy");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kIoError);
  CHECK(contains(r.status().message(), "/nonexistent/dir/x.npy"));
  CHECK(graph::write_npy("/nonexistent/dir/y.npy", Tensor({DType::kF32, {1}})).code() ==
        StatusCode::kIoError);
  auto dir = graph::read_npy(test::scratch_dir("npy_dir").string());
  REQUIRE_FALSE(dir.is_ok());
  CHECK(contains(dir.status().message(), "is a directory"));
}

TEST_CASE("npy files written by numpy are read, and ours are read by numpy", "[npy][numpy]") {
  if (!have_numpy()) {
    WARN("skipped: /usr/bin/python3 with numpy not available");
    return;
  }
  auto dir = test::scratch_dir("npy_numpy");
  const std::string script = (dir / "make.py").string();
  {
    std::ofstream py(script);
    py << "import numpy as np, sys\n"
          "d = sys.argv[1]\n"
          "a = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7\n"
          "np.save(d + '/f32.npy', a)\n"
          "np.save(d + '/i32.npy', np.arange(6, dtype=np.int32).reshape(3, 2) - 3)\n"
          "np.save(d + '/i64.npy', np.array([2**40, -5], dtype=np.int64))\n"
          "np.save(d + '/scalar.npy', np.float32(3.25))\n"
          "np.save(d + '/fortran.npy', np.asfortranarray(a))\n"
          "np.save(d + '/f64.npy', a.astype(np.float64))\n"
          "np.save(d + '/be.npy', a.astype('>f4'))\n"
          "np.lib.format.write_array(open(d + '/v2.npy', 'wb'), a, version=(2, 0))\n"
          "np.lib.format.write_array(open(d + '/v3.npy', 'wb'), a, version=(3, 0))\n"
          "if len(sys.argv) > 2:\n"
          "    b = np.load(d + '/ours.npy')\n"
          "    assert b.dtype == np.float32 and b.shape == (2, 3, 4), (b.dtype, b.shape)\n"
          "    assert (b == a).all()\n"
          "    print('numpy read ours ok')\n";
  }
  REQUIRE(std::system(("/usr/bin/python3 " + script + " " + dir.string()).c_str()) == 0);
  auto f32 = graph::read_npy((dir / "f32.npy").string());
  REQUIRE(f32.is_ok());
  REQUIRE(f32->shape() == Shape{2, 3, 4});
  for (int i = 0; i < 24; ++i) CHECK(f32->data_as<float>()[i] == static_cast<float>(i) / 7);
  for (const char* v : {"v2.npy", "v3.npy"}) {
    auto t = graph::read_npy((dir / v).string());
    REQUIRE(t.is_ok());
    CHECK(std::memcmp(t->data(), f32->data(), f32->bytes()) == 0);
  }
  auto i32 = graph::read_npy((dir / "i32.npy").string());
  REQUIRE(i32.is_ok());
  CHECK(i32->dtype() == DType::kI32);
  CHECK(i32->data_as<int32_t>()[0] == -3);
  auto i64 = graph::read_npy((dir / "i64.npy").string());
  REQUIRE(i64.is_ok());
  CHECK(i64->data_as<int64_t>()[0] == (int64_t{1} << 40));
  auto scalar = graph::read_npy((dir / "scalar.npy").string());
  REQUIRE(scalar.is_ok());
  CHECK(scalar->shape().empty());
  CHECK(scalar->data_as<float>()[0] == 3.25f);
  auto fortran = graph::read_npy((dir / "fortran.npy").string());
  REQUIRE_FALSE(fortran.is_ok());
  CHECK(contains(fortran.status().message(), "Fortran"));
  auto f64 = graph::read_npy((dir / "f64.npy").string());
  REQUIRE_FALSE(f64.is_ok());
  CHECK(contains(f64.status().message(), "float64"));
  auto be = graph::read_npy((dir / "be.npy").string());
  REQUIRE_FALSE(be.is_ok());
  CHECK(contains(be.status().message(), "big-endian"));

  REQUIRE(graph::write_npy((dir / "ours.npy").string(), *f32).is_ok());
  CHECK(std::system(("/usr/bin/python3 " + script + " " + dir.string() + " check").c_str()) == 0);
}

TEST_CASE("npy bools: read as float32 0/1 where asked, written back as numpy bool", "[npy]") {
  const std::string bytes = make_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }",
                                     std::string("\1\0\0\1\2\0", 6));
  REQUIRE_FALSE(graph::parse_npy(bytes, "m.npy").is_ok());  // not unless the caller takes bools
  bool was_bool = false;
  Tensor t = value_or_throw(graph::parse_npy(bytes, "m.npy", true, &was_bool));
  CHECK(was_bool);
  REQUIRE(t.desc() == TensorDesc{DType::kF32, {2, 3}});
  const float want[] = {1, 0, 0, 1, 1, 0};
  for (int k = 0; k < 6; ++k) CHECK(t.data_as<float>()[k] == want[k]);
  // A float file read the same way is not bool.
  Tensor f = value_or_throw(graph::parse_npy(graph::serialize_npy(t), "f.npy", true, &was_bool));
  CHECK_FALSE(was_bool);
  // Written as bool: numpy's header and one byte per element, non-zero -> True.
  const std::string out = graph::serialize_npy(t, /*as_bool=*/true);
  CHECK(contains(out, "'descr': '|b1'"));
  Tensor back = value_or_throw(graph::parse_npy(out, "b.npy", true, &was_bool));
  CHECK(was_bool);
  for (int k = 0; k < 6; ++k) CHECK(back.data_as<float>()[k] == want[k]);
  if (have_numpy()) {
    const std::string path = test::scratch_dir("npy_bool").string() + "/b.npy";
    REQUIRE(graph::write_npy(path, t, true).is_ok());
    const std::string cmd = "/usr/bin/python3 -c \"import numpy as np; a = np.load('" + path +
                            "'); assert a.dtype == bool and a.tolist() == [[True, False, False], "
                            "[True, True, False]]\"";
    CHECK(std::system(cmd.c_str()) == 0);
  }
}
