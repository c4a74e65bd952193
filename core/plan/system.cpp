// The hardware description's JSON form. Units are in the key names (GB/s, TFLOP/s, us) so that a
// file reads like a data sheet; values are stored in SI units.
#include "core/plan/system.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "core/common/bounded_json.h"
#include "core/common/error.h"
#include "core/common/shipped_file.h"

namespace parascope {

namespace {

constexpr double kGB = 1e9;
constexpr double kTFLOP = 1e12;
constexpr double kUs = 1e-6;
constexpr double kNs = 1e-9;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Reads one object's keys strictly: each read key must exist and be a non-negative number (or a
// string); finish() refuses keys nobody read.
class Fields {
 public:
  Fields(const nlohmann::json& object, std::string path, const std::string& source)
      : object_(object), path_(std::move(path)), source_(source) {
    if (!object_.is_object()) fail(path_.empty() ? "the document" : path_, "must be an object");
  }
  double number(const std::string& key, double unit) {
    const nlohmann::json& v = at(key);
    if (!v.is_number()) fail(name(key), "must be a number, not " + describeJson(v));
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < 0)
      fail(name(key), "must be a non-negative number, not " + describeJson(v));
    return x * unit;
  }
  int count(const std::string& key) {
    const nlohmann::json& v = at(key);
    if (!v.is_number_integer() || v.get<double>() < 1 || v.get<double>() > 1 << 24)
      fail(name(key), "must be a whole number from 1 to 16777216, not " + describeJson(v));
    return v.get<int>();
  }
  double positive(const std::string& key, double unit) {
    const double x = number(key, unit);
    if (x <= 0) fail(name(key), "must be greater than 0, not " + describeJson(at(key)));
    return x;
  }
  std::string text(const std::string& key, const std::set<std::string>& allowed = {}) {
    const nlohmann::json& v = at(key);
    if (!v.is_string()) fail(name(key), "must be a string, not " + describeJson(v));
    std::string s = v.get<std::string>();
    if (!allowed.empty() && allowed.count(s) == 0) {
      std::string list;
      for (const std::string& a : allowed) list += (list.empty() ? "\"" : ", \"") + a + "\"";
      fail(name(key), "must be one of " + list + ", not " + describeJson(v));
    }
    return s;
  }
  Fields object(const std::string& key) { return Fields(at(key), name(key), source_); }
  bool has(const std::string& key) const { return object_.contains(key); }
  void finish() const {
    for (const auto& [key, value] : object_.items()) {
      if (read_.count(key) == 0) fail(name(key), "is not a key of a system description");
    }
  }

 private:
  const nlohmann::json& at(const std::string& key) {
    read_.insert(key);
    if (!object_.contains(key)) fail(name(key), "is missing");
    return object_.at(key);
  }
  std::string name(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw UserError("system " + source_ + ": " + key + ": " + what);
  }

  const nlohmann::json& object_;
  std::string path_;
  const std::string& source_;
  std::set<std::string> read_;
};

MatmulRate readMatmul(Fields f) {
  MatmulRate m;
  m.peakFlops = f.positive("peak_TFLOPs", kTFLOP);
  m.backwardPeakFlops = f.positive("backward_peak_TFLOPs", kTFLOP);
  m.halfDimension = f.number("half_efficiency_dimension", 1);
  m.castSeconds = f.number("cast_ns_per_element", kNs);
  f.finish();
  return m;
}

LinkAlgorithm readAlgorithm(Fields f) {
  LinkAlgorithm a;
  a.latency = f.number("latency_us", kUs);
  a.bandwidth = f.positive("bandwidth_GBps", kGB);
  f.finish();
  return a;
}

nlohmann::ordered_json matmulJson(const MatmulRate& m) {
  nlohmann::ordered_json j;
  j["peak_TFLOPs"] = m.peakFlops / kTFLOP;
  j["backward_peak_TFLOPs"] = m.backwardPeakFlops / kTFLOP;
  j["half_efficiency_dimension"] = m.halfDimension;
  j["cast_ns_per_element"] = m.castSeconds / kNs;
  return j;
}

nlohmann::ordered_json algorithmJson(const LinkAlgorithm& a) {
  nlohmann::ordered_json j;
  j["latency_us"] = a.latency / kUs;
  j["bandwidth_GBps"] = a.bandwidth / kGB;
  return j;
}

}  // namespace

const char* linkClassKey(LinkClass c) {
  switch (c) {
    case LinkClass::InProcess: return "in_process";
    case LinkClass::Node: return "node";
    case LinkClass::Network: return "network";
  }
  return "?";
}

const MatmulRate& DeviceDescription::matmul(DType compute) const {
  if (compute == DType::BF16) return matmulBF16;
  if (compute == DType::F16) return matmulF16;
  return matmulF32;
}

SystemDescription parseSystem(const nlohmann::json& document, const std::string& source) {
  Fields top(document, "", source);
  SystemDescription s;
  s.name = top.text("name");
  Fields device = top.object("device");
  DeviceDescription& d = s.device;
  d.kind = device.text("kind", {"cpu", "gpu"});
  d.cores = device.positive("cores", 1);
  d.memoryBytes = device.positive("memory_GiB", kGiB);
  Fields matmul = device.object("matmul");
  d.matmulF32 = readMatmul(matmul.object("fp32"));
  d.matmulBF16 = readMatmul(matmul.object("bf16"));
  d.matmulF16 = readMatmul(matmul.object("fp16"));
  matmul.finish();
  d.elementwiseBandwidth = device.positive("elementwise_bandwidth_GBps", kGB);
  d.optimizerBandwidth = device.positive("optimizer_bandwidth_GBps", kGB);
  d.instructionOverhead = device.number("instruction_overhead_us", kUs);
  device.finish();
  s.devicesPerNode = top.count("devices_per_node");
  Fields links = top.object("links");
  for (int c = 0; c < kLinkClassCount; ++c) {
    Fields link = links.object(linkClassKey(static_cast<LinkClass>(c)));
    s.links[static_cast<std::size_t>(c)] = {readAlgorithm(link.object("ring")),
                                            readAlgorithm(link.object("tree"))};
    link.finish();
  }
  links.finish();
  s.stepOverhead = top.number("step_overhead_us", kUs);
  if (top.has("disk")) {
    Fields disk = top.object("disk");
    s.disk.readBandwidth = disk.positive("read_GBps", kGB);
    s.disk.writeBandwidth = disk.positive("write_GBps", kGB);
    s.disk.swapBandwidth = disk.positive("read_write_GBps", kGB);
    disk.finish();
  }
  top.finish();
  return s;
}

SystemDescription readSystem(const std::string& path) {
  const std::string text = readBoundedFile(path, kConfigJsonLimits.maxBytes, "system file");
  return parseSystem(parseBoundedJson(text, "system " + path, kConfigJsonLimits), path);
}

nlohmann::ordered_json systemToJson(const SystemDescription& s) {
  const DeviceDescription& d = s.device;
  nlohmann::ordered_json j;
  j["name"] = s.name;
  nlohmann::ordered_json device;
  device["kind"] = d.kind;
  device["cores"] = d.cores;
  device["memory_GiB"] = d.memoryBytes / kGiB;
  nlohmann::ordered_json matmul;
  matmul["fp32"] = matmulJson(d.matmulF32);
  matmul["bf16"] = matmulJson(d.matmulBF16);
  matmul["fp16"] = matmulJson(d.matmulF16);
  device["matmul"] = matmul;
  device["elementwise_bandwidth_GBps"] = d.elementwiseBandwidth / kGB;
  device["optimizer_bandwidth_GBps"] = d.optimizerBandwidth / kGB;
  device["instruction_overhead_us"] = d.instructionOverhead / kUs;
  j["device"] = device;
  j["devices_per_node"] = s.devicesPerNode;
  nlohmann::ordered_json links;
  for (int c = 0; c < kLinkClassCount; ++c) {
    const LinkDescription& l = s.links[static_cast<std::size_t>(c)];
    nlohmann::ordered_json link;
    link["ring"] = algorithmJson(l.ring);
    link["tree"] = algorithmJson(l.tree);
    links[linkClassKey(static_cast<LinkClass>(c))] = link;
  }
  j["links"] = links;
  j["step_overhead_us"] = s.stepOverhead / kUs;
  if (s.disk.described()) {
    nlohmann::ordered_json disk;
    disk["read_GBps"] = s.disk.readBandwidth / kGB;
    disk["write_GBps"] = s.disk.writeBandwidth / kGB;
    disk["read_write_GBps"] = s.disk.swapBandwidth / kGB;
    j["disk"] = disk;
  }
  return j;
}

const std::vector<std::string>& systemPresets() {
  static const std::vector<std::string> names = {"a100-80gb", "h100-80gb"};
  return names;
}

SystemDescription readSystemNamed(const std::string& name) {
  const auto& presets = systemPresets();
  if (std::find(presets.begin(), presets.end(), name) != presets.end())
    return readSystem(shippedFile("resources/systems/" + name + ".json"));
  std::error_code ec;
  if (!std::filesystem::is_regular_file(name, ec)) {
    std::string list;
    for (const std::string& p : presets) list += (list.empty() ? "" : ", ") + p;
    throw UserError("system '" + name + "' is neither a preset nor a description file; valid: " +
                    list + ", or a JSON file in the schema of docs/planner.md");
  }
  return readSystem(name);
}

}  // namespace parascope
