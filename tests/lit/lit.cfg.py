# lit configuration for aicc's FileCheck tests.
#   lit -sv tests/lit --param aicc=build/aicc [--param filecheck=/path/to/FileCheck]
# %aicc is the aicc binary (param `aicc`, else $AICC, else build/aicc next to the sources).
# FileCheck is found from param `filecheck`, $FILECHECK, PATH, or /usr/lib/llvm-14/bin.
import os
import shutil

import lit.formats

config.name = "aicc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".aicc"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)

src_root = os.path.dirname(os.path.dirname(config.test_source_root))
aicc = lit_config.params.get("aicc") or os.environ.get("AICC") or os.path.join(src_root, "build", "aicc")
if not os.path.exists(aicc):
    lit_config.fatal(f"aicc binary not found at '{aicc}' (pass --param aicc=PATH)")
config.substitutions.append(("%aicc", os.path.abspath(aicc)))
config.substitutions.append(("%shared", os.path.join(os.path.dirname(src_root), "shared")))

filecheck = (lit_config.params.get("filecheck") or os.environ.get("FILECHECK")
             or shutil.which("FileCheck") or "/usr/lib/llvm-14/bin/FileCheck")
if not os.path.exists(filecheck):
    lit_config.fatal(f"FileCheck not found (looked at '{filecheck}'; pass --param filecheck=PATH)")
config.environment["PATH"] = os.pathsep.join(
    [os.path.dirname(os.path.abspath(filecheck)), os.environ.get("PATH", "")])

if os.path.exists(os.path.join(os.path.dirname(src_root), "shared", "models", "mnist-8", "model.onnx")):
    config.available_features.add("shared-models")

# CPU features for tests of ISA-specific kernels (REQUIRES: avx512bf16); lit reports the others
# as UNSUPPORTED.
try:
    with open("/proc/cpuinfo") as f:
        flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
except OSError:
    flags = []
if "avx512_bf16" in flags and os.environ.get("AICC_KERNEL_ISA", "") in ("", "avx512bf16"):
    config.available_features.add("avx512bf16")
