// The terminate handler of the deployable runtime (libaicc_rt.so and aicc-run, linked with
// -static-libstdc++). libstdc++'s default, __gnu_cxx::__verbose_terminate_handler, demangles the
// uncaught exception's type name, which links the C++ demangler into the library: ~40 KB of a
// runtime held under 1 MB (ctest runtime_library). Defining the handler here keeps that archive
// member (and the demangler) out; the runtime's own errors never reach it (the C API returns
// them), so what it reports is a broken invariant.
#include <cstdio>
#include <cstdlib>
#include <exception>

namespace __gnu_cxx {
void __verbose_terminate_handler() {
  std::fputs("aicc runtime: terminate called (an exception escaped; aborting)\n", stderr);
  std::abort();
}
} // namespace __gnu_cxx
