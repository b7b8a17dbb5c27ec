// .npy reader and writer (see npy.h). The header is a Python dict literal; we parse the small
// subset numpy writes (strings, True/False, tuples of ints) and refuse everything else.
#include "graph/npy.h"

#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include "graph/float16.h"

namespace graphi::graph {

// Tensor bytes are copied as they are: the host must be little-endian like the files we accept.
static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

// One parsed header value.
struct PyValue {
  enum Kind { kString, kBool, kTuple, kList, kOther } kind = kOther;
  std::string str;
  bool boolean = false;
  std::vector<int64_t> ints;
};

// Recursive-descent parser over the header text. Errors are plain strings; the caller adds the
// file name.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view s) : s_(s) {}

  Result<std::vector<std::pair<std::string, PyValue>>> parse_dict() {
    std::vector<std::pair<std::string, PyValue>> out;
    skip_ws();
    if (!eat('{')) return fail("expected '{'");
    skip_ws();
    while (!peek('}')) {
      auto key = parse_string();
      if (!key) return fail("expected a quoted key");
      skip_ws();
      if (!eat(':')) return fail("expected ':' after key '" + *key + "'");
      skip_ws();
      auto v = parse_value();
      if (!v.is_ok()) return v.status();
      out.emplace_back(*key, std::move(*v));
      skip_ws();
      if (eat(',')) {
        skip_ws();
        continue;
      }
      if (!peek('}')) return fail("expected ',' or '}'");
    }
    eat('}');
    skip_ws();
    if (pos_ != s_.size()) return fail("unexpected text after the closing '}'");
    return out;
  }

 private:
  Status fail(const std::string& what) const {
    return Status::invalid_argument("malformed header (" + what + " at header offset " +
                                    std::to_string(pos_) + ")");
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool peek(char c) const { return pos_ < s_.size() && s_[pos_] == c; }
  bool eat(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  bool eat_word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  std::optional<std::string> parse_string() {
    if (!peek('\'') && !peek('"')) return std::nullopt;
    char q = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out += s_[pos_++];
    }
    if (!eat(q)) return std::nullopt;
    return out;
  }
  std::optional<int64_t> parse_int() {
    size_t start = pos_;
    int64_t v = 0;
    bool any = false;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      int d = s_[pos_++] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - d) / 10) return std::nullopt;
      v = v * 10 + d;
      any = true;
    }
    // numpy on some platforms wrote longs as "3L".
    if (any && peek('L')) ++pos_;
    if (!any) pos_ = start;
    return any ? std::optional<int64_t>(v) : std::nullopt;
  }
  Result<PyValue> parse_value() {
    PyValue v;
    if (auto s = parse_string()) {
      v.kind = PyValue::kString;
      v.str = *s;
      return v;
    }
    if (eat_word("True")) {
      v.kind = PyValue::kBool;
      v.boolean = true;
      return v;
    }
    if (eat_word("False")) {
      v.kind = PyValue::kBool;
      return v;
    }
    if (peek('(')) {
      ++pos_;
      v.kind = PyValue::kTuple;
      skip_ws();
      while (!peek(')')) {
        auto i = parse_int();
        if (!i) return fail("expected a non-negative integer in the shape tuple");
        v.ints.push_back(*i);
        skip_ws();
        if (eat(',')) {
          skip_ws();
          continue;
        }
        if (!peek(')')) return fail("expected ',' or ')' in the shape tuple");
      }
      ++pos_;
      return v;
    }
    if (peek('[')) {
      // A structured dtype's descr is a list of fields; skip it, the caller refuses it.
      int depth = 0;
      while (pos_ < s_.size()) {
        char c = s_[pos_++];
        if (c == '[' || c == '(') ++depth;
        if (c == ']' || c == ')') --depth;
        if (depth == 0) break;
      }
      if (depth != 0) return fail("unterminated list");
      v.kind = PyValue::kList;
      return v;
    }
    return fail("unsupported value");
  }

  std::string_view s_;
  size_t pos_ = 0;
};

// numpy's name of a descr such as "<f8" -> "float64", for error messages.
std::string numpy_type_name(const std::string& descr) {
  if (descr.size() < 2) return "unknown";
  char kind = descr[1];
  std::string size = descr.substr(2);
  int bytes = 0;
  for (char c : size) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || bytes > 1000) return descr;
    bytes = bytes * 10 + (c - '0');
  }
  std::string bits = std::to_string(bytes * 8);
  switch (kind) {
    case 'f':
      return "float" + bits;
    case 'i':
      return "int" + bits;
    case 'u':
      return "uint" + bits;
    case 'c':
      return "complex" + bits;
    case 'b':
      return "bool";
    case 'O':
      return "object";
    case 'U':
      return "unicode string";
    case 'S':
      return "byte string";
    case 'V':
      return "void/structured";
    case 'M':
      return "datetime64";
    case 'm':
      return "timedelta64";
  }
  return "unknown";
}

Result<DType> dtype_from_descr(const std::string& descr, const std::string& src) {
  const std::string supported =
      "; graphi reads float32, int32 and int64, little-endian (in numpy: "
      "a.astype(np.float32) or np.ascontiguousarray(a, dtype='<f4'))";
  if (descr == "<f4") return DType::kF32;
  if (descr == "<i4") return DType::kI32;
  if (descr == "<i8") return DType::kI64;
  std::string name = numpy_type_name(descr);
  if (!descr.empty() && descr[0] == '>')
    return Status::invalid_argument(src + ": big-endian data ('" + descr + "', " + name +
                                    ") is not supported" + supported);
  return Status::invalid_argument(src + ": dtype " + name + " ('" + descr + "') is not supported" +
                                  supported);
}

uint32_t read_le(std::string_view b, size_t off, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(b[off + i])) << (8 * i);
  return v;
}

}  // namespace

Result<Tensor> parse_npy(std::string_view bytes, const std::string& src, bool bool_as_f32,
                         bool* was_bool, bool* was_half) {
  if (was_bool) *was_bool = false;
  if (was_half) *was_half = false;
  auto bad = [&](const std::string& m) { return Status::invalid_argument(src + ": " + m); };
  if (bytes.size() < kMagicLen + 2 || std::memcmp(bytes.data(), kMagic, kMagicLen) != 0)
    return bad("not a .npy file (the file does not start with the magic \"\\x93NUMPY\")");
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  size_t len_bytes = 0;
  if (major == 1)
    len_bytes = 2;
  else if (major == 2 || major == 3)
    len_bytes = 4;
  else
    return bad("unsupported .npy format version " + std::to_string(major) + "." +
               std::to_string(minor) + " (graphi reads 1.0, 2.0 and 3.0)");
  const size_t prefix = kMagicLen + 2 + len_bytes;
  if (bytes.size() < prefix) return bad("truncated: the file ends inside the header length field");
  const size_t header_len = read_le(bytes, kMagicLen + 2, len_bytes);
  if (bytes.size() - prefix < header_len)
    return bad("truncated: the header says " + std::to_string(header_len) +
               " bytes, the file has " + std::to_string(bytes.size() - prefix) +
               " after the header length field");
  std::string_view header = bytes.substr(prefix, header_len);

  auto dict = HeaderParser(header).parse_dict();
  if (!dict.is_ok()) return dict.status().with_context(src);
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape = nullptr;
  for (const auto& [k, v] : *dict) {
    if (k == "descr")
      descr = &v;
    else if (k == "fortran_order")
      fortran = &v;
    else if (k == "shape")
      shape = &v;
  }
  if (!descr || !fortran || !shape)
    return bad(std::string("malformed header: missing key '") +
               (!descr     ? "descr"
                : !fortran ? "fortran_order"
                           : "shape") +
               "'");
  if (descr->kind == PyValue::kList)
    return bad(
        "structured dtypes (record arrays) are not supported; graphi reads float32, int32 and "
        "int64");
  if (descr->kind != PyValue::kString) return bad("malformed header: 'descr' must be a string");
  if (fortran->kind != PyValue::kBool)
    return bad("malformed header: 'fortran_order' must be True or False");
  if (shape->kind != PyValue::kTuple) return bad("malformed header: 'shape' must be a tuple");
  // numpy bool: one byte per element, read as float32 0/1 where the caller takes bools.
  const bool bools = bool_as_f32 && (descr->str == "|b1" || descr->str == "?");
  if (was_bool) *was_bool = bools;
  // numpy float16: two bytes per element, read as float32 where the caller takes them.
  const bool halves = was_half && descr->str == "<f2";
  if (halves) *was_half = true;
  GRAPHI_ASSIGN_OR_RETURN(DType dtype, bools || halves ? Result<DType>(DType::kF32)
                                                       : dtype_from_descr(descr->str, src));
  Shape dims = shape->ints;
  if (fortran->boolean && dims.size() > 1)
    return bad(
        "Fortran-order (column-major) arrays are not supported; graphi reads C order "
        "(in numpy: np.ascontiguousarray(a) before np.save)");

  // Element count with overflow checks, then the exact data size.
  const size_t elem = bools ? 1 : halves ? 2 : dtype_size(dtype);
  size_t numel = 1;
  for (int64_t d : dims) {
    if (d != 0 && numel > std::numeric_limits<size_t>::max() / elem / static_cast<size_t>(d))
      return bad("shape " + shape_to_string(dims) + " is too large");
    numel *= static_cast<size_t>(d);
  }
  const size_t want = numel * elem;
  const std::string held = bools ? "bool" : halves ? "float16" : dtype_name(dtype);
  const size_t have = bytes.size() - prefix - header_len;
  if (have < want)
    return bad("truncated: shape " + shape_to_string(dims) + " of " + held + " needs " +
               std::to_string(want) + " data bytes, the file has " + std::to_string(have));
  if (have > want)
    return bad("the file has " + std::to_string(have - want) + " bytes after the data that shape " +
               shape_to_string(dims) + " of " + held + " describes");
  Tensor t(TensorDesc{dtype, dims});
  const char* data = bytes.data() + prefix + header_len;
  if (bools) {
    for (size_t k = 0; k < numel; ++k) t.data_as<float>()[k] = data[k] != 0 ? 1.0f : 0.0f;
  } else if (halves) {
    for (size_t k = 0; k < numel; ++k) {
      uint16_t h;
      std::memcpy(&h, data + 2 * k, 2);
      t.data_as<float>()[k] = half_to_float(h);
    }
  } else if (want) {
    std::memcpy(t.data(), data, want);
  }
  return t;
}

Result<Tensor> read_npy(const std::string& path, bool bool_as_f32, bool* was_bool, bool* was_half) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Status::io_error(path + ": is a directory, not a .npy file");
  // Devices such as /dev/zero never end: reading one would hang and fill memory. Pipes (shell
  // process substitution) end when the writer does, so they are read like files.
  const auto type = std::filesystem::status(path, ec).type();
  if (!ec && type != std::filesystem::file_type::regular &&
      type != std::filesystem::file_type::fifo)
    return Status::io_error(path + ": is not a regular file (a device or socket), not a .npy file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::io_error(path + ": cannot open (" + std::strerror(errno) + ")");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::io_error(path + ": read failed");
  std::string bytes = std::move(ss).str();
  return parse_npy(bytes, path, bool_as_f32, was_bool, was_half);
}

std::string serialize_npy(const Tensor& t, bool as_bool, bool as_half) {
  as_bool = as_bool && t.dtype() == DType::kF32;
  as_half = as_half && !as_bool && t.dtype() == DType::kF32;
  const char* descr = as_bool                    ? "|b1"
                      : as_half                  ? "<f2"
                      : t.dtype() == DType::kF32 ? "<f4"
                      : t.dtype() == DType::kI32 ? "<i4"
                                                 : "<i8";
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) {
    shape += std::to_string(t.shape()[i]);
    if (t.shape().size() == 1 || i + 1 < t.shape().size()) shape += ",";
    if (i + 1 < t.shape().size()) shape += " ";
  }
  shape += ")";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces and end with '\n' so that magic + version + length + header is a multiple
  // of 64 bytes (numpy aligns the data this way).
  size_t len_bytes = 2;
  int major = 1;
  auto total = [&] { return kMagicLen + 2 + len_bytes + header.size() + 1; };
  if (((total() + 63) / 64) * 64 - (kMagicLen + 2 + len_bytes) > 65535) {
    len_bytes = 4;
    major = 2;
  }
  header.append((64 - total() % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < len_bytes; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  if (as_bool) {
    for (int64_t k = 0; k < t.numel(); ++k) out += t.data_as<float>()[k] != 0.0f ? '\1' : '\0';
  } else if (as_half) {
    for (int64_t k = 0; k < t.numel(); ++k) {
      const uint16_t h = float_to_half(t.data_as<float>()[k]);
      out += static_cast<char>(h & 0xff);
      out += static_cast<char>(h >> 8);
    }
  } else {
    out.append(static_cast<const char*>(t.data()), t.bytes());
  }
  return out;
}

Status write_npy(const std::string& path, const Tensor& t, bool as_bool, bool as_half) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return Status::io_error(path + ": cannot open for writing (" + std::strerror(errno) + ")");
  const std::string bytes = serialize_npy(t, as_bool, as_half);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Status::io_error(path + ": write failed (" + std::strerror(errno) + ")");
  return Status::ok();
}

}  // namespace graphi::graph
