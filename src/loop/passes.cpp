#include "loop/passes.h"

#include "loop/printer.h"
#include "loop/simplify.h"
#include "loop/verifier.h"
#include "support/parse.h"

#include <set>

namespace aicc {

std::string IrTraits<loop::Module>::print(const loop::Module& m) { return loop::printModule(m); }
void IrTraits<loop::Module>::verify(const loop::Module& m) { loop::verify(m); }

namespace loop {

namespace {

// A copy of `body` with `v` replaced by `e` and its top-level lets renamed (so copies can sit
// in one block).
Block instantiate(const Block& body, const std::string& v, const ExprPtr& e, int64_t copyIndex,
                  NameGen& names) {
  Block copy = body;
  substitute(copy, v, e);
  for (size_t k = 0; k < copy.size(); ++k) {
    if (copy[k].kind != StmtKind::Let) continue;
    std::string old = copy[k].name;
    std::string nw = names.fresh(old + "_" + std::to_string(copyIndex));
    ExprPtr nv = var(nw, copy[k].value->type);
    copy[k].name = nw;
    Block rest(copy.begin() + static_cast<std::ptrdiff_t>(k) + 1, copy.end());
    substitute(rest, old, nv);
    std::copy(rest.begin(), rest.end(), copy.begin() + static_cast<std::ptrdiff_t>(k) + 1);
  }
  return copy;
}

bool unrollBlock(Block& b, NameGen& names) {
  bool changed = false;
  Block out;
  for (auto& s : b) {
    changed |= unrollBlock(s.body, names);
    changed |= unrollBlock(s.orelse, names);
    auto lo = s.kind == StmtKind::For ? asInt(s.lo) : std::nullopt;
    auto hi = s.kind == StmtKind::For ? asInt(s.hi) : std::nullopt;
    if (s.kind != StmtKind::For || s.loop != LoopKind::Unroll || !lo || !hi) {
      out.push_back(std::move(s));
      continue;
    }
    int64_t trip = std::max<int64_t>(0, *hi - *lo), u = s.factor;
    if (trip <= u) {
      for (int64_t k = 0; k < trip; ++k)
        for (auto& x : instantiate(s.body, s.name, intImm(*lo + k), k, names))
          out.push_back(std::move(x));
      changed = true;
      continue;
    }
    if (trip % u != 0) {
      out.push_back(std::move(s));
      continue;
    }
    std::string outer = names.fresh(s.name + "_o");
    Block body;
    for (int64_t k = 0; k < u; ++k) {
      ExprPtr idx = add(add(mul(var(outer), intImm(u)), intImm(k)), intImm(*lo));
      for (auto& x : instantiate(s.body, s.name, simplifyExpr(idx), k, names))
        body.push_back(std::move(x));
    }
    out.push_back(Stmt::forLoop(outer, intImm(0), intImm(trip / u), std::move(body)));
    changed = true;
  }
  b = std::move(out);
  return changed;
}

bool splitBlock(Block& b, const std::string& v, int64_t factor, NameGen& names) {
  for (auto& s : b) {
    if (s.kind == StmtKind::For && s.name == v) {
      auto lo = asInt(s.lo), hi = asInt(s.hi);
      AICC_CHECK(lo && hi, "split: loop {} has non-constant bounds", varName(v));
      int64_t trip = std::max<int64_t>(0, *hi - *lo);
      std::string o = names.fresh(v + "_o"), i = names.fresh(v + "_i");
      ExprPtr idx = simplifyExpr(add(add(mul(var(o), intImm(factor)), var(i)), intImm(*lo)));
      Block body = std::move(s.body);
      if (trip % factor != 0) {
        // A partial last block: bind the old variable and guard the body with it.
        Block guarded;
        guarded.push_back(Stmt::let(v, idx));
        guarded.push_back(Stmt::ifThen(cmp(Op::Lt, var(v), intImm(*hi)), std::move(body)));
        body = std::move(guarded);
      } else {
        substitute(body, v, idx);
      }
      LoopKind outerKind = s.loop == LoopKind::Parallel ? LoopKind::Parallel : LoopKind::Serial;
      LoopKind innerKind = s.loop == LoopKind::Parallel ? LoopKind::Serial : s.loop;
      int64_t innerFactor = innerKind == LoopKind::Serial ? 1 : s.factor;
      Block inner;
      inner.push_back(
          Stmt::forLoop(i, intImm(0), intImm(factor), std::move(body), innerKind, innerFactor));
      s = Stmt::forLoop(o, intImm(0), intImm((trip + factor - 1) / factor), std::move(inner),
                        outerKind);
      return true;
    }
    if (splitBlock(s.body, v, factor, names) || splitBlock(s.orelse, v, factor, names)) return true;
  }
  return false;
}

} // namespace

bool unrollLoops(Func& f) {
  NameGen names(f);
  return unrollBlock(f.body, names);
}

bool splitLoop(Func& f, const std::string& var, int64_t factor) {
  AICC_CHECK(factor >= 1, "split: factor must be >= 1, got {}", factor);
  NameGen names(f);
  return splitBlock(f.body, var, factor, names);
}

const std::vector<LoopPassInfo>& loopPasses() {
  static const std::vector<LoopPassInfo> k = {
      {"simplify", "index-arithmetic simplification and statement cleanup, to a fixed point"},
      {"unroll", "unroll unroll(U) loops with constant bounds (fully, or by U when U divides the "
                 "trip count)"},
      {"split=VAR:N", "split the loop over %VAR into blocks of N (schedule transformation)"},
  };
  return k;
}

LoopPass makeLoopPass(const std::string& name) {
  LoopPass p;
  p.name = name;
  if (name == "simplify") {
    p.run = [](Module& m) { return simplifyModule(m); };
  } else if (name == "unroll") {
    p.run = [](Module& m) {
      bool any = false;
      for (auto& f : m.funcs) any |= unrollLoops(f);
      return any;
    };
  } else if (name.rfind("split=", 0) == 0) {
    std::string spec = name.substr(6);
    auto colon = spec.find(':');
    AICC_CHECK(colon != std::string::npos, "pass '{}': expected split=VAR:N", name);
    std::string v = spec.substr(0, colon);
    const int64_t n = parseInt(spec.substr(colon + 1), fmt::format("pass '{}': N", name), 1);
    p.run = [v, n](Module& m) {
      bool any = false;
      for (auto& f : m.funcs) any |= splitLoop(f, v, n);
      return any;
    };
  } else {
    std::vector<std::string> known;
    for (const auto& i : loopPasses()) known.push_back(i.name);
    fail("unknown loop pass '{}' (known: {})", name, fmt::join(known, ", "));
  }
  return p;
}

std::vector<LoopPass> defaultLoopPipeline() { return {makeLoopPass("simplify")}; }

} // namespace loop
} // namespace aicc
