// ThinNet: output shapes, parameter counts and names (those of the Python reference).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "faster/core/error.h"
#include "faster/models/thinnet.h"

namespace faster::models {
namespace {

int64_t count(ThinNet& m) {
  int64_t n = 0;
  for (const auto& p : m->parameters()) n += p.numel();
  return n;
}

// Parameters of the default ThinNet (blocks 3,3,2; filters 32,64,128), counted by hand:
//   convs: c_in*32*9 + 3*(32*32*9) + 32*64*9 + 3*(64*64*9) + 64*128*9 + 2*(128*128*9)
//        = 288*c_in + 27648 + 18432 + 110592 + 73728 + 294912
//   BatchNorm (weight+bias): 4*32*2 + 4*64*2 + 3*128*2 = 1536;  fc: 128*4*10 + 10 = 5130.
int64_t expected_params(int c_in) {
  return 288 * c_in + 525312 + 1536 + 5130;
}

TEST(ThinNet, ShapesAndParameterCountFor1x28x28) {
  ThinNet m(ThinNetOptions{});
  EXPECT_EQ(m->options().conv_layers(), 11);
  auto y = m->forward(torch::randn({4, 1, 28, 28}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{4, 10}));
  EXPECT_EQ(count(m), expected_params(1));
  EXPECT_EQ(count(m), 532266);
}

TEST(ThinNet, ShapesAndParameterCountFor3x32x32) {
  ThinNetOptions o;
  o.in_channels = 3;
  ThinNet m(o);
  auto y = m->forward(torch::randn({2, 3, 32, 32}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 10}));
  EXPECT_EQ(count(m), expected_params(3));
  // The feature map before pooling: 32 - 2*11 = 10.
}

TEST(ThinNet, ParameterNamesMatchTheReference) {
  ThinNet m(ThinNetOptions{});
  std::vector<std::string> names;
  for (const auto& p : m->named_parameters()) names.push_back(p.key());
  ASSERT_EQ(names.size(),
            11u * 3 + 2);  // conv weight, bn weight, bn bias per block; fc weight+bias
  EXPECT_EQ(names[0], "features.0.0.weight");
  EXPECT_EQ(names[1], "features.0.2.weight");
  EXPECT_EQ(names[2], "features.0.2.bias");
  EXPECT_EQ(names[30], "features.10.0.weight");
  EXPECT_EQ(names[33], "fc.weight");
  std::vector<std::string> buffers;
  for (const auto& b : m->named_buffers()) buffers.push_back(b.key());
  EXPECT_EQ(buffers[0], "features.0.2.running_mean");
  EXPECT_EQ(buffers[1], "features.0.2.running_var");
  EXPECT_EQ(buffers[2], "features.0.2.num_batches_tracked");
}

TEST(ThinNet, NineLayerVariantAndInputLimits) {
  ThinNetOptions o;
  o.blocks = {2, 2, 2};
  EXPECT_EQ(o.conv_layers(), 9);
  EXPECT_EQ(o.min_input_size(), 19);
  ThinNet m(o);
  EXPECT_EQ(m->forward(torch::randn({2, 1, 19, 19})).sizes(), (std::vector<int64_t>{2, 10}));
  EXPECT_THROW(parse_int_list("3,x", "--blocks"), Error);
  EXPECT_THROW(parse_int_list("", "--blocks"), Error);
  EXPECT_EQ(parse_int_list("1,0,2", "--blocks"), (std::vector<int>{1, 0, 2}));
  o.blocks = {1, 1};
  EXPECT_THROW(ThinNet{o}, Error);
}

}  // namespace
}  // namespace faster::models
