#include "ir/dtype.h"
#include <gtest/gtest.h>
TEST(DType, Names) { EXPECT_EQ(aicc::dtypeName(aicc::DType::F32), "f32"); }
