# box format tests
