# NMS benchmarks: owned by the detection work
