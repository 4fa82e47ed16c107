# models: the registry; ThinNet (the seed's model); torchvision's ResNet-18/34/50; SpeedNet (the
# speedrun recipe's); with CUDA, the fused BatchNorm + activation kernels (ThinNet's ReLU ->
# BatchNorm, SpeedNet's BatchNorm -> GELU) and SpeedNet's max-pool kernels.
list(APPEND FASTER_TORCH_SOURCES src/faster/models/registry.cpp src/faster/models/thinnet.cpp
     src/faster/models/resnet.cpp src/faster/models/sync_batchnorm.cpp
     src/faster/models/speednet.cpp)
# CUDA kernels: built into the library with CUDA, compiled for a check only without (CMakeLists.txt).
list(APPEND FASTER_CUDA_SOURCES src/faster/models/norm_activation.cu src/faster/models/max_pool.cu)
if(FASTER_CUDA)
  list(APPEND FASTER_TORCH_SOURCES src/faster/models/norm_activation_cuda.cpp
                                   src/faster/models/batchnorm_relu_cudnn.cpp
                                   src/faster/models/max_pool_cuda.cpp)
else()
  list(APPEND FASTER_TORCH_SOURCES src/faster/models/norm_activation_none.cpp
                                   src/faster/models/batchnorm_relu_none.cpp
                                   src/faster/models/max_pool_none.cpp)
endif()
