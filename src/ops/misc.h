// The assorted ("misc") op family, split over several files:
//   misc.cpp        Shrink, Det, CumProd, BitCast (and registerMiscOps, which calls the others)
//   misc_vision.cpp NonMaxSuppression, AffineGrid, DeformConv
//   misc_random.cpp RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike, Bernoulli,
//                   Multinomial
//   misc_image.cpp  ImageDecoder (JPEG via libjpeg, PNG via libpng, BMP / PNM / baseline TIFF
//                   decoded here)
#pragma once

#include "ops/helpers.h"

namespace aicc {

void registerMiscVisionOps(OpRegistry& r);
void registerMiscRandomOps(OpRegistry& r);
void registerMiscImageOps(OpRegistry& r);

} // namespace aicc
