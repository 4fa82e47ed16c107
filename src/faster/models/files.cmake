# models: ThinNet (the seed's model).
list(APPEND FASTER_TORCH_SOURCES src/faster/models/thinnet.cpp src/faster/models/sync_batchnorm.cpp)
