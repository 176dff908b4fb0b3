# pc-sample: farthest point sampling, ball query, kNN and three-NN interpolation of point-cloud files
# (docs/PC-SAMPLE.md).
s3d_add_tool(pc-sample
  SOURCES pc-sample.cpp
          pc_sample/plan.cpp         # flags -> library parameters, output paths
          pc_sample/cloud_input.cpp  # read, check, local origin
          pc_sample/job.cpp          # stages: load, compute on the run's engine
          pc_sample/results.cpp      # stage: write the outputs and the record
          pc_sample/outputs.cpp      # file encodings: cloud, indices, .npy arrays
          pc_sample/rulebooks.cpp    # rulebook: .npy coordinates in, chained layers, .npz out
  LIBS s3d::points s3d::io)
