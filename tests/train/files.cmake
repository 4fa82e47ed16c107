# tests/train
list(APPEND FASTER_BASE_TEST_SOURCES train/world_test.cpp train/schedule_test.cpp)
list(APPEND FASTER_TORCH_TEST_SOURCES train/amp_sgd_test.cpp train/train_test.cpp train/ddp_test.cpp
     train/checkpoint_test.cpp train/image_train_test.cpp train/speedrun_test.cpp
     train/outputs_test.cpp train/torchvision_recipe_test.cpp)
