# SGM benchmarks: owned by the stereo work
