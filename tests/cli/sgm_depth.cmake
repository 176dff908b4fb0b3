# sgm_depth tests
