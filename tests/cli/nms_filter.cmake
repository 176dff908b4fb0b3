# nms_filter tests
