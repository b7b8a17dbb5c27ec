#include "graph/attributes.h"

namespace graphi::graph {

const char* attribute_type_name(const Attribute& a) {
  switch (a.index()) {
    case 0:
      return "int";
    case 1:
      return "float";
    case 2:
      return "ints";
    case 3:
      return "floats";
    case 4:
      return "string";
  }
  return "?";
}

const Attribute* Attributes::find(const std::string& name) const {
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : &it->second;
}

namespace {
Status wrong_type(const std::string& where, const std::string& name, const char* want,
                  const Attribute& got) {
  return Status::invalid_graph(where + ": attribute '" + name + "' must be " + want + ", got " +
                               attribute_type_name(got));
}
Status missing(const std::string& where, const std::string& name, const char* want) {
  return Status::invalid_graph(where + ": missing required attribute '" + name + "' (" + want +
                               ")");
}
}  // namespace

Result<int64_t> attr_int(const Attributes& a, const std::string& where, const std::string& name) {
  const Attribute* v = a.find(name);
  if (!v) return missing(where, name, "an int");
  if (auto* i = std::get_if<int64_t>(v)) return *i;
  return wrong_type(where, name, "an int", *v);
}

Result<int64_t> attr_int(const Attributes& a, const std::string& where, const std::string& name,
                         int64_t dflt) {
  if (!a.has(name)) return dflt;
  return attr_int(a, where, name);
}

Result<double> attr_float(const Attributes& a, const std::string& where, const std::string& name,
                          double dflt) {
  const Attribute* v = a.find(name);
  if (!v) return dflt;
  if (auto* f = std::get_if<double>(v)) return *f;
  if (auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);  // 1 is a fine 1.0
  return wrong_type(where, name, "a float", *v);
}

Result<std::vector<int64_t>> attr_ints(const Attributes& a, const std::string& where,
                                       const std::string& name) {
  const Attribute* v = a.find(name);
  if (!v) return missing(where, name, "a list of ints");
  if (auto* l = std::get_if<std::vector<int64_t>>(v)) return *l;
  return wrong_type(where, name, "a list of ints", *v);
}

Result<std::vector<int64_t>> attr_ints(const Attributes& a, const std::string& where,
                                       const std::string& name, std::vector<int64_t> dflt) {
  if (!a.has(name)) return dflt;
  return attr_ints(a, where, name);
}

Result<std::string> attr_string(const Attributes& a, const std::string& where,
                                const std::string& name, std::string dflt) {
  const Attribute* v = a.find(name);
  if (!v) return dflt;
  if (auto* s = std::get_if<std::string>(v)) return *s;
  return wrong_type(where, name, "a string", *v);
}

Result<std::vector<double>> attr_floats(const Attributes& a, const std::string& where,
                                        const std::string& name, std::vector<double> dflt) {
  const Attribute* v = a.find(name);
  if (!v) return dflt;
  if (auto* l = std::get_if<std::vector<double>>(v)) return *l;
  if (auto* l = std::get_if<std::vector<int64_t>>(v))
    return std::vector<double>(l->begin(), l->end());
  return wrong_type(where, name, "a list of floats", *v);
}

}  // namespace graphi::graph
