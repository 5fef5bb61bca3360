// aicc autodiff: appends the backward graph of a scalar loss and writes a standard ONNX model
// returning the loss and grad_<tensor> for every requested tensor.
#include "commands.h"

#include "autodiff/autodiff.h"
#include "frontend/onnx/onnx_exporter.h"

#include <iostream>

namespace aicc::cli {

int autodiffCommand(const AutodiffArgs& a) {
  ImportedModel im = loadModel(a.model, parseDims(a.dims));
  AutodiffOptions opts;
  opts.loss = a.loss;
  opts.wrt = a.wrt;
  opts.keepForwardOutputs = a.keepOutputs;
  AutodiffResult r = differentiate(im.model, opts);
  exportOnnxFile(im.model, a.output);
  std::cout << fmt::format("{}: loss '{}', {} gradients ({} backward nodes)\n", a.output, a.loss, r.gradNames.size(),
                           r.backwardNodes);
  return 0;
}

} // namespace aicc::cli
