// Measured operator selection: a tuning cache of candidate timings keyed by node signature and
// target, written by `aicc tune` (runtime/tune.h) and read by `aicc compile --tuning-cache` and
// the JIT (backend::candidateChooser), where a measured choice overrides the cost model.
//
// File format (text, one record per line, tab-separated, '#' lines are comments):
//   aicc-tuning-cache 1
//   target <formatTarget(t)>
//   <signature> \t <chosen candidate> \t <candidate>=<measured ms>[~<estimated ms>] ...
// The signature names the op (an aicc.Fused node by its head op and chain) with the dtypes and
// shapes of its inputs, whether each is a constant, and its attributes, so equal nodes of one
// model and of different models share a record. The cost model learns from the same records:
// calibration() is the geometric mean of measured / estimated per candidate, and the chooser
// scales estimates by it for nodes without a record.
#pragma once

#include "backend/target.h"
#include "ir/graph.h"

#include <map>
#include <string>
#include <vector>

namespace aicc::backend {

struct TunedTiming {
  std::string candidate;
  double measuredMs = 0;
  double estimatedMs = 0; // the cost model's estimate when measured (0 if unknown)
};

struct TuningRecord {
  std::string chosen; // the fastest measured candidate
  std::vector<TunedTiming> timings;
};

class TuningCache {
public:
  std::string target; // formatTarget of the machine that measured
  std::map<std::string, TuningRecord> records;

  // Throws aicc::Error naming the file and line on a malformed cache.
  static TuningCache load(const std::string& path);
  void save(const std::string& path) const;
  const TuningRecord* find(const Node& n) const;
  // Per candidate: geometric mean of measured / estimated over all records (1 when unknown).
  std::map<std::string, double> calibration() const;
};

// The key of a node's record (see the file comment).
std::string nodeSignature(const Node& n);

} // namespace aicc::backend
