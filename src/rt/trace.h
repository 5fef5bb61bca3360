// Execution traces in the Chrome trace-event format (`aicc bench --trace FILE`; open the file in
// ui.perfetto.dev or chrome://tracing): one complete ("X") event per task of a run on the thread
// that ran it, and one per chunk a pool worker ran, named after the task it belongs to.
// Recording is off unless start() was called: then a Scope costs one relaxed atomic load.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

namespace aicc::trace {

namespace detail {
extern std::atomic<bool> enabled;
}
inline bool on() { return detail::enabled.load(std::memory_order_relaxed); }

void start(); // clears what was recorded and turns recording on
void stop();
// Writes every thread's events ({"traceEvents": [...]}, times in microseconds); the number of
// events written.
int64_t write(const std::string& path);

// Seconds per event name over every thread's events of `category` (a profile from the trace).
std::map<std::string, double> totals(const char* category);

int64_t nowMicros();
void record(const std::string& name, const char* category, int64_t beginUs, int64_t endUs);

// The name of the task this thread is running (for the pool chunks it hands out), or null.
const std::string* currentTask();

// Records [construction, destruction) as `name` when tracing is on; sets currentTask() meanwhile.
class TaskScope {
public:
  TaskScope(const std::string& name, const char* category)
      : name_(on() ? &name : nullptr), category_(category) {
    if (name_) begin();
  }
  ~TaskScope() {
    if (name_) end();
  }
  TaskScope(const TaskScope&) = delete;
  TaskScope& operator=(const TaskScope&) = delete;

private:
  void begin();
  void end();
  const std::string* name_;
  const char* category_;
  const std::string* outer_ = nullptr;
  int64_t t0_ = 0;
};

} // namespace aicc::trace
