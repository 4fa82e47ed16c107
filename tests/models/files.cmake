# tests/models
list(APPEND FASTER_TORCH_TEST_SOURCES models/thinnet_test.cpp models/resnet_test.cpp
     models/sync_batchnorm_test.cpp models/speednet_test.cpp)
# The fused BatchNorm + activation kernels (faster's and cuDNN's) and the max-pool kernels: compiled with CUDA, run on the GPU machine.
if(FASTER_CUDA)
  list(APPEND FASTER_TORCH_TEST_SOURCES models/norm_activation_test.cpp models/batchnorm_relu_test.cpp
       models/max_pool_test.cpp)
endif()
