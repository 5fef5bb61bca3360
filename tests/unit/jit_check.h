// Shared by the JIT lowering tests: runs a graph through runtime::JitExecutable and the
// interpreter, expects every node compiled (no fallback), some task's schedule to contain
// `expect` (which lowering / kernel ran) and the outputs to match within `tol`.
#pragma once

#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/shape_inference.h"
#include "runtime/jit_executor.h"

#include <gtest/gtest.h>

namespace aicc {

// "[d0,d1,...]" as the IR text writes dims.
inline std::string dimsText(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

// 1-D tensors of type t holding v (set through setF64 / setI64).
inline Tensor tensorOf(DType t, const std::vector<double>& v) {
  Tensor x(t, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) x.setF64(int64_t(i), v[i]);
  return x;
}
inline Tensor tensorOfInts(DType t, const std::vector<int64_t>& v) {
  Tensor x(t, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) x.setI64(int64_t(i), v[i]);
  return x;
}

// A graph from IR text with its shapes inferred.
inline Model parseWithShapes(const std::string& text) {
  Model m = parseModel(text);
  inferShapes(*m.graph);
  return m;
}

inline void expectJitMatches(const Model& m, const std::vector<RValue>& in, Tolerance tol,
                             const std::string& expect) {
  auto expected = interpret(*m.graph, in);
  std::unique_ptr<runtime::JitExecutable> exe;
  ASSERT_NO_THROW(exe = std::make_unique<runtime::JitExecutable>(*m.graph));
  std::vector<RValue> got;
  ASSERT_NO_THROW(got = exe->run(in));
  const runtime::JitStats& st = exe->stats();
  std::string schedules;
  for (const auto& t : exe->tasks()) schedules += t.schedule + "\n";
  EXPECT_NE(schedules.find(expect), std::string::npos) << expect << " not in\n" << schedules;
  EXPECT_EQ(st.fallback, 0) << (st.fallbackReasons.empty() ? "" : st.fallbackReasons[0]) << "\n"
                            << printModel(m);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t k = 0; k < got.size(); ++k) {
    auto diff = compareValues(expected[k], got[k], tol);
    EXPECT_FALSE(diff) << "output " << k << ": " << *diff;
  }
}

} // namespace aicc
