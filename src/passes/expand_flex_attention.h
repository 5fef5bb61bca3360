// expand-flex-attention: ai.onnx.preview FlexAttention (f32, f16, bf16; static 4-D shapes) replaced
// by the ops of its definition (ops/attention_flex.cpp), the way ONNX's function body spells it:
//   Q' = Q * sqrt(scale),  K' = repeat_heads(K) * sqrt(scale)   (GQA: each kv head Hq/Hkv times)
//   scores = score_mod(Q' K'^T),  probs = prob_mod(Softmax(scores, axis -1)),
//   Y = probs repeat_heads(V)
// with the score_mod / prob_mod graphs inlined (their input replaced by the scores or the
// probabilities). The backend then compiles it like any attention written out (the recognize
// pass may fold it into Attention), where FlexAttention itself had no lowering.
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether some FlexAttention was expanded.
bool expandFlexAttention(Model& m);

} // namespace aicc
