// The seq tasks that run a body of their own (rt::Plan::bodies: whole artifacts of symbolic input
// sizes, runtime/artifact_seq.cpp compiles them): SequenceMap once per item, a Loop once per
// iteration. Internal to rt/sequence.cpp, which dispatches to them, and its helpers.
#pragma once

#include "rt/sequence.h"

namespace aicc::rt {

// SequenceMap: the body run once per item of the sequence inputs (all of one length; a tensor
// input is every item's, the enclosing graph's values passed whole), each result appended to
// its sequence.
void runMap(const SeqTask& t, const std::string& node, const std::vector<std::byte*>& bound,
            const std::vector<int64_t>& symbols, Artifact& body);
// A Loop: the body run while the iterations stay under the trip count and the condition holds,
// its carried values (sequences shared, tensors copied out of its arena) fed back in.
void runLoop(const SeqTask& t, const std::string& node, const std::vector<std::byte*>& bound,
             const std::vector<int64_t>& symbols, Artifact& body);

// (rt/sequence.cpp) The sequence a bound slot holds (an error naming the node when it holds
// none), and a new value for one.
const Sequence& seqAt(std::byte* p, const std::string& node);
void setSeq(std::byte* p, Sequence s);

} // namespace aicc::rt
