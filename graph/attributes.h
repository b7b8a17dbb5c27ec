// Typed node attributes (int, float, ints, floats, string) and checked accessors whose errors
// name the node and the attribute.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "graph/base.h"

namespace graphi::graph {

using Attribute =
    std::variant<int64_t, double, std::vector<int64_t>, std::vector<double>, std::string>;

const char* attribute_type_name(const Attribute& a);  // "int", "float", "ints", "floats", "string"

class Attributes {
 public:
  void set(const std::string& name, Attribute value) { map_[name] = std::move(value); }
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  const Attribute* find(const std::string& name) const;
  const std::map<std::string, Attribute>& all() const { return map_; }
  bool operator==(const Attributes&) const = default;

 private:
  std::map<std::string, Attribute> map_;
};

// Checked reads for shape rules and kernels. `where` names the node in errors, e.g.
// "node 'lstm0/t3/gates' (MatMul)"; a missing attribute without a default or a wrong type gives
// "<where>: attribute 'axis' must be an int, got floats".
Result<int64_t> attr_int(const Attributes& a, const std::string& where, const std::string& name);
Result<int64_t> attr_int(const Attributes& a, const std::string& where, const std::string& name,
                         int64_t dflt);
Result<double> attr_float(const Attributes& a, const std::string& where, const std::string& name,
                          double dflt);
Result<std::vector<int64_t>> attr_ints(const Attributes& a, const std::string& where,
                                       const std::string& name);
Result<std::vector<int64_t>> attr_ints(const Attributes& a, const std::string& where,
                                       const std::string& name, std::vector<int64_t> dflt);
Result<std::string> attr_string(const Attributes& a, const std::string& where,
                                const std::string& name, std::string dflt);
// A list of floats (ints accepted too), or dflt when absent.
Result<std::vector<double>> attr_floats(const Attributes& a, const std::string& where,
                                        const std::string& name, std::vector<double> dflt);

}  // namespace graphi::graph
