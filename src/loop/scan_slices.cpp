#include "loop/scan_slices.h"

#include "loop/lower_ops.h"
#include "loop/simplify.h"

namespace aicc::loop {

Func sliceCopyFunc(const std::string& name, DType t, const Dims& full, size_t axis, bool reverse,
                   bool toSlice) {
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < axis; ++k) outer *= full[k];
  for (size_t k = axis + 1; k < full.size(); ++k) inner *= full[k];
  const int64_t len = full.at(axis);
  Dims slice = full;
  slice.erase(slice.begin() + int64_t(axis));
  Func f;
  f.name = name;
  f.params = {{"full", t, full, "", toSlice ? Role::In : Role::Out},
              {"slice", t, slice, "", toSlice ? Role::Out : Role::In},
              {"index", DType::I64, {1}, "", Role::In},
              {"length", DType::I64, {1}, "", Role::In}};
  // (the index is the Repeat's iteration, below the run's length, at most the bound `len`:
  // clamped for the verifier)
  const ExprPtr n = max(min(load("length", intImm(0), DType::I64), intImm(len)), intImm(1));
  ExprPtr i = load("index", intImm(0), DType::I64);
  if (reverse) i = sub(sub(n, intImm(1)), i);
  i = max(min(i, intImm(len - 1)), intImm(0));
  const ExprPtr at = add(mul(add(mul(var("o"), n), i), intImm(inner)), var("j")),
                part = add(mul(var("o"), intImm(inner)), var("j"));
  Stmt copy = toSlice ? Stmt::store("slice", part, load("full", at, t))
                      : Stmt::store("full", at, load("slice", part, t));
  f.body = {Stmt::forLoop("o", intImm(0), intImm(outer),
                          {Stmt::forLoop("j", intImm(0), intImm(inner), {copy})})};
  f.schedule["kind"] = std::string("data");
  f.schedule["op"] = std::string(toSlice ? "scan slice in" : "scan slice out");
  simplifyFunc(f);
  return f;
}

Func tripCountCheckFunc(int64_t rows, bool withCond) {
  Func f;
  f.name = "check_trip_count";
  f.params = {{"count", DType::I64, {1}, "", Role::In}};
  if (withCond) f.params.push_back({"cond", DType::Bool, {1}, "", Role::In});
  f.params.push_back({"given", DType::I64, {1}, "", Role::Temp});
  ExprPtr runs = load("count", intImm(0), DType::I64);
  if (withCond) runs = select(load("cond", intImm(0), DType::Bool), runs, intImm(0));
  f.body = {Stmt::store("given", intImm(0), runs),
            detail::checkValuesI64("given", std::vector<int64_t>{rows})};
  f.schedule["kind"] = std::string("data");
  f.schedule["op"] = std::string("check the trip count");
  return f;
}

} // namespace aicc::loop
