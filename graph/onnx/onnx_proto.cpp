#include "graph/onnx/onnx_proto.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "graph/float16.h"
#include "graph/onnx/onnx_external_data.h"
#include "graph/onnx/protobuf_reader.h"

namespace graphi::graph::onnx {

std::string data_type_name(int32_t t) {
  static const char* kNames[] = {"UNDEFINED",  "FLOAT",   "UINT8",  "INT8",   "UINT16",
                                 "INT16",      "INT32",   "INT64",  "STRING", "BOOL",
                                 "FLOAT16",    "DOUBLE",  "UINT32", "UINT64", "COMPLEX64",
                                 "COMPLEX128", "BFLOAT16"};
  if (t >= 0 && t <= 16) return kNames[t];
  return "type " + std::to_string(t);
}

bool is_float_type(int32_t t) {
  return t == kFloat || t == kDouble || t == kFloat16 || t == kBfloat16;
}

std::string attr_type_name(int32_t t) {
  static const char* kNames[] = {"UNDEFINED",      "FLOAT",      "INT",        "STRING",
                                 "TENSOR",         "GRAPH",      "FLOATS",     "INTS",
                                 "STRINGS",        "TENSORS",    "GRAPHS",     "SPARSE_TENSOR",
                                 "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
  if (t >= 0 && t <= 14) return kNames[t];
  return "type " + std::to_string(t);
}

std::string HostTensor::desc() const { return data_type_name(type) + shape_to_string(shape); }

HostTensor HostTensor::make(int32_t type, Shape shape) {
  HostTensor t;
  t.type = type;
  t.shape = std::move(shape);
  const auto n = static_cast<size_t>(shape_numel(t.shape));
  if (t.is_float())
    t.f.assign(n, 0.0);
  else
    t.i.assign(n, 0);
  return t;
}

const Attr* Node::attr(const std::string& n) const {
  for (const Attr& a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}

namespace {

float bits_to_float(uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

double bits_to_double(uint64_t bits) {
  double v;
  std::memcpy(&v, &bits, 8);
  return v;
}

// Bytes per element in raw_data, or 0 for types graphi cannot hold.
size_t raw_size(int32_t t) {
  switch (t) {
    case kFloat:
    case kInt32:
    case kUint32:
      return 4;
    case kInt64:
    case kUint64:
    case kDouble:
      return 8;
    case kUint8:
    case kInt8:
    case kBool:
      return 1;
    case kUint16:
    case kInt16:
    case kFloat16:
    case kBfloat16:
      return 2;
    default:
      return 0;
  }
}

// Sign-extends / reinterprets a raw little-endian element of type t.
void store_element(HostTensor& t, size_t k, uint64_t bits) {
  switch (t.type) {
    case kFloat:
      t.f[k] = bits_to_float(static_cast<uint32_t>(bits));
      break;
    case kDouble:
      t.f[k] = bits_to_double(bits);
      break;
    case kFloat16:
      t.f[k] = half_to_float(static_cast<uint16_t>(bits));
      break;
    case kBfloat16:
      t.f[k] = bfloat16_to_float(static_cast<uint16_t>(bits));
      break;
    case kInt8:
      t.i[k] = static_cast<int8_t>(bits);
      break;
    case kInt16:
      t.i[k] = static_cast<int16_t>(bits);
      break;
    case kInt32:
      t.i[k] = static_cast<int32_t>(bits);
      break;
    case kUint8:
      t.i[k] = static_cast<uint8_t>(bits);
      break;
    case kUint16:
      t.i[k] = static_cast<uint16_t>(bits);
      break;
    case kUint32:
      t.i[k] = static_cast<uint32_t>(bits);
      break;
    case kBool:
      t.i[k] = (bits & 0xff) != 0;
      break;
    default:
      t.i[k] = static_cast<int64_t>(bits);
      break;  // INT64, UINT64 (bits kept)
  }
}

std::string idx(const std::string& base, const char* field, size_t i) {
  return base + "." + field + "[" + std::to_string(i) + "]";
}

Result<HostTensor> read_tensor(ProtoReader r, std::string* name_out, const DecodeOptions& opt) {
  HostTensor t;
  t.type = kUndefined;
  std::vector<int64_t> dims, int_data, int64_data, uint64_data;
  std::vector<uint32_t> float_data;
  std::vector<uint64_t> double_data;
  std::span<const std::byte> raw;
  bool has_raw = false, external = false, has_type = false;
  std::string name;
  ExternalDataRef ext;
  std::vector<std::byte> external_bytes;  // owns `raw` for external data
  for (;;) {
    GRAPHI_ASSIGN_OR_RETURN(std::optional<ProtoField> f, r.next());
    if (!f) break;
    switch (f->number) {
      case 1:
        GRAPHI_RETURN_IF_ERROR(append_varints(r, *f, "dims", dims));
        break;
      case 2: {
        GRAPHI_ASSIGN_OR_RETURN(int64_t v, proto_int(r, *f, "data_type"));
        t.type = static_cast<int32_t>(v);
        has_type = true;
        break;
      }
      case 3:
        return r.error(*f, "segmented tensors (TensorProto.segment) are not supported");
      case 4:
        GRAPHI_RETURN_IF_ERROR(append_fixed32s(r, *f, "float_data", float_data));
        break;
      case 5:
        GRAPHI_RETURN_IF_ERROR(append_varints(r, *f, "int32_data", int_data));
        break;
      case 6:
        return r.error(*f, "string tensors (TensorProto.string_data) are not supported");
      case 7:
        GRAPHI_RETURN_IF_ERROR(append_varints(r, *f, "int64_data", int64_data));
        break;
      case 8: {
        GRAPHI_ASSIGN_OR_RETURN(name, proto_string(r, *f, "name"));
        break;
      }
      case 9:
        GRAPHI_RETURN_IF_ERROR(expect_wire(r, *f, WireType::kLen, "raw_data"));
        raw = f->bytes;
        has_raw = true;
        break;
      case 10:
        GRAPHI_RETURN_IF_ERROR(append_fixed64s(r, *f, "double_data", double_data));
        break;
      case 11:
        GRAPHI_RETURN_IF_ERROR(append_varints(r, *f, "uint64_data", uint64_data));
        break;
      case 13: {  // external_data: StringStringEntryProto {key = 1, value = 2}
        GRAPHI_RETURN_IF_ERROR(expect_wire(r, *f, WireType::kLen, "external_data"));
        ProtoReader e = r.sub(*f, r.path() + ".external_data");
        std::string key, value;
        for (;;) {
          GRAPHI_ASSIGN_OR_RETURN(std::optional<ProtoField> g, e.next());
          if (!g) break;
          if (g->number == 1) {
            GRAPHI_ASSIGN_OR_RETURN(key, proto_string(e, *g, "key"));
          } else if (g->number == 2) {
            GRAPHI_ASSIGN_OR_RETURN(value, proto_string(e, *g, "value"));
          }
        }
        if (key == "location") {
          ext.location = value;
        } else if (key == "offset") {
          ext.offset = value;
          ext.has_offset = true;
        } else if (key == "length") {
          ext.length = value;
          ext.has_length = true;
        }  // "checksum" (SHA-1, optional) and unknown keys: not needed to read the data
        external = true;
        break;
      }
      case 14: {
        GRAPHI_ASSIGN_OR_RETURN(int64_t v, proto_int(r, *f, "data_location"));
        if (v == 1) external = true;
        break;
      }
      default:
        break;
    }
  }
  if (name_out) *name_out = name;
  const std::string what = r.path() + (name.empty() ? "" : " '" + name + "'");
  if (external && !opt.external)
    return Status::unsupported(
        what + ": the tensor's data is stored in an external file" +
        (ext.location.empty() ? "" : " ('" + ext.location + "')") +
        "; external data is read only when the model is loaded from a file (import_onnx_file), "
        "whose directory holds the side files");
  if (external && has_raw)
    return Status::invalid_graph(what + ": the tensor has both raw_data and external_data");
  if (!has_type) return Status::invalid_graph(what + ": missing data_type");
  const size_t esize = raw_size(t.type);
  if (esize == 0)
    return Status::unsupported(what + ": tensors of type " + data_type_name(t.type) +
                               " are not supported (graphi holds float, integer and bool data)");
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0)
      return Status::invalid_graph(what + ": negative dim in dims " + shape_to_string(dims));
    if (d > 0 && n > (int64_t{1} << 40) / d)
      return Status::invalid_graph(what + ": dims " + shape_to_string(dims) + " are too large");
    n *= d;
  }
  t.shape = dims;
  const auto count = static_cast<size_t>(n);
  // Storage is allocated only after the data present in the file was checked against the dims:
  // bogus dims (e.g. [1099511627776] over 8 bytes) must be an error, not a terabyte allocation.
  auto allocate = [&] {
    if (t.is_float())
      t.f.resize(count);
    else
      t.i.resize(count);
  };
  const std::string shape_s = data_type_name(t.type) + shape_to_string(dims);
  if (external) {
    // Sizes are checked against the side file before anything is read (onnx_external_data.h).
    GRAPHI_ASSIGN_OR_RETURN(external_bytes, opt.external->read(ext, what, count * esize));
    raw = std::span<const std::byte>(external_bytes);
    has_raw = true;
  }
  if (has_raw) {
    if (raw.size() != count * esize)
      return Status::invalid_graph(what + ": raw_data has " + std::to_string(raw.size()) +
                                   " bytes, expected " + std::to_string(count * esize) + " for " +
                                   shape_s);
    allocate();
    if constexpr (std::endian::native == std::endian::little) {
      // The common cases without a per-element switch (a 200 MB float model: 1.3 s -> see
      // graph/onnx/ONNX.md): FLOAT widened to double, INT64 copied.
      if (t.type == kFloat) {
        for (size_t k = 0; k < count; ++k) {
          float v;
          std::memcpy(&v, raw.data() + 4 * k, 4);
          t.f[k] = v;
        }
        return t;
      }
      if (t.type == kInt64) {
        if (count > 0) std::memcpy(t.i.data(), raw.data(), count * 8);
        return t;
      }
    }
    for (size_t k = 0; k < count; ++k) {
      uint64_t bits = 0;
      for (size_t b = 0; b < esize; ++b)
        bits |= static_cast<uint64_t>(static_cast<uint8_t>(raw[k * esize + b])) << (8 * b);
      store_element(t, k, bits);
    }
    return t;
  }
  // Typed fields: which one holds data depends on the type (onnx.proto's table).
  auto check = [&](size_t got, const char* field) -> Status {
    if (got == count) {
      allocate();
      return Status::ok();
    }
    return Status::invalid_graph(what + ": " + field + " has " + std::to_string(got) +
                                 " values, expected " + std::to_string(count) + " for " + shape_s);
  };
  switch (t.type) {
    case kFloat:
      GRAPHI_RETURN_IF_ERROR(check(float_data.size(), "float_data"));
      for (size_t k = 0; k < count; ++k) store_element(t, k, float_data[k]);
      break;
    case kDouble:
      GRAPHI_RETURN_IF_ERROR(check(double_data.size(), "double_data"));
      for (size_t k = 0; k < count; ++k) store_element(t, k, double_data[k]);
      break;
    case kInt64:
      GRAPHI_RETURN_IF_ERROR(check(int64_data.size(), "int64_data"));
      t.i = int64_data;
      break;
    case kUint32:
    case kUint64:
      GRAPHI_RETURN_IF_ERROR(check(uint64_data.size(), "uint64_data"));
      for (size_t k = 0; k < count; ++k) store_element(t, k, static_cast<uint64_t>(uint64_data[k]));
      break;
    default:  // INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16, BFLOAT16: int32_data
      GRAPHI_RETURN_IF_ERROR(check(int_data.size(), "int32_data"));
      for (size_t k = 0; k < count; ++k) store_element(t, k, static_cast<uint64_t>(int_data[k]));
      break;
  }
  return t;
}

Result<GraphProto> read_graph(ProtoReader r, const DecodeOptions& opt);

Result<Attr> read_attr(ProtoReader r, const DecodeOptions& opt) {
  Attr a;
  bool has_f = false, has_i = false, has_s = false;
  for (;;) {
    GRAPHI_ASSIGN_OR_RETURN(std::optional<ProtoField> f, r.next());
    if (!f) break;
    switch (f->number) {
      case 1: {
        GRAPHI_ASSIGN_OR_RETURN(a.name, proto_string(r, *f, "name"));
        break;
      }
      case 2: {
        GRAPHI_ASSIGN_OR_RETURN(a.f, proto_float(r, *f, "f"));
        has_f = true;
        break;
      }
      case 3: {
        GRAPHI_ASSIGN_OR_RETURN(a.i, proto_int(r, *f, "i"));
        has_i = true;
        break;
      }
      case 4: {
        GRAPHI_ASSIGN_OR_RETURN(a.s, proto_string(r, *f, "s"));
        has_s = true;
        break;
      }
      case 5: {
        GRAPHI_RETURN_IF_ERROR(expect_wire(r, *f, WireType::kLen, "t"));
        GRAPHI_ASSIGN_OR_RETURN(HostTensor t,
                                read_tensor(r.sub(*f, r.path() + ".t"), nullptr, opt));
        a.t = std::make_shared<HostTensor>(std::move(t));
        break;
      }
      case 6: {
        GRAPHI_RETURN_IF_ERROR(expect_wire(r, *f, WireType::kLen, "g"));
        if (opt.depth >= kMaxGraphDepth)
          return Status::invalid_graph(r.path() + ".g: subgraphs nested more than " +
                                       std::to_string(kMaxGraphDepth) + " deep");
        DecodeOptions inner = opt;
        ++inner.depth;
        GRAPHI_ASSIGN_OR_RETURN(GraphProto g, read_graph(r.sub(*f, r.path() + ".g"), inner));
        a.g = std::make_shared<const GraphProto>(std::move(g));
        if (a.type == kAttrUndefined) a.type = kAttrGraph;
        break;
      }
      case 11:
      case 22:
      case 23:
      case 14:
      case 15:
      case 10:
        if (a.type == kAttrUndefined)
          a.type = f->number == 11   ? kAttrGraphs
                   : f->number == 22 ? kAttrSparseTensor
                   : f->number == 23 ? kAttrSparseTensors
                   : f->number == 14 ? kAttrTypeProto
                   : f->number == 15 ? kAttrTypeProtos
                                     : kAttrTensors;
        break;
      case 7: {
        std::vector<uint32_t> bits;
        GRAPHI_RETURN_IF_ERROR(append_fixed32s(r, *f, "floats", bits));
        for (uint32_t b : bits) a.floats.push_back(bits_to_float(b));
        if (a.type == kAttrUndefined) a.type = kAttrFloats;
        break;
      }
      case 8:
        GRAPHI_RETURN_IF_ERROR(append_varints(r, *f, "ints", a.ints));
        if (a.type == kAttrUndefined) a.type = kAttrInts;
        break;
      case 9: {
        GRAPHI_ASSIGN_OR_RETURN(std::string s, proto_string(r, *f, "strings"));
        a.strings.push_back(std::move(s));
        if (a.type == kAttrUndefined) a.type = kAttrStrings;
        break;
      }
      case 20: {
        GRAPHI_ASSIGN_OR_RETURN(int64_t v, proto_int(r, *f, "type"));
        a.type = static_cast<int32_t>(v);
        break;
      }
      case 21:
        return r.error(*f,
                       "attribute references (ref_attr_name) occur only in functions, which "
                       "graphi does not support");
      default:
        break;
    }
  }
  if (a.type == kAttrUndefined) {
    // IR < 3 files may omit `type`; take it from the field that is set.
    if (a.t)
      a.type = kAttrTensor;
    else if (has_f)
      a.type = kAttrFloat;
    else if (has_i)
      a.type = kAttrInt;
    else if (has_s)
      a.type = kAttrString;
  }
  if (a.name.empty()) return Status::invalid_graph(r.path() + ": attribute without a name");
  // A declared scalar type whose field is absent while another scalar field is set (e.g. type
  // INT holding f = 2.5) would silently read as 0: refuse the contradiction.
  const bool has_t = a.t != nullptr;
  const int n_scalar = int{has_f} + int{has_i} + int{has_s} + int{has_t};
  const bool own_field = (a.type == kAttrFloat && has_f) || (a.type == kAttrInt && has_i) ||
                         (a.type == kAttrString && has_s) || (a.type == kAttrTensor && has_t);
  if ((a.type == kAttrFloat || a.type == kAttrInt || a.type == kAttrString) && !own_field &&
      n_scalar > 0)
    return Status::invalid_graph(r.path() + " '" + a.name + "': declared type " +
                                 attr_type_name(a.type) + " but the value is in field " +
                                 (has_f   ? "f"
                                  : has_i ? "i"
                                  : has_s ? "s"
                                          : "t") +
                                 " (type and data field disagree)");
  if (a.type == kAttrTensor && !a.t)
    return Status::invalid_graph(r.path() + " '" + a.name +
                                 "': TENSOR attribute without a tensor (t)");
  return a;
}

Result<Node> read_node(ProtoReader r, size_t index, const DecodeOptions& opt) {
  Node n;
  n.index = index;
  size_t n_attr = 0;
  for (;;) {
    GRAPHI_ASSIGN_OR_RETURN(std::optional<ProtoField> f, r.next());
    if (!f) break;
    switch (f->number) {
      case 1: {
        GRAPHI_ASSIGN_OR_RETURN(std::string s, proto_string(r, *f, "input"));
        n.inputs.push_back(std::move(s));
        break;
      }
      case 2: {
        GRAPHI_ASSIGN_OR_RETURN(std::string s, proto_string(r, *f, "output"));
        n.outputs.push_back(std::move(s));
        break;
      }
      case 3: {
        GRAPHI_ASSIGN_OR_RETURN(n.name, proto_string(r, *f, "name"));
        break;
      }
      case 4: {
        GRAPHI_ASSIGN_OR_RETURN(n.op, proto_string(r, *f, "op_type"));
        break;
      }
      case 5: {
        GRAPHI_RETURN_IF_ERROR(expect_wire(r, *f, WireType::kLen, "attribute"));
        GRAPHI_ASSIGN_OR_RETURN(Attr a,
                                read_attr(r.sub(*f, idx(r.path(), "attribute", n_attr++)), opt));
        n.attrs.push_back(std::move(a));
        break;
      }
      case 7: {
        GRAPHI_ASSIGN_OR_RETURN(n.domain, proto_string(r, *f, "domain"));
        break;
      }
      default:
        break;
    }
  }
  if (n.op.empty()) return Status::invalid_graph(r.path() + ": node without op_type");
  // Which of two same-named attributes applies is undefined (ONNX's checker refuses them).
  for (size_t i = 0; i < n.attrs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (n.attrs[i].name == n.attrs[j].name)
        return Status::invalid_graph(idx(r.path(), "attribute", i) + " '" + n.attrs[i].name +
                                     "' of node '" + n.name + "' (" + n.op +
                                     ") repeats attribute[" + std::to_string(j) +
                                     "]; each attribute may appear once");
  return n;
}

Result<ValueInfo> read_value_info(ProtoReader r) {
  ValueInfo v;
  for (;;) {
    GRAPHI_ASSIGN_OR_RETURN(std::optional<ProtoField> f, r.next());
    if (!f) break;
    if (f->number == 1) {
      GRAPHI_ASSIGN_OR_RETURN(v.name, proto_string(r, *f, "name"));
    } else if (f->number == 2) {  // TypeProto
      GRAPHI_RETURN_IF_ERROR(expect_wire(r, *f, WireType::kLen, "type"));
      ProtoReader tr = r.sub(*f, r.path() + ".type");
      for (;;) {
        GRAPHI_ASSIGN_OR_RETURN(std::optional<ProtoField> g, tr.next());
        if (!g) break;
        if (g->number != 1) continue;  // sequence, map, optional, sparse: not a dense tensor
        GRAPHI_RETURN_IF_ERROR(expect_wire(tr, *g, WireType::kLen, "tensor_type"));
        v.is_tensor = true;
        ProtoReader tt = tr.sub(*g, tr.path() + ".tensor_type");
        for (;;) {
          GRAPHI_ASSIGN_OR_RETURN(std::optional<ProtoField> h, tt.next());
          if (!h) break;
          if (h->number == 1) {
            GRAPHI_ASSIGN_OR_RETURN(int64_t e, proto_int(tt, *h, "elem_type"));
            v.elem_type = static_cast<int32_t>(e);
          } else if (h->number == 2) {
            GRAPHI_RETURN_IF_ERROR(expect_wire(tt, *h, WireType::kLen, "shape"));
            v.has_shape = true;
            ProtoReader sr = tt.sub(*h, tt.path() + ".shape");
            for (;;) {
              GRAPHI_ASSIGN_OR_RETURN(std::optional<ProtoField> d, sr.next());
              if (!d) break;
              if (d->number != 1) continue;
              GRAPHI_RETURN_IF_ERROR(expect_wire(sr, *d, WireType::kLen, "dim"));
              ProtoReader dr = sr.sub(*d, idx(sr.path(), "dim", v.dims.size()));
              Dim dim;
              for (;;) {
                GRAPHI_ASSIGN_OR_RETURN(std::optional<ProtoField> x, dr.next());
                if (!x) break;
                if (x->number == 1) {
                  GRAPHI_ASSIGN_OR_RETURN(dim.value, proto_int(dr, *x, "dim_value"));
                  dim.has_value = true;
                } else if (x->number == 2) {
                  GRAPHI_ASSIGN_OR_RETURN(dim.param, proto_string(dr, *x, "dim_param"));
                }
              }
              v.dims.push_back(std::move(dim));
            }
          }
        }
      }
    }
  }
  return v;
}

Result<GraphProto> read_graph(ProtoReader r, const DecodeOptions& opt) {
  GraphProto g;
  for (;;) {
    GRAPHI_ASSIGN_OR_RETURN(std::optional<ProtoField> f, r.next());
    if (!f) break;
    switch (f->number) {
      case 1: {
        GRAPHI_RETURN_IF_ERROR(expect_wire(r, *f, WireType::kLen, "node"));
        if (opt.signature_only) break;
        GRAPHI_ASSIGN_OR_RETURN(Node n, read_node(r.sub(*f, idx(r.path(), "node", g.nodes.size())),
                                                  g.nodes.size(), opt));
        g.nodes.push_back(std::move(n));
        break;
      }
      case 2: {
        GRAPHI_ASSIGN_OR_RETURN(g.name, proto_string(r, *f, "name"));
        break;
      }
      case 5: {
        GRAPHI_RETURN_IF_ERROR(expect_wire(r, *f, WireType::kLen, "initializer"));
        if (opt.signature_only) {  // its name (field 8) only, as an empty tensor
          ProtoReader t = r.sub(*f, idx(r.path(), "initializer", g.initializers.size()));
          std::string name;
          for (;;) {
            GRAPHI_ASSIGN_OR_RETURN(std::optional<ProtoField> tf, t.next());
            if (!tf) break;
            if (tf->number == 8) {
              GRAPHI_ASSIGN_OR_RETURN(name, proto_string(t, *tf, "name"));
            }
          }
          g.initializers.emplace_back(name, std::make_shared<HostTensor>());
          break;
        }
        std::string name;
        GRAPHI_ASSIGN_OR_RETURN(
            HostTensor t,
            read_tensor(r.sub(*f, idx(r.path(), "initializer", g.initializers.size())), &name,
                        opt));
        if (name.empty())
          return Status::invalid_graph(idx(r.path(), "initializer", g.initializers.size()) +
                                       ": initializer without a name");
        g.initializers.emplace_back(name, std::make_shared<HostTensor>(std::move(t)));
        break;
      }
      case 11:
      case 12:
      case 13: {
        const char* field = f->number == 11 ? "input" : f->number == 12 ? "output" : "value_info";
        GRAPHI_RETURN_IF_ERROR(expect_wire(r, *f, WireType::kLen, field));
        auto& list = f->number == 11 ? g.inputs : f->number == 12 ? g.outputs : g.value_info;
        GRAPHI_ASSIGN_OR_RETURN(ValueInfo v,
                                read_value_info(r.sub(*f, idx(r.path(), field, list.size()))));
        list.push_back(std::move(v));
        break;
      }
      case 15:
        return r.error(*f, "sparse initializers are not supported");
      default:
        break;
    }
  }
  return g;
}

}  // namespace

Result<Model> decode_model(std::span<const std::byte> bytes, const DecodeOptions& options) {
  Model m;
  ProtoReader r(bytes, "model");
  for (;;) {
    GRAPHI_ASSIGN_OR_RETURN(std::optional<ProtoField> f, r.next());
    if (!f) break;
    switch (f->number) {
      case 1: {
        GRAPHI_ASSIGN_OR_RETURN(m.ir_version, proto_int(r, *f, "ir_version"));
        break;
      }
      case 2: {
        GRAPHI_ASSIGN_OR_RETURN(m.producer_name, proto_string(r, *f, "producer_name"));
        break;
      }
      case 3: {
        GRAPHI_ASSIGN_OR_RETURN(m.producer_version, proto_string(r, *f, "producer_version"));
        break;
      }
      case 4: {
        GRAPHI_ASSIGN_OR_RETURN(m.domain, proto_string(r, *f, "domain"));
        break;
      }
      case 5: {
        GRAPHI_ASSIGN_OR_RETURN(m.model_version, proto_int(r, *f, "model_version"));
        break;
      }
      case 6: {
        GRAPHI_ASSIGN_OR_RETURN(m.doc, proto_string(r, *f, "doc_string"));
        break;
      }
      case 7: {
        GRAPHI_RETURN_IF_ERROR(expect_wire(r, *f, WireType::kLen, "graph"));
        GRAPHI_ASSIGN_OR_RETURN(m.graph, read_graph(r.sub(*f, "graph"), options));
        m.has_graph = true;
        break;
      }
      case 8: {
        GRAPHI_RETURN_IF_ERROR(expect_wire(r, *f, WireType::kLen, "opset_import"));
        ProtoReader o = r.sub(*f, "opset_import[" + std::to_string(m.opsets.size()) + "]");
        std::string domain;
        int64_t version = 0;
        for (;;) {
          GRAPHI_ASSIGN_OR_RETURN(std::optional<ProtoField> g, o.next());
          if (!g) break;
          if (g->number == 1) {
            GRAPHI_ASSIGN_OR_RETURN(domain, proto_string(o, *g, "domain"));
          } else if (g->number == 2) {
            GRAPHI_ASSIGN_OR_RETURN(version, proto_int(o, *g, "version"));
          }
        }
        if (domain == "ai.onnx") domain.clear();
        // Two versions of one domain: which opset's semantics apply is undefined.
        if (auto it = m.opsets.find(domain); it != m.opsets.end() && it->second != version)
          return Status::invalid_graph(o.path() + ": imports opset " + std::to_string(version) +
                                       " of domain '" + (domain.empty() ? "ai.onnx" : domain) +
                                       "', which an earlier opset_import gives as " +
                                       std::to_string(it->second));
        m.opsets[domain] = version;
        break;
      }
      case 14: {
        GRAPHI_RETURN_IF_ERROR(expect_wire(r, *f, WireType::kLen, "metadata_props"));
        ProtoReader e = r.sub(*f, "metadata_props");
        std::string key, value;
        for (;;) {
          GRAPHI_ASSIGN_OR_RETURN(std::optional<ProtoField> g, e.next());
          if (!g) break;
          if (g->number == 1) {
            GRAPHI_ASSIGN_OR_RETURN(key, proto_string(e, *g, "key"));
          } else if (g->number == 2) {
            GRAPHI_ASSIGN_OR_RETURN(value, proto_string(e, *g, "value"));
          }
        }
        m.metadata[key] = value;
        break;
      }
      default:
        break;
    }
  }
  return m;
}

Result<HostTensor> decode_tensor(std::span<const std::byte> bytes, std::string* name) {
  return read_tensor(ProtoReader(bytes, "tensor"), name, DecodeOptions{});
}

}  // namespace graphi::graph::onnx
