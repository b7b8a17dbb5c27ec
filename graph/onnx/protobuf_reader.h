// A small, bounds-checked reader of the protobuf wire format (no libprotobuf): enough to decode
// ONNX files. Every read checks the bytes left; malformed input gives a Status naming the field
// path of the message being read (e.g. "graph.node[12].attribute[0]: truncated varint at byte
// 345"), never a crash or an out-of-bounds read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graph/base.h"

namespace graphi::graph {

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

const char* wire_type_name(WireType w);  // "varint", "64-bit", "length-delimited", ...

// One field as read from the wire.
struct ProtoField {
  uint32_t number = 0;
  WireType wire = WireType::kVarint;
  uint64_t scalar = 0;               // kVarint, kFixed64, kFixed32: the raw bits
  std::span<const std::byte> bytes;  // kLen: the payload (a view into the reader's buffer)
  size_t offset = 0;                 // byte offset of the field's tag, for messages
};

// Reads the fields of one message in order. `path` names the message in errors ("graph.node[3]");
// `base` is the message's byte offset in the file (errors report file offsets).
class ProtoReader {
 public:
  ProtoReader(std::span<const std::byte> data, std::string path, size_t base = 0)
      : data_(data), path_(std::move(path)), base_(base) {}

  // The next field, or nullopt at the end of the message. Errors: truncated or overlong
  // varints, field number 0, lengths past the end, groups (deprecated, not used by ONNX).
  Result<std::optional<ProtoField>> next();

  const std::string& path() const { return path_; }
  // File offset of the start of field `f`'s payload (for nested readers).
  size_t payload_offset(const ProtoField& f) const {
    return base_ + static_cast<size_t>(f.bytes.data() - data_.data());
  }
  // "<path>: <what> (field N at byte B)", for decoders' own errors about field f.
  Status error(const ProtoField& f, const std::string& what) const;
  // A reader of the sub-message in length-delimited field f, named `path`.
  ProtoReader sub(const ProtoField& f, std::string path) const {
    return ProtoReader(f.bytes, std::move(path), payload_offset(f));
  }

 private:
  Result<uint64_t> read_varint(const char* what);
  std::span<const std::byte> data_;
  std::string path_;
  size_t base_ = 0;
  size_t pos_ = 0;
};

// Field f must have wire type w: "<path>: field 4 (name) has wire type varint, expected
// length-delimited".
Status expect_wire(const ProtoReader& r, const ProtoField& f, WireType w, const char* name);

// Typed accessors; each checks the wire type and names the field on errors.
Result<int64_t> proto_int(const ProtoReader& r, const ProtoField& f, const char* name);  // varint
Result<float> proto_float(const ProtoReader& r, const ProtoField& f, const char* name);  // fixed32
Result<std::string> proto_string(const ProtoReader& r, const ProtoField& f, const char* name);

// Repeated scalar fields, appended: accept both the packed form (one length-delimited field)
// and the unpacked form (one field per element), as protobuf parsers must.
Status append_varints(const ProtoReader& r, const ProtoField& f, const char* name,
                      std::vector<int64_t>& out);
Status append_fixed32s(const ProtoReader& r, const ProtoField& f, const char* name,
                       std::vector<uint32_t>& out);
Status append_fixed64s(const ProtoReader& r, const ProtoField& f, const char* name,
                       std::vector<uint64_t>& out);

}  // namespace graphi::graph
