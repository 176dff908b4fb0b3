# sgm-depth: rectified stereo pairs -> disparity / depth / point cloud (docs/SGM-DEPTH.md)
s3d_add_tool(sgm-depth
  SOURCES sgm-depth.cpp               # flags, then one library call per stage
          sgm_depth/plan.cpp          # flags -> SgmParams, encodings, the outputs of each --emit
          sgm_depth/job.cpp           # handle and write stages: match, evaluate, record; write each output
          sgm_depth/pair_input.cpp    # load stage: images, calibration, ground truth
          sgm_depth/matcher.cpp       # handle stage: SgmPipeline in input order
          sgm_depth/memory_budget.cpp # pairs that can never fit in memory: refused before allocating
          sgm_depth/outputs.cpp       # write stage: encodings and formats of each --emit
          sgm_depth/depth_folder.cpp  # camera-intrinsics.txt + depth-scale.txt beside the depth maps
          sgm_depth/eval_totals.cpp   # the summary's accuracy means
  LIBS s3d::stereo s3d::geometry s3d::io s3d::stereo_eval)
