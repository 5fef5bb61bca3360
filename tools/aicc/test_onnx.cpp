// aicc test-onnx: runs ONNX backend-test folders. Each test runs in its own child process, so a
// crash or a hang is reported as that test's failure and never stops the run.
#include "commands.h"

#include "backend/op_select.h"
#include "backend/target.h"
#include "frontend/onnx/tensor_proto.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "runtime/artifact.h"
#include "runtime/jit_executor.h"
#include "support/parse.h"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <poll.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace aicc::cli {
namespace fs = std::filesystem;

namespace {

struct TestCase {
  std::string name;
  std::string model;
  std::vector<std::string> dataSets; // folders with input_<i>.pb / output_<i>.pb
  std::string lightOutput;           // light models: the stored output, inputs are generated
};

struct Result {
  std::string status; // pass | fail | unsupported
  std::string reason;
  double seconds = 0;
  // --engine jit / artifact: "compiled" when every node ran compiled code, else "N fallbacks
  // (first: why)" (nodes on the reference interpreter's kernels, If branches interpreted); ""
  // otherwise.
  std::string compiled;
};

void collect(const fs::path& dir, std::vector<TestCase>& out) {
  if (fs::exists(dir / "model.onnx")) {
    TestCase t{dir.filename().string(), (dir / "model.onnx").string(), {}, {}};
    std::vector<std::string> sets;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
        sets.push_back(e.path().string());
    std::sort(sets.begin(), sets.end());
    t.dataSets = sets;
    out.push_back(t);
    return;
  }
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  for (const auto& p : entries) {
    if (fs::is_directory(p)) collect(p, out);
    else if (p.extension() == ".onnx") {
      fs::path expected = p.parent_path() / (p.stem().string() + "_output_0.pb");
      if (fs::exists(expected)) out.push_back({p.stem().string(), p.string(), {}, expected.string()});
    }
  }
}

// Light models: each float input is arange(n).reshape(shape) / n, unknown dims set to 1.
std::vector<RValue> lightInputs(const Graph& g) {
  std::vector<RValue> ins;
  for (const Value* v : g.inputs) {
    AICC_CHECK(v->type.isTensor() && v->type.shape, "input '{}' has no shape", v->name);
    Dims d;
    for (const Dim& x : *v->type.shape) d.push_back(x.isStatic() ? x.value : 1);
    Tensor t(v->type.dtype, d);
    for (int64_t i = 0; i < t.numel(); ++i) t.setF64(i, static_cast<double>(static_cast<float>(i) / static_cast<float>(t.numel())));
    ins.push_back(RValue::of(t));
  }
  return ins;
}

// Per-test tolerance overrides, one line each: "test_name [rtol=X] [atol=Y] # reason". ONNX's
// defaults (rtol 1e-3, atol 1e-7) apply to every other test.
std::map<std::string, Tolerance> readTolerances(const std::string& path) {
  std::map<std::string, Tolerance> out;
  if (path.empty()) return out;
  std::ifstream f(path);
  AICC_CHECK(f.good(), "cannot read '{}'", path);
  for (std::string line; std::getline(f, line);) {
    auto hash = line.find('#');
    std::istringstream ss(line.substr(0, hash));
    std::string name, kv;
    if (!(ss >> name)) continue;
    AICC_CHECK(hash != std::string::npos, "{}: '{}' has no reason", path, name);
    Tolerance t;
    while (ss >> kv) {
      if (kv.rfind("rtol=", 0) == 0)
        t.rtol = parseFloat(kv.substr(5), path + ": " + name);
      else if (kv.rfind("atol=", 0) == 0)
        t.atol = parseFloat(kv.substr(5), path + ": " + name);
      else fail("{}: unknown setting '{}'", path, kv);
    }
    out[name] = t;
  }
  return out;
}

Result runTest(const TestCase& tc, int optLevel, Tolerance tol, const std::string& engine) {
  OptArgs opt;
  opt.optLevel = optLevel;
  if (engine != "interp") opt.layoutBlock = jitLayoutBlock(); // both compile for the native target
  ImportedModel m;
  try {
    m = importOnnxFile(tc.model);
  } catch (const Error& e) {
    std::string msg = e.what();
    bool unsupported = msg.find("unsupported") != std::string::npos;
    return {unsupported ? "unsupported" : "fail", msg, 0, ""};
  }
  RunOptions ro;
  ro.checkTypes = true;
  // The engine under test: the reference interpreter, or the JIT (compiled per test), whose
  // fallbacks are counted over the test's runs.
  int64_t fallbacks = 0;
  std::string firstFallback;
  auto execute = [&](const Graph& g, const std::vector<RValue>& in) {
    if (engine == "artifact") { // as `aicc compile` (native target) + `aicc run FOLDER`
      const Target target = nativeTarget();
      loop::LowerOptions lo = backend::lowerOptionsFor(target);
      lo.chooseCandidate = backend::candidateChooser(target, {}, true);
      runtime::ArtifactSpec spec = runtime::buildArtifact(g, lo);
      fallbacks += int64_t(spec.fallbacks.size() + spec.failBranches.size());
      if (firstFallback.empty() && !spec.fallbacks.empty()) firstFallback = spec.fallbacks[0];
      if (firstFallback.empty() && !spec.failBranches.empty()) firstFallback = spec.failBranches[0];
      static int artifacts = 0; // (this test's process: one folder per data set)
      const fs::path dir =
          fs::temp_directory_path() / fmt::format("aicc-test-onnx-{}-{}", getpid(), artifacts++);
      struct Remove { // the folder goes whatever happens
        fs::path d;
        ~Remove() { fs::remove_all(d); }
      } remove{dir};
      runtime::writeArtifact(spec, dir.string(), target, {});
      runtime::LoadedArtifact art(dir.string());
      return art.run(in);
    }
    if (engine != "jit") return interpret(g, in, ro);
    runtime::JitStats st;
    auto out = runtime::runJit(g, in, {}, &st);
    fallbacks += st.fallback + int64_t(st.interpretedBranches.size());
    if (firstFallback.empty() && !st.fallbackReasons.empty()) firstFallback = st.fallbackReasons[0];
    if (firstFallback.empty() && !st.interpretedBranches.empty())
      firstFallback = st.interpretedBranches[0];
    return out;
  };
  auto compiled = [&] {
    if (engine != "jit" && engine != "artifact") return std::string();
    return fallbacks == 0 ? std::string("compiled")
                          : fmt::format("{} fallback{} (first: {})", fallbacks,
                                        fallbacks == 1 ? "" : "s", firstFallback);
  };
  auto check = [&](const std::vector<RValue>& expected, const std::vector<RValue>& actual) -> std::optional<std::string> {
    if (expected.size() != actual.size())
      return fmt::format("{} outputs expected, got {}", expected.size(), actual.size());
    for (size_t i = 0; i < expected.size(); ++i)
      if (auto mm = compareValues(expected[i], actual[i], tol))
        return fmt::format("output {} ('{}'): {}", i, m.model.graph->outputs[i]->name, *mm);
    return std::nullopt;
  };
  try {
    if (!tc.lightOutput.empty()) {
      optimize(m.model, opt);
      auto outs = execute(*m.model.graph, lightInputs(*m.model.graph));
      std::vector<RValue> expected{readValueFile(tc.lightOutput, m.model.graph->outputs[0]->type)};
      if (auto mm = check(expected, outs)) return {"fail", *mm, 0, compiled()};
      return {"pass", "", 0, compiled()};
    }
    AICC_CHECK(!tc.dataSets.empty(), "no test_data_set_* folder");
    for (const auto& ds : tc.dataSets) {
      ImportedModel mi = importOnnxFile(tc.model);
      InputSpec spec;
      spec.inputsDir = ds;
      spec.generate = false;
      auto inputs = bindInputs(mi, spec);
      if (engine != "interp") specializeToInputs(mi, inputs); // compiled for these shapes
      optimize(mi.model, opt);
      auto outs = execute(*mi.model.graph, inputs);
      std::vector<RValue> expected;
      for (size_t i = 0; i < mi.model.graph->outputs.size(); ++i) {
        std::string f = fmt::format("{}/output_{}.pb", ds, i);
        if (!fs::exists(f)) break;
        expected.push_back(readValueFile(f, mi.model.graph->outputs[i]->type));
      }
      if (auto mm = check(expected, outs))
        return {"fail", fs::path(ds).filename().string() + ": " + *mm, 0, compiled()};
    }
  } catch (const Error& e) {
    std::string msg = e.what();
    return {msg.find("unsupported") != std::string::npos ? "unsupported" : "fail", msg, 0,
            compiled()};
  }
  return {"pass", "", 0, compiled()};
}

std::string oneLine(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\t') c = ' ';
  return s;
}

// The expected-failures list: one test name per line, then '#' and the reason. Every test that does
// not pass must be listed, and every listed test that was run must not pass, so the list stays
// true. A reason starting "random:" marks a test whose expected output is one draw of a random
// generator (Bernoulli): it fails almost always, and a pass (the draws happened to agree) is no
// news.
int checkExpectations(const std::vector<std::string>& paths, const std::vector<TestCase>& tests,
                      const std::vector<Result>& results) {
  std::map<std::string, std::pair<std::string, std::string>> expected; // name -> reason, file
  for (const std::string& path : paths) {
    std::ifstream f(path);
    AICC_CHECK(f.good(), "cannot read '{}'", path);
    for (std::string line; std::getline(f, line);) {
      auto hash = line.find('#');
      std::string name = line.substr(0, hash);
      name.erase(name.find_last_not_of(" \t") + 1);
      name.erase(0, name.find_first_not_of(" \t"));
      if (name.empty()) continue;
      std::string reason = hash == std::string::npos ? "" : line.substr(hash + 1);
      AICC_CHECK(reason.find_first_not_of(' ') != std::string::npos, "{}: '{}' has no reason", path,
                 name);
      expected[name] = {reason, path};
    }
  }
  int bad = 0;
  for (size_t i = 0; i < tests.size(); ++i) {
    auto it = expected.find(tests[i].name);
    bool passed = results[i].status == "pass";
    if (!passed && it == expected.end()) {
      std::cout << fmt::format("UNEXPECTED {}: {}  -- {}\n", results[i].status, tests[i].name, oneLine(results[i].reason));
      ++bad;
    } else if (passed && it != expected.end() &&
               it->second.first.find("random:") == std::string::npos) {
      std::cout << fmt::format("UNEXPECTED pass: {} (remove it from {})\n", tests[i].name,
                               it->second.second);
      ++bad;
    }
  }
  std::string files;
  for (const std::string& path : paths) files += (files.empty() ? "" : ", ") + path;
  std::cout << fmt::format("expectations: {} unexpected result(s) against {}\n", bad, files);
  return bad ? 1 : 0;
}

struct Child {
  pid_t pid;
  int fd;
  size_t index;
  std::chrono::steady_clock::time_point start;
  std::string buf;
};

} // namespace

int testOnnxCommand(const TestOnnxArgs& a) {
  std::vector<TestCase> tests;
  for (const auto& d : a.dirs) {
    AICC_CHECK(fs::is_directory(d), "'{}' is not a directory", d);
    collect(d, tests);
  }
  std::map<std::string, Tolerance> tolerances = readTolerances(a.tolerances);
  std::vector<Result> results(tests.size());
  std::vector<Child> running;
  size_t next = 0, done = 0;
  int jobs = std::max(1, a.jobs);
  std::cout.setf(std::ios::unitbuf);
  auto finish = [&](Child& c, int status) {
    Result r;
    auto tab = c.buf.find('\t');
    const auto tab2 = tab == std::string::npos ? tab : c.buf.find('\t', tab + 1);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && tab2 != std::string::npos) {
      r.status = c.buf.substr(0, tab);
      r.compiled = c.buf.substr(tab + 1, tab2 - tab - 1);
      r.reason = c.buf.substr(tab2 + 1);
    } else if (WIFSIGNALED(status)) {
      r.status = "fail";
      r.reason = fmt::format("crashed (signal {})", WTERMSIG(status));
    } else {
      r.status = "fail";
      r.reason = fmt::format("test process exited with status {}", WEXITSTATUS(status));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c.start).count();
    results[c.index] = r;
    ++done;
    std::cout << fmt::format("{:<12} {}{}{}\n", r.status, tests[c.index].name,
                             r.compiled.empty() ? "" : "  [" + r.compiled + "]",
                             a.verbose && !r.reason.empty() ? "  -- " + oneLine(r.reason) : "");
  };
  while (done < tests.size()) {
    while (running.size() < static_cast<size_t>(jobs) && next < tests.size()) {
      int fds[2];
      AICC_CHECK(pipe(fds) == 0, "pipe() failed");
      pid_t pid = fork();
      AICC_CHECK(pid >= 0, "fork() failed");
      if (pid == 0) {
        close(fds[0]);
        Result r;
        try {
          auto tol = tolerances.find(tests[next].name);
          r = runTest(tests[next], a.optLevel, tol == tolerances.end() ? Tolerance{} : tol->second,
                      a.engine);
        } catch (const std::exception& e) {
          r = {"fail", std::string("internal error: ") + e.what(), 0, ""};
        }
        std::string msg = r.status + "\t" + oneLine(r.compiled) + "\t" + oneLine(r.reason);
        ssize_t off = 0;
        while (off < static_cast<ssize_t>(msg.size())) {
          ssize_t w = write(fds[1], msg.data() + off, msg.size() - static_cast<size_t>(off));
          if (w <= 0) break;
          off += w;
        }
        _exit(0);
      }
      close(fds[1]);
      running.push_back({pid, fds[0], next++, std::chrono::steady_clock::now(), {}});
    }
    std::vector<pollfd> pfds;
    for (const auto& c : running) pfds.push_back({c.fd, POLLIN, 0});
    poll(pfds.data(), pfds.size(), 100);
    for (size_t i = 0; i < running.size();) {
      Child& c = running[i];
      char buf[4096];
      bool eof = false;
      if (pfds.size() > i && (pfds[i].revents & (POLLIN | POLLHUP))) {
        ssize_t n = read(c.fd, buf, sizeof buf);
        if (n > 0) c.buf.append(buf, static_cast<size_t>(n));
        else eof = true;
      }
      double age = std::chrono::duration<double>(std::chrono::steady_clock::now() - c.start).count();
      int status = 0;
      if (!eof && age > a.timeoutSec) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, &status, 0);
        close(c.fd);
        c.buf = fmt::format("fail\ttimed out after {:.0f} s", a.timeoutSec);
        finish(c, 0);
      } else if (eof) {
        waitpid(c.pid, &status, 0);
        close(c.fd);
        finish(c, status);
      } else {
        ++i;
        continue;
      }
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      pfds.erase(pfds.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  int rc = 0;
  if (!a.expectFailures.empty()) rc = checkExpectations(a.expectFailures, tests, results);
  size_t pass = 0, fail = 0, unsup = 0;
  for (const auto& r : results) (r.status == "pass" ? pass : r.status == "fail" ? fail : unsup)++;
  std::cout << fmt::format("total: {}  pass: {}  fail: {}  unsupported: {}\n", tests.size(), pass, fail, unsup);
  if (a.engine != "interp") { // the honest count: passes that ran compiled code only
    size_t full = 0;
    for (const auto& r : results) full += r.status == "pass" && r.compiled == "compiled";
    std::cout << fmt::format("{}: {} of {} passing tests fully compiled ({:.1f}%), {} with "
                             "fallbacks to the reference kernels\n",
                             a.engine, full, pass, pass ? 100.0 * double(full) / double(pass) : 0.0,
                             pass - full);
  }
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    AICC_CHECK(f.good(), "cannot write '{}'", a.json);
    f << fmt::format("{{\n  \"total\": {}, \"pass\": {}, \"fail\": {}, \"unsupported\": {},\n  \"tests\": [\n",
                     tests.size(), pass, fail, unsup);
    for (size_t i = 0; i < tests.size(); ++i)
      f << fmt::format("    {{\"name\": \"{}\", \"status\": \"{}\", \"seconds\": {:.3f}, "
                       "\"compiled\": \"{}\", \"reason\": \"{}\"}}{}\n",
                       jsonEscape(tests[i].name), results[i].status, results[i].seconds,
                       jsonEscape(results[i].compiled), jsonEscape(results[i].reason),
                       i + 1 < tests.size() ? "," : "");
    f << "  ]\n}\n";
  }
  return rc;
}

} // namespace aicc::cli
