#include "graph/onnx/protobuf_reader.h"

#include <cstring>

namespace graphi::graph {

const char* wire_type_name(WireType w) {
  switch (w) {
    case WireType::kVarint:
      return "varint";
    case WireType::kFixed64:
      return "64-bit";
    case WireType::kLen:
      return "length-delimited";
    case WireType::kStartGroup:
      return "start-group";
    case WireType::kEndGroup:
      return "end-group";
    case WireType::kFixed32:
      return "32-bit";
  }
  return "invalid";
}

Result<uint64_t> ProtoReader::read_varint(const char* what) {
  const size_t start = pos_;
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= data_.size())
      return Status::invalid_graph(path_ + ": truncated varint (" + what + ") at byte " +
                                   std::to_string(base_ + start));
    const auto b = static_cast<uint8_t>(data_[pos_++]);
    // The 10th byte may only carry the top bit of a 64-bit value.
    if (shift == 63 && (b & 0x7e) != 0) break;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  return Status::invalid_graph(path_ + ": overlong varint (" + what + ") at byte " +
                               std::to_string(base_ + start));
}

Result<std::optional<ProtoField>> ProtoReader::next() {
  if (pos_ >= data_.size()) return std::optional<ProtoField>();
  ProtoField f;
  f.offset = base_ + pos_;
  GRAPHI_ASSIGN_OR_RETURN(uint64_t tag, read_varint("field tag"));
  const uint64_t number = tag >> 3;
  const auto wire = static_cast<unsigned>(tag & 7);
  const std::string at = " at byte " + std::to_string(f.offset);
  if (number == 0 || number > 536870911u)
    return Status::invalid_graph(path_ + ": invalid field number " + std::to_string(number) + at);
  f.number = static_cast<uint32_t>(number);
  f.wire = static_cast<WireType>(wire);
  const std::string field = "field " + std::to_string(number);
  switch (wire) {
    case 0: {
      GRAPHI_ASSIGN_OR_RETURN(f.scalar, read_varint(field.c_str()));
      break;
    }
    case 1:
    case 5: {
      const size_t n = wire == 1 ? 8 : 4;
      if (data_.size() - pos_ < n)
        return Status::invalid_graph(path_ + ": truncated " + std::to_string(n * 8) + "-bit " +
                                     field + at);
      uint64_t v = 0;
      for (size_t i = 0; i < n; ++i)
        v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
      pos_ += n;
      f.scalar = v;
      break;
    }
    case 2: {
      GRAPHI_ASSIGN_OR_RETURN(uint64_t len, read_varint((field + " length").c_str()));
      if (len > data_.size() - pos_)
        return Status::invalid_graph(path_ + ": " + field + at + " claims " + std::to_string(len) +
                                     " bytes but only " + std::to_string(data_.size() - pos_) +
                                     " remain (truncated file?)");
      f.bytes = data_.subspan(pos_, static_cast<size_t>(len));
      pos_ += static_cast<size_t>(len);
      break;
    }
    case 3:
    case 4:
      return Status::invalid_graph(path_ + ": " + field + at + " uses protobuf groups (wire type " +
                                   std::to_string(wire) + "), which ONNX never writes");
    default:
      return Status::invalid_graph(path_ + ": " + field + at + " has invalid wire type " +
                                   std::to_string(wire));
  }
  return std::optional<ProtoField>(f);
}

Status ProtoReader::error(const ProtoField& f, const std::string& what) const {
  return Status::invalid_graph(path_ + ": " + what + " (field " + std::to_string(f.number) +
                               " at byte " + std::to_string(f.offset) + ")");
}

Status expect_wire(const ProtoReader& r, const ProtoField& f, WireType w, const char* name) {
  if (f.wire == w) return Status::ok();
  return r.error(f, std::string(name) + " has wire type " + wire_type_name(f.wire) + ", expected " +
                        wire_type_name(w));
}

Result<int64_t> proto_int(const ProtoReader& r, const ProtoField& f, const char* name) {
  GRAPHI_RETURN_IF_ERROR(expect_wire(r, f, WireType::kVarint, name));
  return static_cast<int64_t>(f.scalar);
}

Result<float> proto_float(const ProtoReader& r, const ProtoField& f, const char* name) {
  GRAPHI_RETURN_IF_ERROR(expect_wire(r, f, WireType::kFixed32, name));
  const auto bits = static_cast<uint32_t>(f.scalar);
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

Result<std::string> proto_string(const ProtoReader& r, const ProtoField& f, const char* name) {
  GRAPHI_RETURN_IF_ERROR(expect_wire(r, f, WireType::kLen, name));
  return std::string(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size());
}

Status append_varints(const ProtoReader& r, const ProtoField& f, const char* name,
                      std::vector<int64_t>& out) {
  if (f.wire == WireType::kVarint) {
    out.push_back(static_cast<int64_t>(f.scalar));
    return Status::ok();
  }
  GRAPHI_RETURN_IF_ERROR(expect_wire(r, f, WireType::kLen, name));
  // A packed run: bare varints back to back, no tags.
  size_t pos = 0;
  const auto& b = f.bytes;
  while (pos < b.size()) {
    uint64_t v = 0;
    int shift = 0;
    for (;;) {
      if (pos >= b.size()) return r.error(f, std::string("truncated varint in packed ") + name);
      if (shift >= 64) return r.error(f, std::string("overlong varint in packed ") + name);
      const auto byte = static_cast<uint8_t>(b[pos++]);
      if (shift == 63 && (byte & 0x7e) != 0)
        return r.error(f, std::string("overlong varint in packed ") + name);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      shift += 7;
      if ((byte & 0x80) == 0) break;
    }
    out.push_back(static_cast<int64_t>(v));
  }
  return Status::ok();
}

template <typename T>
static Status append_fixed(const ProtoReader& r, const ProtoField& f, const char* name,
                           std::vector<T>& out, WireType single) {
  if (f.wire == single) {
    out.push_back(static_cast<T>(f.scalar));
    return Status::ok();
  }
  GRAPHI_RETURN_IF_ERROR(expect_wire(r, f, WireType::kLen, name));
  if (f.bytes.size() % sizeof(T) != 0)
    return r.error(f, std::string("packed ") + name + " has " + std::to_string(f.bytes.size()) +
                          " bytes, not a multiple of " + std::to_string(sizeof(T)));
  const size_t n = f.bytes.size() / sizeof(T);
  const size_t old = out.size();
  out.resize(old + n);
  for (size_t i = 0; i < n; ++i) {
    T v = 0;
    for (size_t k = 0; k < sizeof(T); ++k)
      v |= static_cast<T>(static_cast<uint8_t>(f.bytes[i * sizeof(T) + k])) << (8 * k);
    out[old + i] = v;
  }
  return Status::ok();
}

Status append_fixed32s(const ProtoReader& r, const ProtoField& f, const char* name,
                       std::vector<uint32_t>& out) {
  return append_fixed(r, f, name, out, WireType::kFixed32);
}

Status append_fixed64s(const ProtoReader& r, const ProtoField& f, const char* name,
                       std::vector<uint64_t>& out) {
  return append_fixed(r, f, name, out, WireType::kFixed64);
}

}  // namespace graphi::graph
