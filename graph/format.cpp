// .graphi reader and writer (spec: graph/FORMAT.md). The reader trusts nothing: every length is
// checked against the file size before anything is allocated, every JSON field is type-checked
// with an error naming the file, the node or value, and the field, and no exception escapes.
#include "graph/format.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "graph/graph_builder.h"
#include "graph/memory_budget.h"

namespace graphi::graph {

// Weights are stored little-endian and copied as-is; a big-endian port would swap here.
static_assert(std::endian::native == std::endian::little,
              "the .graphi reader assumes a little-endian host");

namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

constexpr int kMaxJsonDepth = 32;  // the schema needs 6; more is corruption or an attack
constexpr size_t kMaxRank = 32;
constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 62;  // keeps every size computation in range

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

uint32_t load_u32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
uint64_t load_u64(const unsigned char* p) {
  return uint64_t{load_u32(p)} | uint64_t{load_u32(p + 4)} << 32;
}
void store_u32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
void store_u64(unsigned char* p, uint64_t v) {
  store_u32(p, static_cast<uint32_t>(v));
  store_u32(p + 4, static_cast<uint32_t>(v >> 32));
}

std::string hex_bytes(const unsigned char* p, size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += ' ';
    s += kHex[p[i] >> 4];
    s += kHex[p[i] & 15];
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Byte sources: the reader pulls ranges it has already bounds-checked, so a file is never read
// whole and a corrupt length never turns into an allocation.

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Copies [offset, offset + n) into dst; the caller guarantees the range is inside size().
  virtual Status read(uint64_t offset, size_t n, void* dst) const = 0;
};

class SpanSource final : public ByteSource {
 public:
  explicit SpanSource(std::span<const std::byte> b) : b_(b) {}
  uint64_t size() const override { return b_.size(); }
  Status read(uint64_t offset, size_t n, void* dst) const override {
    if (n) std::memcpy(dst, b_.data() + offset, n);
    return Status::ok();
  }

 private:
  std::span<const std::byte> b_;
};

class FileSource final : public ByteSource {
 public:
  ~FileSource() override {
    if (fd_ >= 0) ::close(fd_);
  }
  Status open(const std::string& path) {
    path_ = path;
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return Status::io_error("cannot open '" + path + "': " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0)
      return Status::io_error("cannot stat '" + path + "': " + std::strerror(errno));
    if (S_ISDIR(st.st_mode))
      return Status::io_error("'" + path + "' is a directory, not a .graphi file");
    if (!S_ISREG(st.st_mode)) return Status::io_error("'" + path + "' is not a regular file");
    size_ = static_cast<uint64_t>(st.st_size);
    return Status::ok();
  }
  uint64_t size() const override { return size_; }
  Status read(uint64_t offset, size_t n, void* dst) const override {
    auto* out = static_cast<char*>(dst);
    while (n > 0) {
      ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return Status::io_error("cannot read '" + path_ + "': " + std::strerror(errno));
      if (got == 0)
        return Status::io_error("'" + path_ + "' shrank while being read (at byte " +
                                std::to_string(offset) + ")");
      out += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
    return Status::ok();
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Type-checked JSON access. `where` names the object ("node 'gates'", "constant #3"); errors
// read "<file>: <where>: field '<key>' must be ...".

class HeaderReader {
 public:
  explicit HeaderReader(const std::string& source) : src_(source) {}

  Status bad(const std::string& where, const std::string& msg) const {
    return Status::invalid_graph(src_ + ": " + (where.empty() ? "" : where + ": ") + msg);
  }

  Status check_object(const json& j, const std::string& where,
                      std::initializer_list<const char*> allowed) const {
    if (!j.is_object())
      return bad(where, std::string("must be a JSON object, got ") + j.type_name());
    for (const auto& [key, v] : j.items()) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || key == a;
      if (!ok) {
        std::string list;
        for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
        return bad(where, "unknown field '" + key + "' (format version " +
                              std::to_string(kGraphiFormatVersion) + " allows: " + list + ")");
      }
    }
    return Status::ok();
  }

  // The field, or nullptr when it is absent and optional.
  Result<const json*> field(const json& obj, const char* key, const std::string& where,
                            bool required) const {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) return bad(where, std::string("field '") + key + "' is missing");
      return static_cast<const json*>(nullptr);
    }
    return &*it;
  }

  Result<std::string> get_string(const json& obj, const char* key, const std::string& where) const {
    GRAPHI_ASSIGN_OR_RETURN(const json* f, field(obj, key, where, true));
    if (!f->is_string())
      return bad(where, std::string("field '") + key + "' must be a string, got " + f->type_name());
    return f->get<std::string>();
  }

  Result<std::vector<std::string>> get_string_list(const json& obj, const char* key,
                                                   const std::string& where) const {
    GRAPHI_ASSIGN_OR_RETURN(const json* f, field(obj, key, where, true));
    auto wrong = [&] {
      return bad(where, std::string("field '") + key + "' must be a list of strings");
    };
    if (!f->is_array()) return wrong();
    std::vector<std::string> out;
    out.reserve(f->size());
    for (const json& e : *f) {
      if (!e.is_string()) return wrong();
      out.push_back(e.get<std::string>());
    }
    return out;
  }

  // A JSON integer in int64 range (not a float, not a bool).
  Result<int64_t> as_int(const json& j, const std::string& what, const std::string& where) const {
    if (j.is_number_unsigned()) {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return bad(where, what + " is out of the int64 range");
      return static_cast<int64_t>(u);
    }
    if (j.is_number_integer()) return j.get<int64_t>();
    return bad(where, what + " must be an integer, got " + j.type_name());
  }

  Result<uint64_t> get_size(const json& obj, const char* key, const std::string& where) const {
    GRAPHI_ASSIGN_OR_RETURN(const json* f, field(obj, key, where, true));
    GRAPHI_ASSIGN_OR_RETURN(int64_t v, as_int(*f, std::string("field '") + key + "'", where));
    if (v < 0)
      return bad(where,
                 std::string("field '") + key + "' must not be negative, got " + std::to_string(v));
    return static_cast<uint64_t>(v);
  }

  // A double, or one of the strings "nan", "inf", "-inf" that the writer uses for non-finite
  // values (JSON has no literal for them).
  Result<double> as_float(const json& j, const std::string& what, const std::string& where) const {
    if (j.is_number_float()) return j.get<double>();
    if (j.is_number_integer()) {
      GRAPHI_ASSIGN_OR_RETURN(int64_t i, as_int(j, what, where));
      return static_cast<double>(i);
    }
    if (j.is_string()) {
      const std::string& s = j.get_ref<const std::string&>();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
      if (s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    return bad(where, what + " must be a number (or \"nan\", \"inf\", \"-inf\"), got " +
                          (j.is_string() ? "\"" + j.get<std::string>() + "\""
                                         : std::string(j.type_name())));
  }

  // {"dtype": ..., "shape": [...]} fields of an input, constant or value_info entry.
  Result<TensorDesc> get_desc(const json& obj, const std::string& where) const {
    TensorDesc d;
    GRAPHI_ASSIGN_OR_RETURN(std::string dt, get_string(obj, "dtype", where));
    auto t = dtype_from_name(dt);
    if (!t) return bad(where, "field 'dtype' is '" + dt + "'; supported: float32, int32, int64");
    d.dtype = *t;
    GRAPHI_ASSIGN_OR_RETURN(const json* shape, field(obj, "shape", where, true));
    if (!shape->is_array())
      return bad(where, std::string("field 'shape' must be a list of integers, got ") +
                            shape->type_name());
    if (shape->size() > kMaxRank)
      return bad(where, "field 'shape' has rank " + std::to_string(shape->size()) + "; at most " +
                            std::to_string(kMaxRank) + " is supported");
    uint64_t bytes = dtype_size(d.dtype);
    for (const json& e : *shape) {
      if (!e.is_number_integer()) return bad(where, "field 'shape' must be a list of integers");
      GRAPHI_ASSIGN_OR_RETURN(int64_t dim, as_int(e, "field 'shape'", where));
      if (dim < 0)
        return bad(where, "field 'shape' has a negative dimension " + std::to_string(dim));
      d.shape.push_back(dim);
      // Overflow guard: numel * dtype size must stay far from 2^64.
      if (dim != 0 && bytes > kMaxTensorBytes / static_cast<uint64_t>(dim))
        return bad(where, "field 'shape' " + shape_to_string(d.shape) +
                              "... describes more than 2^62 bytes");
      bytes *= static_cast<uint64_t>(dim);
    }
    return d;
  }

  Result<Attribute> get_attribute(const json& a, const std::string& where) const {
    GRAPHI_RETURN_IF_ERROR(check_object(a, where, {"type", "value"}));
    GRAPHI_ASSIGN_OR_RETURN(std::string type, get_string(a, "type", where));
    GRAPHI_ASSIGN_OR_RETURN(const json* v, field(a, "value", where, true));
    const std::string what = "field 'value'";
    if (type == "int") {
      GRAPHI_ASSIGN_OR_RETURN(int64_t i, as_int(*v, what + " (type int)", where));
      return Attribute(i);
    }
    if (type == "float") {
      GRAPHI_ASSIGN_OR_RETURN(double f, as_float(*v, what + " (type float)", where));
      return Attribute(f);
    }
    if (type == "string") {
      if (!v->is_string())
        return bad(where, what + " (type string) must be a string, got " + v->type_name());
      return Attribute(v->get<std::string>());
    }
    if (type == "ints" || type == "floats") {
      if (!v->is_array())
        return bad(where, what + " (type " + type + ") must be a list, got " + v->type_name());
      if (type == "ints") {
        std::vector<int64_t> out;
        for (const json& e : *v) {
          GRAPHI_ASSIGN_OR_RETURN(int64_t i, as_int(e, what + " (type ints) element", where));
          out.push_back(i);
        }
        return Attribute(std::move(out));
      }
      std::vector<double> out;
      for (const json& e : *v) {
        GRAPHI_ASSIGN_OR_RETURN(double f, as_float(e, what + " (type floats) element", where));
        out.push_back(f);
      }
      return Attribute(std::move(out));
    }
    return bad(where,
               "field 'type' is '" + type + "'; must be one of int, float, ints, floats, string");
  }

  // "node 'gates'" when the entry has a string name, else "node #3": errors stay readable even
  // when the name itself is what is broken.
  static std::string entry_where(const char* kind, const json& e, size_t index) {
    if (e.is_object()) {
      auto it = e.find("name");
      if (it != e.end() && it->is_string())
        return std::string(kind) + " '" + it->get<std::string>() + "'";
    }
    return std::string(kind) + " #" + std::to_string(index);
  }

 private:
  const std::string& src_;
};

// Thrown from the parser callback to stop parsing a too deeply nested header; caught below.
struct TooDeep {};
struct DuplicateKey {
  std::string key;
};

// The DOM builder behind json::parse, plus the two checks: nesting depth and duplicate keys
// (nlohmann would silently keep the last one). A SAX wrapper rather than json::parse's callback:
// the callback parser scans the enclosing array at every object end (quadratic in the node
// count: an unrolled 2-layer LSTM of 2000 steps, 60k nodes, took ~1.8 s to parse).
class CheckedDomSax {
 public:
  explicit CheckedDomSax(json& result) : dom_(result, /*allow_exceptions_=*/true) {}
  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) {
    return dom_.number_float(v, s);
  }
  bool string(json::string_t& v) { return dom_.string(v); }
  bool binary(json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) {
    open();
    keys_.emplace_back();
    return dom_.start_object(n);
  }
  bool key(json::string_t& k) {
    if (!keys_.back().insert(k).second) throw DuplicateKey{k};
    return dom_.key(k);
  }
  bool end_object() {
    keys_.pop_back();
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    open();
    return dom_.start_array(n);
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t pos, const std::string& token, const Exception& e) {
    return dom_.parse_error(pos, token, e);
  }

 private:
  void open() {
    if (depth_ >= kMaxJsonDepth) throw TooDeep{};
    ++depth_;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::vector<std::unordered_set<std::string>> keys_;  // one set per open object
  int depth_ = 0;                                      // containers open around the next value
};

Result<json> parse_header(const std::string& text, const HeaderReader& r) {
  try {
    json result;
    CheckedDomSax sax(result);
    json::sax_parse(text, &sax, nlohmann::detail::input_format_t::json, /*strict=*/true,
                    /*ignore_comments=*/false);
    return result;
  } catch (const TooDeep&) {
    return r.bad("",
                 "header JSON is nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  } catch (const DuplicateKey& d) {
    return r.bad("", "header JSON has the key '" + d.key + "' twice in one object");
  } catch (const json::exception& e) {
    std::string m = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " tag; keep the position and reason.
    if (auto p = m.find("] "); m.rfind("[json.exception", 0) == 0 && p != std::string::npos)
      m = m.substr(p + 2);
    return r.bad("", "header is not valid JSON: " + m);
  }
}

struct ConstantEntry {
  std::string name;
  TensorDesc desc;
  uint64_t offset = 0, length = 0;
};

Result<Graph> read_graphi_impl(const ByteSource& in, const std::string& src,
                               const ShapeInferencer& shapes, uint64_t max_memory) {
  HeaderReader r(src);
  const uint64_t file_size = in.size();

  // 1. Preamble.
  if (file_size < kGraphiPreambleBytes)
    return r.bad("", "file is " + std::to_string(file_size) + " bytes, shorter than the " +
                         std::to_string(kGraphiPreambleBytes) +
                         "-byte .graphi preamble (truncated?)");
  unsigned char pre[kGraphiPreambleBytes];
  GRAPHI_RETURN_IF_ERROR(in.read(0, sizeof pre, pre));
  if (std::memcmp(pre, kGraphiMagic, sizeof kGraphiMagic) != 0)
    return r.bad("", "not a .graphi file: the first 8 bytes are " + hex_bytes(pre, 8) +
                         ", expected " + hex_bytes(kGraphiMagic, 8) + " (\\x89GRAPHI\\n)");
  const uint32_t version = load_u32(pre + 8);
  if (version < kGraphiMinReadVersion || version > kGraphiMaxReadVersion)
    return Status::unsupported(src + ": unsupported .graphi format version " +
                               std::to_string(version) + " (this build of graphi reads version" +
                               (kGraphiMinReadVersion == kGraphiMaxReadVersion
                                    ? " " + std::to_string(kGraphiMaxReadVersion)
                                    : "s " + std::to_string(kGraphiMinReadVersion) + " to " +
                                          std::to_string(kGraphiMaxReadVersion)) +
                               ")");
  const uint32_t flags = load_u32(pre + 12);
  if (flags != 0)
    return r.bad("",
                 "preamble flags are " + std::to_string(flags) + "; format version 1 requires 0");
  const uint64_t header_bytes = load_u64(pre + 16);
  const uint64_t weights_bytes = load_u64(pre + 24);
  if (header_bytes > file_size - kGraphiPreambleBytes)
    return r.bad("", "the preamble declares a " + std::to_string(header_bytes) +
                         "-byte header but only " +
                         std::to_string(file_size - kGraphiPreambleBytes) +
                         " bytes follow the preamble (file truncated or corrupt)");
  const uint64_t weights_offset =
      align_up(kGraphiPreambleBytes + header_bytes, kGraphiWeightAlignment);
  if (weights_bytes > kMaxTensorBytes)
    return r.bad("", "the preamble declares a weight section of " + std::to_string(weights_bytes) +
                         " bytes, which cannot be right (corrupt file)");

  // 2. Header JSON.
  std::string text(static_cast<size_t>(header_bytes), '\0');
  GRAPHI_RETURN_IF_ERROR(in.read(kGraphiPreambleBytes, text.size(), text.data()));
  GRAPHI_ASSIGN_OR_RETURN(json h, parse_header(text, r));
  GRAPHI_RETURN_IF_ERROR(r.check_object(
      h, "header", {"inputs", "constants", "nodes", "outputs", "value_info", "metadata"}));

  GraphBuilder b(src);
  auto list_field = [&](const char* key, bool required) -> Result<const json*> {
    GRAPHI_ASSIGN_OR_RETURN(const json* f, r.field(h, key, "header", required));
    if (f && !f->is_array())
      return r.bad("header",
                   std::string("field '") + key + "' must be a list, got " + f->type_name());
    return f;
  };

  GRAPHI_ASSIGN_OR_RETURN(const json* inputs, list_field("inputs", true));
  for (size_t i = 0; i < inputs->size(); ++i) {
    const json& e = (*inputs)[i];
    std::string where = HeaderReader::entry_where("input", e, i);
    GRAPHI_RETURN_IF_ERROR(r.check_object(e, where, {"name", "dtype", "shape"}));
    GRAPHI_ASSIGN_OR_RETURN(std::string name, r.get_string(e, "name", where));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, r.get_desc(e, where));
    b.add_input(name, std::move(d));
  }

  // Constants: every range is checked against the declared weight section, and the section
  // against the actual file size, before any weight byte is allocated or read.
  GRAPHI_ASSIGN_OR_RETURN(const json* constants, list_field("constants", true));
  std::vector<ConstantEntry> consts;
  uint64_t used_end = 0;
  for (size_t i = 0; i < constants->size(); ++i) {
    const json& e = (*constants)[i];
    std::string where = HeaderReader::entry_where("constant", e, i);
    GRAPHI_RETURN_IF_ERROR(
        r.check_object(e, where, {"name", "dtype", "shape", "offset", "byte_length"}));
    ConstantEntry c;
    GRAPHI_ASSIGN_OR_RETURN(c.name, r.get_string(e, "name", where));
    GRAPHI_ASSIGN_OR_RETURN(c.desc, r.get_desc(e, where));
    GRAPHI_ASSIGN_OR_RETURN(c.offset, r.get_size(e, "offset", where));
    GRAPHI_ASSIGN_OR_RETURN(c.length, r.get_size(e, "byte_length", where));
    const uint64_t need = c.desc.bytes();
    if (c.length != need)
      return r.bad(where, "field 'byte_length' is " + std::to_string(c.length) + " but " +
                              c.desc.to_string() + " needs " + std::to_string(need) +
                              " bytes (weight data " + (c.length > need ? "longer" : "shorter") +
                              " than its declared shape)");
    if (c.offset % kGraphiWeightAlignment != 0)
      return r.bad(where, "field 'offset' is " + std::to_string(c.offset) +
                              "; it must be a multiple of " +
                              std::to_string(kGraphiWeightAlignment));
    if (c.offset > weights_bytes || c.length > weights_bytes - c.offset)
      return r.bad(where, "weight bytes [" + std::to_string(c.offset) + ", " +
                              std::to_string(c.offset) + " + " + std::to_string(c.length) +
                              ") lie outside the " + std::to_string(weights_bytes) +
                              "-byte weight section the preamble declares");
    const uint64_t start = weights_offset + c.offset;
    if (start + c.length > file_size)
      return r.bad(where, "weight data is truncated: its " + std::to_string(c.length) +
                              " bytes start at file offset " + std::to_string(start) +
                              " but the file ends at " + std::to_string(file_size));
    used_end = std::max(used_end, c.offset + c.length);
    consts.push_back(std::move(c));
  }
  // No two constants may share bytes: with that, the weight memory allocated below is at most
  // the section length, itself bounded by the file size (overlapping ranges would let a small
  // file request many copies of its size).
  {
    std::vector<const ConstantEntry*> by_offset;
    for (const ConstantEntry& c : consts) by_offset.push_back(&c);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const ConstantEntry* a, const ConstantEntry* b) {
                return a->offset != b->offset ? a->offset < b->offset : a->length < b->length;
              });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const ConstantEntry& a = *by_offset[i - 1];
      const ConstantEntry& c = *by_offset[i];
      if (c.offset < a.offset + a.length)
        return r.bad("constant '" + c.name + "'", "weight bytes [" + std::to_string(c.offset) +
                                                      ", " + std::to_string(c.offset + c.length) +
                                                      ") overlap those of constant '" + a.name +
                                                      "' [" + std::to_string(a.offset) + ", " +
                                                      std::to_string(a.offset + a.length) + ")");
    }
  }
  if (used_end != weights_bytes)
    return r.bad("",
                 "the weight section is " + std::to_string(weights_bytes) +
                     " bytes but the constants end at byte " + std::to_string(used_end) +
                     " of it: " + std::to_string(weights_bytes - used_end) +
                     " bytes of weights are not described by any constant (longer than declared)");
  if (file_size < weights_offset + weights_bytes)
    return r.bad("", "file is truncated: it is " + std::to_string(file_size) +
                         " bytes but header and weights need " +
                         std::to_string(weights_offset + weights_bytes));
  if (file_size > weights_offset + weights_bytes)
    return r.bad("", "file has " + std::to_string(file_size - weights_offset - weights_bytes) +
                         " unexpected bytes after the end of the weight section (at byte " +
                         std::to_string(weights_offset + weights_bytes) + ")");
  // Padding between header and weights must be zero: catches a header length that is off.
  {
    const uint64_t pad_start = kGraphiPreambleBytes + header_bytes;
    unsigned char pad[kGraphiWeightAlignment];
    const size_t pad_n = static_cast<size_t>(weights_offset - pad_start);
    GRAPHI_RETURN_IF_ERROR(in.read(pad_start, pad_n, pad));
    for (size_t i = 0; i < pad_n; ++i)
      if (pad[i] != 0)
        return r.bad("", "padding byte at file offset " + std::to_string(pad_start + i) +
                             " is not zero (header length wrong or file corrupt)");
  }

  GRAPHI_ASSIGN_OR_RETURN(const json* nodes, list_field("nodes", true));
  for (size_t i = 0; i < nodes->size(); ++i) {
    const json& e = (*nodes)[i];
    std::string where = HeaderReader::entry_where("node", e, i);
    GRAPHI_RETURN_IF_ERROR(
        r.check_object(e, where, {"name", "op", "inputs", "outputs", "attributes"}));
    GRAPHI_ASSIGN_OR_RETURN(std::string name, r.get_string(e, "name", where));
    GRAPHI_ASSIGN_OR_RETURN(std::string op, r.get_string(e, "op", where));
    GRAPHI_ASSIGN_OR_RETURN(std::vector<std::string> ins, r.get_string_list(e, "inputs", where));
    GRAPHI_ASSIGN_OR_RETURN(std::vector<std::string> outs, r.get_string_list(e, "outputs", where));
    Attributes attrs;
    GRAPHI_ASSIGN_OR_RETURN(const json* a, r.field(e, "attributes", where, false));
    if (a) {
      if (!a->is_object())
        return r.bad(where,
                     std::string("field 'attributes' must be an object, got ") + a->type_name());
      for (const auto& [key, v] : a->items()) {
        GRAPHI_ASSIGN_OR_RETURN(Attribute attr,
                                r.get_attribute(v, where + ": attribute '" + key + "'"));
        attrs.set(key, std::move(attr));
      }
    }
    b.add_node(op, name, ins, outs, std::move(attrs));
  }

  GRAPHI_ASSIGN_OR_RETURN(std::vector<std::string> outputs,
                          r.get_string_list(h, "outputs", "header"));
  for (const std::string& o : outputs) b.add_output(o);

  GRAPHI_ASSIGN_OR_RETURN(const json* value_info, list_field("value_info", false));
  if (value_info) {
    for (size_t i = 0; i < value_info->size(); ++i) {
      const json& e = (*value_info)[i];
      std::string where = HeaderReader::entry_where("value_info", e, i);
      GRAPHI_RETURN_IF_ERROR(r.check_object(e, where, {"name", "dtype", "shape"}));
      GRAPHI_ASSIGN_OR_RETURN(std::string name, r.get_string(e, "name", where));
      GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, r.get_desc(e, where));
      b.declare(name, std::move(d));
    }
  }

  GRAPHI_ASSIGN_OR_RETURN(const json* metadata, r.field(h, "metadata", "header", false));
  if (metadata) {
    if (!metadata->is_object())
      return r.bad("header", std::string("field 'metadata' must be an object of strings, got ") +
                                 metadata->type_name());
    for (const auto& [key, v] : metadata->items()) {
      if (!v.is_string())
        return r.bad("header",
                     "field 'metadata' entry '" + key + "' must be a string, got " + v.type_name());
      b.set_metadata(key, v.get<std::string>());
    }
  }

  // 3. Weights: all ranges were validated against the real file size above; their memory is
  // checked against the budget before any of it is allocated.
  uint64_t weight_memory = 0;
  for (const ConstantEntry& c : consts) weight_memory += c.length;
  GRAPHI_RETURN_IF_ERROR(check_memory(weight_memory, max_memory, src + ": the weights"));
  for (ConstantEntry& c : consts) {
    Tensor t(c.desc);
    GRAPHI_RETURN_IF_ERROR(
        in.read(weights_offset + c.offset, static_cast<size_t>(c.length), t.data()));
    b.add_constant(c.name, std::move(t));
  }
  return b.finish(shapes);
}

// The boundary: nothing thrown inside (bad_alloc, a library exception) escapes as an exception.
Result<Graph> read_guarded(const ByteSource& in, const std::string& src,
                           const ShapeInferencer& shapes, uint64_t max_memory) {
  try {
    return read_graphi_impl(in, src, shapes, max_memory);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, src + ": out of memory while loading the graph");
  } catch (const std::exception& e) {
    return Status::internal(src + ": unexpected error while loading the graph: " + e.what());
  }
}

// ---------------------------------------------------------------------------------------------
// Writer.

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;  // continuation bytes
    uint32_t cp = 0;
    if ((c >> 5) == 0x6)
      n = 1, cp = c & 0x1F;
    else if ((c >> 4) == 0xE)
      n = 2, cp = c & 0x0F;
    else if ((c >> 3) == 0x1E)
      n = 3, cp = c & 0x07;
    else
      return false;
    if (s.size() - i <= n) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong encodings, surrogates and values past U+10FFFF are not UTF-8.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n + 1;
  }
  return true;
}

ordered_json float_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

ordered_json attribute_json(const Attribute& a) {
  ordered_json j;
  j["type"] = attribute_type_name(a);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, double>) {
          j["value"] = float_json(v);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          ordered_json l = ordered_json::array();
          for (double f : v) l.push_back(float_json(f));
          j["value"] = std::move(l);
        } else {
          j["value"] = v;
        }
      },
      a);
  return j;
}

ordered_json desc_json(const std::string& name, const TensorDesc& d) {
  ordered_json j;
  j["name"] = name;
  j["dtype"] = dtype_name(d.dtype);
  j["shape"] = d.shape;
  return j;
}

Result<std::vector<std::byte>> write_impl(const Graph& g) {
  auto bad_string = [&](const std::string& what) {
    return Status::invalid_argument(g.source() + ": " + what +
                                    " is not valid UTF-8 and cannot be stored in a .graphi header");
  };
  ordered_json h;
  ordered_json inputs = ordered_json::array(), constants = ordered_json::array(),
               value_info = ordered_json::array();
  std::vector<const Value*> weights;
  uint64_t weights_bytes = 0;
  for (const Value& v : g.values()) {
    if (!valid_utf8(v.name)) return bad_string("value name '" + v.name + "'");
    if (v.kind == ValueKind::kInput) {
      inputs.push_back(desc_json(v.name, v.desc));
    } else if (v.kind == ValueKind::kConstant) {
      if (!v.data || v.data->bytes() != v.desc.bytes())
        return Status::internal(g.source() + ": constant '" + v.name +
                                "' has no data or data of the wrong size");
      ordered_json c = desc_json(v.name, v.desc);
      const uint64_t offset = align_up(weights_bytes, kGraphiWeightAlignment);
      c["offset"] = offset;
      c["byte_length"] = static_cast<uint64_t>(v.desc.bytes());
      constants.push_back(std::move(c));
      weights.push_back(&v);
      weights_bytes = offset + v.desc.bytes();
    } else {
      // Declared descs of intermediates let a reader without shape inference know every shape;
      // graphi's reader checks them against its own inference.
      value_info.push_back(desc_json(v.name, v.desc));
    }
  }
  ordered_json nodes = ordered_json::array();
  for (const Node& n : g.nodes()) {
    if (!valid_utf8(n.name) || !valid_utf8(n.op))
      return bad_string("node name or op of '" + n.name + "'");
    ordered_json j;
    j["name"] = n.name;
    j["op"] = n.op;
    ordered_json ins = ordered_json::array(), outs = ordered_json::array();
    for (ValueId v : n.inputs) ins.push_back(v == kNoId ? std::string() : g.value(v).name);
    for (ValueId v : n.outputs) outs.push_back(g.value(v).name);
    j["inputs"] = std::move(ins);
    j["outputs"] = std::move(outs);
    if (!n.attrs.all().empty()) {
      ordered_json attrs = ordered_json::object();
      for (const auto& [key, a] : n.attrs.all()) {
        if (!valid_utf8(key)) return bad_string("an attribute name of node '" + n.name + "'");
        if (auto* s = std::get_if<std::string>(&a); s && !valid_utf8(*s))
          return bad_string("attribute '" + key + "' of node '" + n.name + "'");
        attrs[key] = attribute_json(a);
      }
      j["attributes"] = std::move(attrs);
    }
    nodes.push_back(std::move(j));
  }
  ordered_json outputs = ordered_json::array();
  for (ValueId v : g.outputs()) outputs.push_back(g.value(v).name);
  ordered_json metadata = ordered_json::object();
  for (const auto& [k, v] : g.metadata()) {
    if (!valid_utf8(k) || !valid_utf8(v)) return bad_string("metadata entry '" + k + "'");
    metadata[k] = v;
  }
  h["inputs"] = std::move(inputs);
  h["constants"] = std::move(constants);
  h["nodes"] = std::move(nodes);
  h["outputs"] = std::move(outputs);
  h["value_info"] = std::move(value_info);
  h["metadata"] = std::move(metadata);
  const std::string text = h.dump(1);

  const uint64_t weights_offset =
      align_up(kGraphiPreambleBytes + text.size(), kGraphiWeightAlignment);
  std::vector<std::byte> out(static_cast<size_t>(weights_offset + weights_bytes), std::byte{0});
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  std::memcpy(p, kGraphiMagic, sizeof kGraphiMagic);
  store_u32(p + 8, kGraphiFormatVersion);
  store_u32(p + 12, 0);
  store_u64(p + 16, text.size());
  store_u64(p + 24, weights_bytes);
  std::memcpy(p + kGraphiPreambleBytes, text.data(), text.size());
  uint64_t offset = 0;
  for (const Value* v : weights) {
    offset = align_up(offset, kGraphiWeightAlignment);
    std::memcpy(p + weights_offset + offset, v->data->data(), v->desc.bytes());
    offset += v->desc.bytes();
  }
  return out;
}

}  // namespace

bool has_graphi_magic(std::span<const std::byte> bytes) {
  return bytes.size() >= sizeof kGraphiMagic &&
         std::memcmp(bytes.data(), kGraphiMagic, sizeof kGraphiMagic) == 0;
}

Result<Graph> read_graphi_bytes(std::span<const std::byte> bytes, const std::string& source,
                                const ShapeInferencer& shapes) {
  SpanSource in(bytes);
  return read_guarded(in, source, shapes, 0);
}

Result<Graph> read_graphi(const std::string& path, const ShapeInferencer& shapes,
                          uint64_t max_memory) {
  try {
    FileSource in;
    GRAPHI_RETURN_IF_ERROR(in.open(path));
    return read_guarded(in, path, shapes, max_memory);
  } catch (const std::exception& e) {
    return Status::internal(path + ": unexpected error while loading the graph: " + e.what());
  }
}

Result<std::vector<std::byte>> write_graphi_bytes(const Graph& g) {
  try {
    return write_impl(g);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory,
                  g.source() + ": out of memory while serializing the graph");
  } catch (const std::exception& e) {
    return Status::internal(g.source() +
                            ": unexpected error while serializing the graph: " + e.what());
  }
}

Status write_graphi(const Graph& g, const std::string& path) {
  GRAPHI_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, write_graphi_bytes(g));
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::io_error("cannot write '" + path + "': " + std::strerror(errno));
  const char* p = reinterpret_cast<const char*>(bytes.data());
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = Status::io_error("cannot write '" + path + "': " + std::strerror(errno));
      ::close(fd);
      ::unlink(tmp.c_str());
      return s;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    Status s = Status::io_error("cannot write '" + path + "': " + std::strerror(errno));
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = Status::io_error("cannot write '" + path + "': " + std::strerror(errno));
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::ok();
}

}  // namespace graphi::graph
