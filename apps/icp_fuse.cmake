# icp-fuse: KinectFusion-style tracking and TSDF fusion of depth sequences (docs/ICP-FUSE.md).
s3d_add_tool(icp-fuse
  SOURCES icp-fuse.cpp
          icp_fuse/plan.cpp  # flags -> FusionParams, output folder and files
          icp_fuse/job.cpp   # stages: list the sequence, track with a read-ahead, write and evaluate
          icp_fuse/evo_report.cpp  # evo's APE / RPE blocks and results archive
  LIBS s3d::fusion s3d::fusion_features s3d::fusion_files s3d::io)
