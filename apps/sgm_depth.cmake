# sgm-depth
