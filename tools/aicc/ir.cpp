// `aicc ir FILE`: reads an ONNX model (.onnx) or the IR text form and prints the IR text.
#include "commands.h"
#include "support/file.h"

#include "frontend/onnx/onnx_importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

#include <iostream>

namespace aicc::cli {

int irCommand(const IrArgs& a) {
  Model m;
  if (a.file.size() >= 5 && a.file.compare(a.file.size() - 5, 5, ".onnx") == 0) {
    m = importOnnxFile(a.file).model;
  } else {
    std::string text = readFile(a.file);
    ParseOptions po;
    po.allowUnregistered = a.allowUnregistered;
    try {
      m = parseModel(text, po);
    } catch (const Error& e) {
      throw Error(fmt::format("{}:{}", a.file, e.what()));
    }
  }
  if (a.verify) {
    VerifyOptions vo;
    vo.allowUnregistered = a.allowUnregistered;
    verifyModel(m, vo);
  }
  PrintOptions po;
  po.printConstants = a.printConstants;
  std::cout << printModel(m, po);
  return 0;
}

} // namespace aicc::cli
