# train: mixed precision, optimizer, step graphs, the trainer, checkpoints; parallel/ (DP, DDP).
list(APPEND FASTER_BASE_SOURCES
  src/faster/train/parallel/world.cpp
  src/faster/train/parallel/launch.cpp
  src/faster/train/schedule.cpp
  src/faster/train/training_data.cpp
  src/faster/train/archive_check.cpp
  src/faster/train/torchvision_weights.cpp
)
list(APPEND FASTER_TORCH_SOURCES
  src/faster/train/amp.cpp
  src/faster/train/sgd.cpp
  src/faster/train/options.cpp
  src/faster/train/cpu_runtime.cpp
  src/faster/train/stepper.cpp
  src/faster/train/batch_augment.cpp
  src/faster/train/torchvision_checkpoint.cpp
  src/faster/train/device_warm_up.cpp
  src/faster/train/ema.cpp
  src/faster/train/data_plan.cpp
  src/faster/train/job.cpp
  src/faster/train/trainer.cpp
  src/faster/train/resume.cpp
  src/faster/train/outputs.cpp
  src/faster/train/epoch.cpp
  src/faster/train/profile_trace.cpp
  src/faster/train/report.cpp
  src/faster/train/evaluate.cpp
  src/faster/train/checkpoint.cpp
  src/faster/train/state_dict_pickle.cpp
  src/faster/train/parallel/dist.cpp
  src/faster/train/parallel/grad_reducer.cpp
)
if(FASTER_CUDA)
  list(APPEND FASTER_TORCH_SOURCES
    src/faster/train/step_graph_cuda.cpp
    src/faster/train/parallel/dist_nccl_cuda.cpp
    src/faster/train/parallel/data_parallel_cuda.cpp)
else()
  list(APPEND FASTER_TORCH_SOURCES
    src/faster/train/step_graph_cpu.cpp
    src/faster/train/parallel/dist_nccl_none.cpp
    src/faster/train/parallel/data_parallel_cpu.cpp)
endif()
