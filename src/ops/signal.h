// Signal-processing op family (ops/signal.cpp: DFT, STFT; ops/signal_window.cpp: HannWindow,
// HammingWindow, BlackmanWindow, MelWeightMatrix).
#pragma once

namespace aicc {
class OpRegistry;

void registerWindowOps(OpRegistry& r); // ops/signal_window.cpp
} // namespace aicc
