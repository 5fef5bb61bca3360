// The pass manager and its instrumentation, shared by every IR level (graph IR now, loop IR
// next): an IR type plugs in through IrTraits<IR> (name, print, verify).
//
// Instrumentation (PassInstrumentation):
//   - print the IR after every pass, after passes that changed it, or before/after named passes;
//   - time every pass;
//   - stop after the N-th pass run (bisecting a bad pipeline);
//   - run the verifier after every pass (always on in tests);
//   - when a pass throws or leaves invalid IR, write a reproducer file holding the IR as it was
//     before the failing pass, and name it in the error.
// Passes report honestly whether they changed the IR. A group of passes may run to a fixed point.
#pragma once

#include "support/error.h"

#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <string>
#include <vector>

namespace aicc {

template <typename IR> struct IrTraits; // static std::string print(const IR&); static void verify(const IR&);

struct PassInstrumentation {
  bool printAfterAll = false;
  bool printAfterChange = false;
  std::set<std::string> printBefore, printAfter;
  bool timing = false;
  int64_t stopAfter = -1; // stop after this many pass runs (-1: never)
  bool verifyEach = true;
  std::string reproducerPath; // where to write the IR before a failing pass ("" = none)
  std::ostream* out = &std::cerr;
};

// One pass run, for reports (--stats-json, -time-passes).
struct PassRecord {
  std::string name;
  double ms = 0;
  bool changed = false;
};

template <typename IR> struct Pass {
  std::string name;
  std::function<bool(IR&)> run; // returns whether it changed the IR
  // A group: runs `children` in order, repeated until none changes (fixpoint) or once.
  std::vector<Pass> children;
  bool fixpoint = false;
  int maxIterations = 16;

  static Pass group(std::string n, std::vector<Pass> c, bool toFixpoint) {
    Pass p;
    p.name = std::move(n);
    p.children = std::move(c);
    p.fixpoint = toFixpoint;
    return p;
  }
};

template <typename IR> class PassManager {
public:
  explicit PassManager(PassInstrumentation inst = {}) : inst_(std::move(inst)) {}

  void add(Pass<IR> p) { passes_.push_back(std::move(p)); }
  const std::vector<PassRecord>& records() const { return records_; }
  bool stopped() const { return stopped_; }

  // Runs the pipeline; returns whether anything changed.
  bool run(IR& ir) {
    if (inst_.verifyEach) verifyOrFail(ir, "the input", "");
    bool changed = false;
    for (auto& p : passes_) {
      if (stopped_) break;
      changed |= runOne(p, ir);
    }
    return changed;
  }

private:
  bool runOne(Pass<IR>& p, IR& ir) {
    if (!p.children.empty()) {
      bool any = false;
      for (int it = 0; it < (p.fixpoint ? p.maxIterations : 1); ++it) {
        bool round = false;
        for (auto& c : p.children) {
          if (stopped_) return any;
          round |= runOne(c, ir);
        }
        any |= round;
        if (!round) break;
      }
      return any;
    }
    if (inst_.stopAfter >= 0 && static_cast<int64_t>(records_.size()) >= inst_.stopAfter) {
      stopped_ = true;
      return false;
    }
    if (inst_.printBefore.count(p.name))
      *inst_.out << "// -----// IR before " << p.name << " //----- //\n" << IrTraits<IR>::print(ir);
    std::string before = inst_.reproducerPath.empty() ? "" : IrTraits<IR>::print(ir);
    auto t0 = std::chrono::steady_clock::now();
    bool changed = false;
    try {
      changed = p.run(ir);
    } catch (const Error& e) {
      throw Error(fmt::format("pass '{}' failed: {}{}", p.name, e.what(), writeReproducer(before)));
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    records_.push_back({p.name, ms, changed});
    if (inst_.timing) *inst_.out << fmt::format("// pass {:<28} {:9.3f} ms{}\n", p.name, ms, changed ? "  (changed)" : "");
    if (inst_.verifyEach) verifyOrFail(ir, "pass '" + p.name + "'", before);
    if (inst_.printAfterAll || inst_.printAfter.count(p.name) || (inst_.printAfterChange && changed))
      *inst_.out << "// -----// IR after " << p.name << (changed ? "" : " (no change)") << " //----- //\n"
                 << IrTraits<IR>::print(ir);
    return changed;
  }

  void verifyOrFail(const IR& ir, const std::string& who, const std::string& before) {
    try {
      IrTraits<IR>::verify(ir);
    } catch (const Error& e) {
      throw Error(fmt::format("{} produced invalid IR: {}{}", who, e.what(), writeReproducer(before)));
    }
  }

  std::string writeReproducer(const std::string& before) {
    if (inst_.reproducerPath.empty() || before.empty()) return "";
    std::ofstream f(inst_.reproducerPath);
    f << before;
    return f.good() ? fmt::format(" (reproducer: IR before the pass written to {})", inst_.reproducerPath) : "";
  }

  PassInstrumentation inst_;
  std::vector<Pass<IR>> passes_;
  std::vector<PassRecord> records_;
  bool stopped_ = false;
};

} // namespace aicc
