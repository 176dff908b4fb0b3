# image format tests
