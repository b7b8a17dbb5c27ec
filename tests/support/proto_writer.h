// A minimal protobuf wire-format writer for tests that build ONNX models byte by byte
// (independent of graph/protobuf_reader, the code under test). Header-only.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace graphi::test {

struct ProtoWriter {
  std::string b;
  void varint(uint64_t v) {
    do {
      uint8_t c = v & 0x7f;
      v >>= 7;
      b.push_back(static_cast<char>(c | (v ? 0x80 : 0)));
    } while (v);
  }
  ProtoWriter& i(int f, int64_t v) {  // varint field
    varint(static_cast<uint64_t>(f) << 3);
    varint(static_cast<uint64_t>(v));
    return *this;
  }
  ProtoWriter& s(int f, const std::string& x) {  // length-delimited field
    varint((static_cast<uint64_t>(f) << 3) | 2);
    varint(x.size());
    b += x;
    return *this;
  }
  ProtoWriter& m(int f, const ProtoWriter& sub) { return s(f, sub.b); }
  ProtoWriter& f32(int f, float v) {  // fixed32 field
    varint((static_cast<uint64_t>(f) << 3) | 5);
    char c[4];
    std::memcpy(c, &v, 4);
    b.append(c, 4);
    return *this;
  }
};

// ONNX messages (field numbers from onnx.proto).
namespace onnx_pb {

// ValueInfoProto of a float/int tensor with static dims.
inline ProtoWriter value_info(const std::string& name, int elem, const std::vector<int64_t>& dims) {
  ProtoWriter shape;
  for (int64_t d : dims) {
    ProtoWriter dim;
    dim.i(1, d);
    shape.m(1, dim);
  }
  ProtoWriter tensor;
  tensor.i(1, elem).m(2, shape);
  ProtoWriter type;
  type.m(1, tensor);
  ProtoWriter v;
  v.s(1, name).m(2, type);
  return v;
}

inline ProtoWriter node(const std::string& op, const std::vector<std::string>& in,
                        const std::vector<std::string>& out, const std::string& name,
                        const std::vector<ProtoWriter>& attrs = {}) {
  ProtoWriter n;
  for (const auto& x : in) n.s(1, x);
  for (const auto& x : out) n.s(2, x);
  n.s(3, name).s(4, op);
  for (const ProtoWriter& a : attrs) n.m(5, a);
  return n;
}

// AttributeProto of type INT (2), INTS (7) and STRING (3).
inline ProtoWriter int_attr(const std::string& name, int64_t v) {
  ProtoWriter a;
  a.s(1, name).i(3, v).i(20, 2);
  return a;
}

inline ProtoWriter ints_attr(const std::string& name, const std::vector<int64_t>& v) {
  ProtoWriter a;
  a.s(1, name);
  for (int64_t x : v) a.i(8, x);
  a.i(20, 7);
  return a;
}

inline ProtoWriter str_attr(const std::string& name, const std::string& v) {
  ProtoWriter a;
  a.s(1, name).s(4, v).i(20, 3);
  return a;
}

// TensorProto with raw_data of `raw_bytes` zero bytes (data_type 1 = FLOAT, 7 = INT64).
inline ProtoWriter raw_tensor(const std::string& name, int data_type,
                              const std::vector<int64_t>& dims, size_t raw_bytes) {
  ProtoWriter t;
  for (int64_t d : dims) t.i(1, d);
  t.i(2, data_type).s(8, name).s(9, std::string(raw_bytes, '\0'));
  return t;
}

inline ProtoWriter int64_tensor(const std::string& name, const std::vector<int64_t>& v) {
  ProtoWriter t;
  t.i(1, static_cast<int64_t>(v.size())).i(2, 7).s(8, name);
  std::string raw(v.size() * 8, '\0');
  if (!v.empty()) std::memcpy(raw.data(), v.data(), raw.size());  // empty: data() may be null
  t.s(9, raw);
  return t;
}

inline std::string model(const ProtoWriter& graph, int64_t opset = 14, int64_t ir = 7) {
  ProtoWriter op;
  op.s(1, "").i(2, opset);
  ProtoWriter m;
  m.i(1, ir).s(2, "graphi-test").m(7, graph).m(8, op);
  return m.b;
}

}  // namespace onnx_pb
}  // namespace graphi::test
