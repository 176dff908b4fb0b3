# sgm-depth: rectified stereo pairs -> disparity / depth / point cloud (docs/SGM-DEPTH.md)
s3d_add_tool(sgm-depth SOURCES sgm-depth.cpp sgm_depth/datasets.cpp LIBS s3d::stereo s3d::geometry s3d::io)
