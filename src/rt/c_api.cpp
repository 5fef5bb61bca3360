// The C API of include/aicc/runtime.h over rt::Artifact: exceptions become a status and a
// thread-local message.
#include "aicc/runtime.h"

#include "rt/artifact.h"
#include "rt/error.h"
#include "rt/memory.h"
#include "rt/parallel.h"
#include "rt/sequence.h"

#include <memory>
#include <string>

struct aicc_model {
  std::unique_ptr<aicc::rt::Artifact> art;
};

using namespace aicc;

namespace {

thread_local std::string lastError;

template <typename F> int guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    lastError = e.what();
    return 1;
  }
}

const aicc::rt::TensorDesc* desc(const aicc_model* m, int i, bool input) {
  if (!m) return nullptr;
  const auto& v = input ? m->art->inputs() : m->art->outputs();
  return i >= 0 && size_t(i) < v.size() ? &v[size_t(i)] : nullptr;
}

// The symbol of dim k of d (and its range), or null.
const char* dimSymbol(const aicc_model* m, const aicc::rt::TensorDesc* d, bool input, int k,
                      int64_t* lo, int64_t* hi) {
  if (!d || k < 0 || d->symbolAt(size_t(k)) < 0) return nullptr;
  const aicc::rt::Symbol& s =
      (input ? m->art->symbols() : m->art->outputSymbols())[size_t(d->symbolAt(size_t(k)))];
  if (lo) *lo = s.lo;
  if (hi) *hi = s.hi;
  return s.name.c_str();
}

// A symbolic dim reads -1.
int dims(const aicc::rt::TensorDesc* d, int64_t* out, int max) {
  if (!d) return -1;
  for (size_t k = 0; k < d->dims.size() && int(k) < max; ++k)
    out[k] = d->symbolAt(k) < 0 ? d->dims[k] : -1;
  return int(d->dims.size());
}

// A new instance from make (a loaded Artifact), or null with the error set.
template <typename Make> aicc_model* loadWith(Make&& make) {
  auto* m = new aicc_model;
  int rc = guarded([&] { m->art = make(); });
  if (rc == 0) return m;
  delete m;
  return nullptr;
}

} // namespace

extern "C" {

const char* aicc_last_error(void) { return lastError.c_str(); }

aicc_model* aicc_model_load(const char* dir) {
  return loadWith([dir] {
    AICC_RT_CHECK(dir, "aicc_model_load: null path");
    return std::make_unique<aicc::rt::Artifact>(dir);
  });
}

aicc_model* aicc_model_load_linked(const char* weights_file) {
  return loadWith([weights_file] {
    return std::make_unique<aicc::rt::Artifact>(aicc::rt::readLinkedModel(weights_file));
  });
}

void aicc_model_free(aicc_model* m) { delete m; }

int aicc_model_num_inputs(const aicc_model* m) { return m ? int(m->art->inputs().size()) : -1; }
int aicc_model_num_outputs(const aicc_model* m) { return m ? int(m->art->outputs().size()) : -1; }

const char* aicc_model_input_name(const aicc_model* m, int i) {
  auto* d = desc(m, i, true);
  return d ? d->name.c_str() : nullptr;
}
const char* aicc_model_output_name(const aicc_model* m, int i) {
  auto* d = desc(m, i, false);
  return d ? d->name.c_str() : nullptr;
}
const char* aicc_model_input_dtype(const aicc_model* m, int i) {
  const aicc::rt::TensorDesc* d = desc(m, i, true);
  if (auto t = d ? rt::seqTypeOf(d->dynamic) : std::nullopt) return dtypeName(t->dtype).data();
  return d ? aicc::dtypeName(d->dtype).data() : nullptr; // (the names are C string literals)
}
const char* aicc_model_output_dtype(const aicc_model* m, int i) {
  const aicc::rt::TensorDesc* o = desc(m, i, false);
  if (auto t = o ? rt::seqTypeOf(o->dynamic) : std::nullopt) return dtypeName(t->dtype).data();
  aicc::rt::DynamicTensor t;
  if (o && !o->dynamic.empty()) // the last run's value, when it is a tensor
    return m->art->dynamicOutput(size_t(i), t) ? aicc::dtypeName(t.dtype).data() : nullptr;
  return o ? aicc::dtypeName(o->dtype).data() : nullptr; // (the last run's: a variant's)
}
int aicc_model_input_dims(const aicc_model* m, int i, int64_t* d, int max) {
  return dims(desc(m, i, true), d, max);
}
int aicc_model_output_dims(const aicc_model* m, int i, int64_t* d, int max) {
  const aicc::rt::TensorDesc* o = desc(m, i, false);
  aicc::rt::DynamicTensor t;
  if (o && !o->dynamic.empty()) { // the last run's value, when it is a tensor
    if (!m->art->dynamicOutput(size_t(i), t)) return -1;
    for (size_t k = 0; k < t.dims.size() && int(k) < max; ++k) d[k] = t.dims[k];
    return int(t.dims.size());
  }
  if (!o) return -1;
  const std::vector<int64_t> now = m->art->outputDims(size_t(i)); // the last run's
  for (size_t k = 0; k < now.size() && int(k) < max; ++k) d[k] = now[k];
  return int(now.size());
}
const char* aicc_model_input_dim_symbol(const aicc_model* m, int i, int k, int64_t* lo,
                                        int64_t* hi) {
  return dimSymbol(m, desc(m, i, true), true, k, lo, hi);
}
const char* aicc_model_output_dim_symbol(const aicc_model* m, int i, int k, int64_t* lo,
                                         int64_t* hi) {
  return dimSymbol(m, desc(m, i, false), false, k, lo, hi);
}

size_t aicc_model_input_bytes(const aicc_model* m, int i) {
  auto* d = desc(m, i, true);
  return d ? size_t(d->bytes()) : 0;
}

int aicc_model_set_input(aicc_model* m, int i, const void* data, size_t bytes) {
  return guarded([&] {
    AICC_RT_CHECK(m, "aicc_model_set_input: null model");
    AICC_RT_CHECK(i >= 0, "input index {} out of range", i);
    m->art->setInput(size_t(i), data, int64_t(bytes));
  });
}

int aicc_model_set_input_dims(aicc_model* m, int i, const void* data, size_t bytes,
                              const int64_t* dims, int rank) {
  return guarded([&] {
    AICC_RT_CHECK(m, "aicc_model_set_input_dims: null model");
    AICC_RT_CHECK(i >= 0, "input index {} out of range", i);
    AICC_RT_CHECK(rank >= 0 && rank <= 64 && (dims || rank == 0),
                  "aicc_model_set_input_dims: rank {} with {} dims", rank, dims ? "" : "null");
    const std::vector<int64_t> d(dims, dims + rank);
    m->art->setInput(size_t(i), data, int64_t(bytes), &d);
  });
}

int aicc_model_run(aicc_model* m) {
  return guarded([&] {
    AICC_RT_CHECK(m, "aicc_model_run: null model");
    m->art->run();
  });
}

const void* aicc_model_output(const aicc_model* m, int i, size_t* bytes) {
  const void* p = nullptr;
  guarded([&] {
    AICC_RT_CHECK(m, "aicc_model_output: null model");
    AICC_RT_CHECK(i >= 0, "output index {} out of range", i);
    const auto& outs = m->art->outputs();
    if (size_t(i) < outs.size() && !outs[size_t(i)].dynamic.empty()) { // a run-time size
      aicc::rt::DynamicTensor t;
      AICC_RT_CHECK(m->art->dynamicOutput(size_t(i), t),
                    "output '{}' is {}: not a tensor (or not computed yet), which only `aicc run` "
                    "and the Python package read",
                    outs[size_t(i)].name, outs[size_t(i)].dynamic);
      p = t.data;
      if (bytes) *bytes = size_t(t.bytes);
      return;
    }
    p = m->art->output(size_t(i));
    if (bytes) *bytes = size_t(m->art->outputBytes(size_t(i)));
  });
  return p;
}

const char* aicc_model_input_type(const aicc_model* m, int i) {
  auto* d = desc(m, i, true);
  return d && !d->dynamic.empty() ? d->dynamic.c_str() : nullptr;
}
const char* aicc_model_output_type(const aicc_model* m, int i) {
  auto* d = desc(m, i, false);
  return d && !d->dynamic.empty() ? d->dynamic.c_str() : nullptr;
}

int aicc_model_set_input_sequence(aicc_model* m, int i, int count, const void* const* data,
                                  const int64_t* const* dims, const int* ranks) {
  return guarded([&] {
    AICC_RT_CHECK(m, "aicc_model_set_input_sequence: null model");
    auto* d = desc(m, i, true);
    AICC_RT_CHECK(d, "input index {} out of range", i);
    const auto type = rt::seqTypeOf(d->dynamic);
    AICC_RT_CHECK(type, "input '{}' is not a sequence or an optional", d->name);
    AICC_RT_CHECK(count >= -1 && count <= (1 << 24) && (count <= 0 || (data && ranks)),
                  "input '{}': {} tensors (null arrays?)", d->name, count);
    auto s = std::make_shared<rt::Sequence>();
    s->kind = type->kind;
    s->dtype = type->dtype;
    s->none = count < 0;
    for (int k = 0; k < count; ++k) {
      AICC_RT_CHECK(ranks[k] >= 0 && ranks[k] <= 64 && (!ranks[k] || (dims && dims[k])),
                    "input '{}': tensor {} has rank {} (null dims?)", d->name, k, ranks[k]);
      std::vector<int64_t> dk(ranks[k] ? dims[k] : nullptr,
                              ranks[k] ? dims[k] + ranks[k] : nullptr);
      int64_t n = int64_t(dtypeSize(s->dtype));
      for (int64_t x : dk)
        AICC_RT_CHECK(x >= 0 && !__builtin_mul_overflow(n, x, &n) && n <= (int64_t(1) << 40),
                      "input '{}': tensor {} has an absurd size", d->name, k);
      AICC_RT_CHECK(data[k] || !n, "input '{}': tensor {} has no data", d->name, k);
      rt::checkItemDims(dk, *type, rt::format("input '{}'", d->name),
                        size_t(k)); // (before reading)
      s->items.push_back(rt::makeItem(s->dtype, std::move(dk), data[k],
                                      rt::format("input '{}' tensor {}", d->name, k)));
    }
    m->art->setSequenceInput(size_t(i), std::move(s));
  });
}

int aicc_model_output_sequence(const aicc_model* m, int i, int* count) {
  return guarded([&] {
    AICC_RT_CHECK(m && count, "aicc_model_output_sequence: null argument");
    const auto s = i >= 0 ? m->art->sequenceOutput(size_t(i)) : nullptr;
    AICC_RT_CHECK(s, "output {} is not a sequence or an optional (or not computed yet)", i);
    *count = s->none ? -1 : int(s->items.size());
  });
}

int aicc_model_output_item(const aicc_model* m, int i, int k, const void** data, size_t* bytes,
                           int64_t* dims, int max_rank) {
  int rank = -1;
  guarded([&] {
    AICC_RT_CHECK(m, "aicc_model_output_item: null model");
    const auto s = i >= 0 ? m->art->sequenceOutput(size_t(i)) : nullptr;
    AICC_RT_CHECK(s, "output {} is not a sequence or an optional (or not computed yet)", i);
    AICC_RT_CHECK(k >= 0 && size_t(k) < s->items.size(), "output {}: no tensor {} (it has {})", i,
                  k, s->items.size());
    const rt::SeqItem& item = s->items[size_t(k)];
    if (data) *data = item.data.get();
    if (bytes) *bytes = size_t(item.bytes);
    for (size_t j = 0; dims && j < item.dims.size() && int(j) < max_rank; ++j)
      dims[j] = item.dims[j];
    rank = int(item.dims.size());
  });
  return rank;
}

void aicc_set_num_threads(int n) { aicc::runtime::setNumThreads(n); }

void aicc_set_max_memory(size_t bytes) { aicc::setMemoryBudget(int64_t(bytes)); }

} // extern "C"
