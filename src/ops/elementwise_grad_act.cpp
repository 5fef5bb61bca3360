// Gradient rules of the activation functions: Relu LeakyRelu PRelu Elu Selu Celu Sigmoid
// HardSigmoid HardSwish Softplus Softsign ThresholdedRelu Gelu (none/tanh) Mish Swish.
// At the kinks the one-sided derivative of the kernel's branch is used.
#include "ops/elementwise_grad.h"

#include <cmath>

namespace aicc::grad {

namespace {

// y = f(x) with attributes: dx = rule(b, node, x, y, dy).
using ActFn = std::function<Value*(B& b, const Node& n, Value* x, Value* y, Value* dy)>;

void act(OpRegistry& r, const char* op, ActFn fn) {
  OpBuilder(r.at(op)).grad([fn](GradCtx& c) {
    if (!c.needs(0)) return;
    B b{c};
    c.give(0, fn(b, c.node, c.in(0), c.out(0), c.doutOrZeros(0)));
  });
}

double alphaOf(const Node& n) { return n.attrFloat("alpha"); }

} // namespace

void registerActivationGrads(OpRegistry& r) {
  act(r, "Relu", [](B& b, const Node&, Value* x, Value*, Value* dy) {
    return b.where(b.greater(x, b.k(0, x)), dy, b.k(0, dy));
  });
  act(r, "ThresholdedRelu", [](B& b, const Node& n, Value* x, Value*, Value* dy) {
    return b.where(b.greater(x, b.k(alphaOf(n), x)), dy, b.k(0, dy));
  });
  act(r, "LeakyRelu", [](B& b, const Node& n, Value* x, Value*, Value* dy) {
    return b.where(b.less(x, b.k(0, x)), b.mul(dy, b.k(alphaOf(n), dy)), dy);
  });
  act(r, "Elu", [](B& b, const Node& n, Value* x, Value* y, Value* dy) { // x<0: alpha*e^x = y+alpha
    return b.where(b.less(x, b.k(0, x)), b.mul(dy, b.add(y, b.k(alphaOf(n), y))), dy);
  });
  act(r, "Selu", [](B& b, const Node& n, Value* x, Value* y, Value* dy) {
    double alpha = n.attrFloat("alpha"), gamma = n.attrFloat("gamma");
    Value* neg = b.mul(dy, b.add(y, b.k(alpha * gamma, y))); // gamma*alpha*e^x
    return b.where(b.greater(x, b.k(0, x)), b.mul(dy, b.k(gamma, dy)), neg);
  });
  act(r, "Celu", [](B& b, const Node& n, Value* x, Value*, Value* dy) {
    Value* e = b.un("Exp", b.div(x, b.k(alphaOf(n), x)));
    return b.where(b.greater(x, b.k(0, x)), dy, b.mul(dy, e));
  });
  act(r, "Sigmoid", [](B& b, const Node&, Value*, Value* y, Value* dy) {
    return b.mul(dy, b.mul(y, b.sub(b.k(1, y), y)));
  });
  act(r, "HardSigmoid", [](B& b, const Node& n, Value* x, Value*, Value* dy) {
    double alpha = n.attrFloat("alpha"), beta = n.attrFloat("beta");
    Value* t = b.add(b.mul(x, b.k(alpha, x)), b.k(beta, x));
    Value* inside = b.and_(b.greater(t, b.k(0, x)), b.less(t, b.k(1, x)));
    return b.where(inside, b.mul(dy, b.k(alpha, dy)), b.k(0, dy));
  });
  act(r, "HardSwish", [](B& b, const Node&, Value* x, Value*, Value* dy) {
    // x * clamp(x/6 + 1/2, 0, 1): 0 below -3, 1 above 3, x/3 + 1/2 between.
    Value* mid = b.mul(dy, b.add(b.div(x, b.k(3, x)), b.k(0.5, x)));
    Value* upper = b.where(b.greater(x, b.k(3, x)), dy, mid);
    return b.where(b.less(x, b.k(-3, x)), b.k(0, dy), upper);
  });
  act(r, "Softplus",
      [](B& b, const Node&, Value* x, Value*, Value* dy) { return b.mul(dy, b.un("Sigmoid", x)); });
  act(r, "Softsign", [](B& b, const Node&, Value* x, Value*, Value* dy) {
    Value* d = b.add(b.k(1, x), b.un("Abs", x));
    return b.div(dy, b.mul(d, d));
  });
  act(r, "Gelu", [](B& b, const Node& n, Value* x, Value*, Value* dy) -> Value* {
    std::string approx = n.attrString("approximate");
    if (approx == "tanh") {
      // y = x/2 (1 + tanh u), u = k (x + c x^3):
      // dy/dx = (1 + tanh u)/2 + x/2 (1 - tanh^2 u) k (1 + 3 c x^2).
      const double k = std::sqrt(2.0 / M_PI), cc = 0.044715;
      Value* x2 = b.mul(x, x);
      Value* u = b.mul(b.k(k, x), b.add(x, b.mul(b.k(cc, x), b.mul(x2, x))));
      Value* t = b.un("Tanh", u);
      Value* left = b.mul(b.k(0.5, x), b.add(b.k(1, x), t));
      Value* du = b.mul(b.k(k, x), b.add(b.k(1, x), b.mul(b.k(3 * cc, x), x2)));
      Value* right = b.mul(b.mul(b.k(0.5, x), x), b.mul(b.sub(b.k(1, x), b.mul(t, t)), du));
      return b.mul(dy, b.add(left, right));
    }
    AICC_CHECK(approx == "none",
               "Gelu: attribute 'approximate' must be \"none\" or \"tanh\", got \"{}\"", approx);
    // Phi(x) + x phi(x).
    Value* cdf =
        b.mul(b.k(0.5, x), b.add(b.k(1, x), b.un("Erf", b.mul(x, b.k(1.0 / std::sqrt(2.0), x)))));
    Value* pdf =
        b.mul(b.k(1.0 / std::sqrt(2.0 * M_PI), x), b.un("Exp", b.mul(b.k(-0.5, x), b.mul(x, x))));
    return b.mul(dy, b.add(cdf, b.mul(x, pdf)));
  });
  act(r, "Mish", [](B& b, const Node&, Value* x, Value*, Value* dy) {
    // x tanh(sp(x)): tanh(sp) + x (1 - tanh^2(sp)) sigmoid(x).
    Value* t = b.un("Tanh", b.un("Softplus", x));
    Value* d = b.mul(b.mul(x, b.sub(b.k(1, x), b.mul(t, t))), b.un("Sigmoid", x));
    return b.mul(dy, b.add(t, d));
  });
  act(r, "Swish", [](B& b, const Node& n, Value* x, Value*, Value* dy) {
    // x s(ax): s (1 + a x (1 - s)).
    Value* ax = b.mul(x, b.k(alphaOf(n), x));
    Value* s = b.un("Sigmoid", ax);
    return b.mul(dy, b.mul(s, b.add(b.k(1, x), b.mul(ax, b.sub(b.k(1, x), s)))));
  });
  OpBuilder(r.at("PRelu")).grad([](GradCtx& c) {
    B b{c};
    Value *x = c.in(0), *slope = c.in(1), *dy = c.doutOrZeros(0);
    Value* negative = b.less(x, b.k(0, x));
    if (c.needs(0)) c.give(0, b.where(negative, b.mul(dy, slope), dy));
    if (c.needs(1)) c.give(1, c.sumToShape(b.where(negative, b.mul(dy, x), b.k(0, dy)), slope));
  });
}

} // namespace aicc::grad
