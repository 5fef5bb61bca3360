// The fuzz targets' driver in ordinary builds (no libFuzzer): runs LLVMFuzzerTestOneInput on
// every file of the given files and folders (recursively, in name order), then on N cheap
// mutations of each (bit flips, truncations, byte insertions and deletions, from a fixed seed),
// so that a regression input set doubles as a short deterministic smoke test.
//   fuzz_TARGET [-mutations=N] [-seed=S] [-timeout=SECONDS] PATH...
// A crash, a sanitizer report, an escaping exception or an input running longer than the timeout
// (default 60 s) ends the process, naming the input and writing its bytes to ./fuzz-crash-input.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <csignal>
#include <fcntl.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AICC_FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(AICC_FUZZ_ASAN)
extern "C" void __sanitizer_set_death_callback(void (*callback)(void));
#endif

namespace {

std::string current;      // the input being run, for the crash message
std::string currentBytes; // and its bytes

void say(const char* s) { (void)!write(2, s, std::strlen(s)); }

// On a crash or a timeout: name the input and write it out (async-signal-safe calls only).
void dumpCurrent(int sig) {
  say(sig == SIGALRM ? "fuzz: timeout on " : "fuzz: crash on ");
  say(current.c_str());
  say("; input written to ./fuzz-crash-input\n");
  int fd = open("fuzz-crash-input", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    (void)!write(fd, currentBytes.data(), currentBytes.size());
    close(fd);
  }
  if (sig == 0) return; // the sanitizer's death callback: it exits by itself
  signal(sig, SIG_DFL);
  raise(sig == SIGALRM ? SIGABRT : sig);
}

unsigned timeoutSeconds = 60;

void run(const std::string& bytes, const std::string& what) {
  current = what;
  currentBytes = bytes;
  alarm(timeoutSeconds);
  // A copy in its own allocation: reads past the end are caught by the sanitizers.
  std::vector<uint8_t> buf(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(buf.empty() ? nullptr : buf.data(), buf.size());
  alarm(0);
}

std::string mutate(std::string s, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : size_t(rng() % n); };
  int edits = 1 + int(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    switch (rng() % 5) {
    case 0: // flip a bit
      if (!s.empty()) s[pick(s.size())] ^= char(1u << (rng() % 8));
      break;
    case 1: // truncate
      s.resize(pick(s.size() + 1));
      break;
    case 2: // insert a byte (often an interesting one)
    {
      static const char kBytes[] = {0, 1, '\x7f', '\x80', '\xff', '-', '9', '{', '}', '%', ','};
      char c = rng() % 2 ? kBytes[pick(sizeof(kBytes))] : char(rng());
      s.insert(s.begin() + std::ptrdiff_t(pick(s.size() + 1)), c);
      break;
    }
    case 3: // delete a byte
      if (!s.empty()) s.erase(pick(s.size()), 1);
      break;
    default: // overwrite a byte with a random one
      if (!s.empty()) s[pick(s.size())] = char(rng());
      break;
    }
  }
  return s;
}

std::string readAll(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

} // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  // Under the sanitizers, their handlers report faults (with the stack), then the death callback
  // names the input; otherwise the signal handler does.
  for (int sig : {SIGALRM, SIGABRT}) signal(sig, dumpCurrent);
#if defined(__SANITIZE_ADDRESS__) || defined(AICC_FUZZ_ASAN)
  __sanitizer_set_death_callback([] { dumpCurrent(0); });
#else
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) signal(sig, dumpCurrent);
#endif
  std::set_terminate([] {
    std::fprintf(stderr, "fuzz: uncaught exception on %s\n", current.c_str());
    try {
      if (auto e = std::current_exception()) std::rethrow_exception(e);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz: %s\n", e.what());
    } catch (...) {
    }
    std::abort();
  });
  int mutations = 0;
  uint64_t seed = 1;
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("-mutations=", 0) == 0)
      mutations = std::stoi(a.substr(11));
    else if (a.rfind("-seed=", 0) == 0)
      seed = std::stoull(a.substr(6));
    else if (a.rfind("-timeout=", 0) == 0)
      timeoutSeconds = unsigned(std::stoul(a.substr(9)));
    else if (std::filesystem::is_directory(a)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(a))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (std::filesystem::is_regular_file(a)) {
      files.push_back(a);
    } else {
      std::fprintf(stderr, "fuzz: no file or folder '%s'\n", a.c_str());
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  std::mt19937_64 rng(seed);
  size_t runs = 0;
  for (const auto& f : files) {
    std::string bytes = readAll(f);
    run(bytes, f.string());
    ++runs;
    for (int m = 0; m < mutations; ++m, ++runs)
      run(mutate(bytes, rng), f.string() + " (mutation " + std::to_string(m) + ")");
  }
  std::printf("fuzz: %zu inputs from %zu files, no crash\n", runs, files.size());
  return files.empty() ? 1 : 0;
}
