// The variants of a compiled folder (rt::Plan::variants: whole artifacts of the same inputs and
// outputs in DIR/variants/K, tried in order before the folder's own plan):
//   - --specialize INPUT=D0,D1,...: a fixed-size compile, taken when a run's inputs have
//     exactly those sizes (faster kernels chosen for them);
//   - size classes: where a condition on the sizes changes over the symbols' ranges
//     (passes/size_predicates.h), each piece of the range compiled on its own, where it is a
//     constant again and its If folds. A class whose compile finds another such condition is
//     split again, so every class is compiled with all of them folded. The folder's own plan,
//     compiled over the whole ranges, runs the sizes no class took (the If on its reference
//     kernels at the run's sizes).
#include "commands.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace aicc::cli {

namespace {

// At most this many size classes per model (each is a whole artifact: code, weights, arena).
constexpr size_t kMaxSizeClasses = 16;

// a with symbol `name` narrowed to lo..hi (a fixed size when lo == hi).
CompileArgs narrowed(const CompileArgs& a, const std::string& name, int64_t lo, int64_t hi) {
  CompileArgs c = a;
  std::erase_if(c.dims, [&](const std::string& d) { return d.rfind(name + "=", 0) == 0; });
  c.dims.push_back(lo == hi ? fmt::format("{}={}", name, lo)
                            : fmt::format("{}={}..{}", name, lo, hi));
  return c;
}

} // namespace

std::vector<std::string> compileVariants(const CompileArgs& a,
                                         const std::optional<SizeSplit>& split) {
  std::vector<std::string> out;
  if (a.specializes.empty() && !split) return out;
  AICC_CHECK(!a.staticRuntime, "--specialize is for compiled folders (not --static-runtime)");
  std::filesystem::remove_all(std::filesystem::path(a.outputDir) / "variants");
  // Compiles v into the next variants/K; returns that folder (written unless v split further).
  auto compileNext = [&](CompileArgs v) {
    v.specializes.clear();
    v.reportHtml.clear();
    v.quiet = true;
    const std::string dir = "variants/" + std::to_string(out.size());
    v.outputDir = (std::filesystem::path(a.outputDir) / dir).string();
    compileCommand(v);
    return dir;
  };
  for (const std::string& s : a.specializes) {
    CompileArgs v = a;
    v.variantOf = s;
    v.shapes.push_back(s);
    out.push_back(compileNext(v));
    if (!a.quiet)
      std::cout << fmt::format("variant {}: {} (fixed sizes; runs when the inputs are these)\n",
                               out.back(), s);
  }
  if (!split) return out;
  // The size classes, depth first: a piece whose compile finds another changing condition is
  // replaced by its pieces.
  struct Piece {
    CompileArgs args;
    std::string by; // the Ifs whose conditions cut it out
  };
  std::vector<Piece> todo;
  auto cut = [&](const Piece& from, const SizeSplit& s) {
    std::vector<Piece> pieces;
    for (const auto& [lo, hi] : s.pieces)
      pieces.push_back({narrowed(from.args, s.symbol, lo, hi),
                        from.by + (from.by.empty() ? "" : ", ") + s.node});
    todo.insert(todo.begin(), pieces.begin(), pieces.end());
  };
  cut({a, ""}, *split);
  for (size_t classes = 0; !todo.empty();) {
    Piece p = todo.front();
    todo.erase(todo.begin());
    std::string dims; // the --dim entries the splits narrowed (a piece is never a whole range)
    for (const std::string& d : p.args.dims)
      if (std::find(a.dims.begin(), a.dims.end(), d) == a.dims.end())
        dims += (dims.empty() ? "" : " ") + d;
    if (classes == kMaxSizeClasses) {
      std::cerr << fmt::format("aicc: warning: more than {} size classes; {} and the rest run on "
                               "the plan for the whole ranges\n",
                               kMaxSizeClasses, dims);
      break;
    }
    std::optional<SizeSplit> further;
    p.args.furtherSplit = &further;
    std::string dir;
    try {
      dir = compileNext(p.args);
    } catch (const Error& e) { // the plan for the whole ranges runs these sizes
      std::filesystem::remove_all(std::filesystem::path(a.outputDir) / "variants" /
                                  std::to_string(out.size()));
      const std::string why = e.what();
      std::cerr << fmt::format("aicc: note: size class {} not compiled (the plan for the whole "
                               "ranges runs these sizes): {}{}\n",
                               dims, why.substr(0, 240), why.size() > 240 ? "..." : "");
      continue;
    }
    if (further) { // (nothing written)
      cut(p, *further);
      continue;
    }
    out.push_back(dir);
    ++classes;
    if (!a.quiet)
      std::cout << fmt::format("size class {}: {} (where the conditions of {} are constants)\n",
                               dir, dims, p.by);
  }
  return out;
}

} // namespace aicc::cli
