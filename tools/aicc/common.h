// Shared pieces of the CLI subcommands.
#pragma once

#include "frontend/onnx/inputs.h"
#include "ops/op_def.h"
#include "runtime/artifact.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace aicc::cli {

// Loads a model from ONNX (.onnx) or the IR text form (anything else).
ImportedModel loadModel(const std::string& path, const std::map<std::string, int64_t>& dims = {});
// ImportedModel::warnings to stderr, one "aicc: warning: ..." line each.
void printImportWarnings(const ImportedModel& im);

// Op histogram ("Conv", "com.microsoft.QLinearAdd", ...) over a graph and its subgraphs
// (the bodies of aicc.Fused nodes are not counted: a fused group is one node).
std::map<std::string, int64_t> opHistogram(const Graph& g);

// The symbolic dims of g's inputs bound to the sizes of the given inputs ("N" -> 4). A name given
// to dims of different sizes is a hint, as for ONNX Runtime: warned about once, left out of the
// map and listed in *conflicting.
std::map<std::string, int64_t> dimsFromInputs(const Graph& g, const std::vector<RValue>& inputs,
                                              std::set<std::string>* conflicting = nullptr);
// Fixes m's symbolic input dims to those of `inputs` and re-infers shapes: engines that compile
// for static shapes (the JIT) specialize to the inputs of the run.
void specializeToInputs(ImportedModel& m, const std::vector<RValue>& inputs);

// An `aicc compile --emit so` folder (holds model.plan).
bool isArtifactDir(const std::string& path);
Type typeOf(const runtime::TensorDesc& d, const std::vector<rt::Symbol>& symbols);
// Inputs for a loaded artifact, by the rules of bindInputs (input_<i>.pb, NAME=FILE, generated).
// Inputs of a compiled folder (generated ones: symbolic dims from `dims`, --dim).
std::vector<RValue> bindArtifactInputs(const runtime::LoadedArtifact& art, const InputSpec& spec,
                                       const std::map<std::string, int64_t>& dims = {});

// s escaped for a JSON string body (quotes, backslashes, control characters as \uXXXX).
std::string jsonEscape(const std::string& s);

// Fixes whole input shapes from "NAME=D0,D1,..." strings (`--shape`, for dims the model leaves
// unnamed): the rank must match, static dims must agree, a symbolic dim takes the same size in
// every input that names it. Re-infers shapes.
void applyShapes(ImportedModel& m, const std::vector<std::string>& specs);

// Parses "NAME=VALUE" strings into a dims map.
// --dim NAME=VALUE specs (ranges skipped), and NAME=LO..HI ranges (aicc compile: the symbol stays
// symbolic, planned for HI).
std::map<std::string, int64_t> parseDims(const std::vector<std::string>& specs);
std::vector<rt::Symbol> parseDimRanges(const std::vector<std::string>& specs);

// One-line summary of a value: "f32[1,10] = [0.1, 0.2, ...]".
std::string summarize(const RValue& v, size_t maxElems = 8);

} // namespace aicc::cli
