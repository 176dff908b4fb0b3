# pc-sample: farthest point sampling, ball query, kNN, three-NN interpolation, voxels and rulebooks of point clouds
# (docs/PC-SAMPLE.md).
s3d_add_tool(pc-sample
  SOURCES pc-sample.cpp
          pc_sample/command.cpp      # the subcommand table; what their write stages share
          pc_sample/fps.cpp          # one file per subcommand: flags, plan, outputs, engine, compute, write
          pc_sample/neighbors.cpp    #   ball, knn
          pc_sample/interp.cpp
          pc_sample/voxel.cpp
          pc_sample/rulebook.cpp     #   .npy coordinates or a voxelised cloud in, chained layers, .npz out
          pc_sample/plan.cpp         # the flags' parsers, output paths
          pc_sample/cloud_input.cpp  # read, check, local origin
          pc_sample/job.cpp          # stages: load, compute on the run's engine (fps --batch: groups)
          pc_sample/results.cpp      # stage: the subcommand's write and the record's timings
          pc_sample/outputs.cpp      # file encodings: cloud, indices, .npy arrays
  LIBS s3d::points s3d::io)
