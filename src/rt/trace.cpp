#include "rt/trace.h"

#include "rt/error.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

namespace aicc::trace {

std::atomic<bool> detail::enabled{false};

namespace {

struct Event {
  std::string name;
  const char* category;
  int64_t begin, end;
};

// One buffer per thread, registered once; buffers outlive their threads (a pool may be torn
// down before the trace is written).
struct Buffer {
  int tid = 0;
  std::mutex mu; // the owner appends, write() reads
  std::vector<Event> events;
};

std::mutex registryMu;
std::vector<std::shared_ptr<Buffer>>& registry() {
  static std::vector<std::shared_ptr<Buffer>> r;
  return r;
}

Buffer& threadBuffer() {
  thread_local std::shared_ptr<Buffer> b = [] {
    auto nb = std::make_shared<Buffer>();
    std::lock_guard lk(registryMu);
    nb->tid = int(registry().size()) + 1;
    registry().push_back(nb);
    return nb;
  }();
  return *b;
}

thread_local const std::string* current = nullptr;

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", int(c));
      o += buf;
      continue;
    }
    o += c;
  }
  return o;
}

} // namespace

int64_t nowMicros() {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

void start() {
  {
    std::lock_guard lk(registryMu);
    for (auto& b : registry()) {
      std::lock_guard bl(b->mu);
      b->events.clear();
    }
  }
  detail::enabled.store(true, std::memory_order_relaxed);
}

void stop() { detail::enabled.store(false, std::memory_order_relaxed); }

void record(const std::string& name, const char* category, int64_t beginUs, int64_t endUs) {
  Buffer& b = threadBuffer();
  std::lock_guard lk(b.mu);
  b.events.push_back({name, category, beginUs, endUs});
}

const std::string* currentTask() { return current; }

void TaskScope::begin() {
  threadBuffer(); // the thread that runs tasks registers first: it is "caller" in the trace
  outer_ = current;
  current = name_;
  t0_ = nowMicros();
}

void TaskScope::end() {
  record(*name_, category_, t0_, nowMicros());
  current = outer_;
}

std::map<std::string, double> totals(const char* category) {
  std::map<std::string, double> out;
  std::lock_guard lk(registryMu);
  for (auto& b : registry()) {
    std::lock_guard bl(b->mu);
    for (const Event& e : b->events)
      if (std::string_view(e.category) == category) out[e.name] += double(e.end - e.begin) * 1e-6;
  }
  return out;
}

int64_t write(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  AICC_RT_CHECK(f, "cannot write the trace '{}'", path);
  std::lock_guard lk(registryMu);
  int64_t t0 = INT64_MAX, n = 0;
  for (auto& b : registry()) {
    std::lock_guard bl(b->mu);
    for (const Event& e : b->events) t0 = std::min(t0, e.begin);
  }
  std::fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", f);
  bool first = true;
  for (auto& b : registry()) {
    std::lock_guard bl(b->mu);
    if (b->events.empty()) continue;
    const std::string name = b->tid == 1 ? "caller" : "pool thread " + std::to_string(b->tid);
    std::fprintf(f,
                 "%s{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": %d, "
                 "\"args\": {\"name\": \"%s\"}}",
                 first ? "" : ",\n", b->tid, name.c_str());
    first = false;
    for (const Event& e : b->events) {
      std::fprintf(f,
                   ",\n{\"ph\": \"X\", \"name\": \"%s\", \"cat\": \"%s\", \"pid\": 1, "
                   "\"tid\": %d, \"ts\": %lld, \"dur\": %lld}",
                   escape(e.name).c_str(), e.category, b->tid, (long long)(e.begin - t0),
                   (long long)(e.end - e.begin));
      ++n;
    }
  }
  std::fputs("\n]}\n", f);
  const bool ok = !std::ferror(f);
  AICC_RT_CHECK(std::fclose(f) == 0 && ok, "cannot write the trace '{}'", path);
  return n;
}

} // namespace aicc::trace
