#include "backend/tuning.h"

#include "ir/printer.h"
#include "support/error.h"
#include "support/parse.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace aicc::backend {

namespace {

std::string typeText(const Value* v) {
  if (!v) return "-";
  std::string s = formatType(v->type);
  return v->constant ? "const " + s : s;
}

std::string attrText(const Attribute& a) {
  std::ostringstream os;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, float> ||
                      std::is_same_v<T, std::string>) {
          os << x;
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                             std::is_same_v<T, std::vector<float>>) {
          os << "[";
          for (size_t i = 0; i < x.size(); ++i) os << (i ? "," : "") << x[i];
          os << "]";
        } else {
          os << "?";
        }
      },
      a.v);
  return os.str();
}

std::string nodeText(const Node& n) {
  std::string s = n.domain.empty() ? n.op : n.domain + "." + n.op;
  s += "(";
  for (size_t i = 0; i < n.inputs.size(); ++i) s += (i ? ", " : "") + typeText(n.inputs[i]);
  s += ")";
  for (const auto& [k, a] : n.attrs)
    if (k != "body") s += " " + k + "=" + attrText(a);
  return s;
}

} // namespace

std::string nodeSignature(const Node& n) {
  std::string s = nodeText(n);
  if (const Attribute* body = n.attr("body"); body && std::holds_alternative<GraphPtr>(body->v)) {
    s += " {";
    for (const auto& bn : std::get<GraphPtr>(body->v)->nodes) s += " " + nodeText(*bn) + ";";
    s += " }";
  }
  for (char& c : s)
    if (c == '\t' || c == '\n') c = ' ';
  return s;
}

TuningCache TuningCache::load(const std::string& path) {
  std::ifstream in(path);
  AICC_CHECK(in, "tuning cache '{}': cannot open", path);
  TuningCache c;
  std::string line;
  int lineNo = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.empty() || line[0] == '#') continue;
    if (!header) {
      AICC_CHECK(line == "aicc-tuning-cache 1",
                 "tuning cache '{}': line {} is not the header 'aicc-tuning-cache 1'", path,
                 lineNo);
      header = true;
      continue;
    }
    if (line.rfind("target ", 0) == 0) {
      c.target = line.substr(7);
      continue;
    }
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, '\t');) f.push_back(x);
    AICC_CHECK(f.size() >= 3, "tuning cache '{}': line {}: expected signature, choice, timings",
               path, lineNo);
    TuningRecord r;
    r.chosen = f[1];
    for (size_t i = 2; i < f.size(); ++i) {
      auto eq = f[i].rfind('=');
      AICC_CHECK(eq != std::string::npos && eq > 0, "tuning cache '{}': line {}: bad timing '{}'",
                 path, lineNo, f[i]);
      TunedTiming t;
      t.candidate = f[i].substr(0, eq);
      std::string v = f[i].substr(eq + 1);
      auto tilde = v.find('~');
      const std::string where = fmt::format("tuning cache '{}': line {}: '{}'", path, lineNo, f[i]);
      t.measuredMs = parseFloat(v.substr(0, tilde), where);
      if (tilde != std::string::npos) t.estimatedMs = parseFloat(v.substr(tilde + 1), where);
      AICC_CHECK(std::isfinite(t.measuredMs) && t.measuredMs >= 0,
                 "tuning cache '{}': line {}: bad time in '{}'", path, lineNo, f[i]);
      r.timings.push_back(t);
    }
    c.records[f[0]] = std::move(r);
  }
  AICC_CHECK(header, "tuning cache '{}': empty (no 'aicc-tuning-cache 1' header)", path);
  return c;
}

void TuningCache::save(const std::string& path) const {
  std::ofstream out(path);
  AICC_CHECK(out, "tuning cache '{}': cannot write", path);
  out << "aicc-tuning-cache 1\n";
  out << "# written by aicc tune: signature, chosen candidate, candidate=measured ms~estimated "
         "ms\n";
  out << "target " << target << "\n";
  for (const auto& [sig, r] : records) {
    out << sig << "\t" << r.chosen;
    for (const auto& t : r.timings)
      out << "\t" << t.candidate << "=" << fmt::format("{:.4g}", t.measuredMs)
          << (t.estimatedMs > 0 ? fmt::format("~{:.4g}", t.estimatedMs) : "");
    out << "\n";
  }
  AICC_CHECK(out.good(), "tuning cache '{}': write failed", path);
}

const TuningRecord* TuningCache::find(const Node& n) const {
  auto it = records.find(nodeSignature(n));
  return it == records.end() ? nullptr : &it->second;
}

std::map<std::string, double> TuningCache::calibration() const {
  std::map<std::string, std::pair<double, int>> acc; // sum of logs, count
  for (const auto& [sig, r] : records)
    for (const auto& t : r.timings)
      if (t.measuredMs > 0 && t.estimatedMs > 0) {
        auto& [s, k] = acc[t.candidate];
        s += std::log(t.measuredMs / t.estimatedMs);
        ++k;
      }
  std::map<std::string, double> out;
  for (const auto& [name, sk] : acc) out[name] = std::exp(sk.first / sk.second);
  return out;
}

} // namespace aicc::backend
